#!/usr/bin/env python3
"""The GPU check kit's runner (called by check.sh; stdlib only).

For each job of samples/frameworks/: run it once without vramtrace (the
baseline), then under `vramtrace run` in each mode, read every trace with
vtlog.py (an independent reader of format.h) and check it against the job's
own truth line. Writes summary.md, summary.json, versions.txt and
traces.tar.gz into --out; exit 0 when every hard check passed, 1 when one
failed, 2 on bad usage.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tarfile
import time

import checks
import vtlog

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
JOBS_DIR = os.path.join(REPO, "samples", "frameworks")
TRUTH, RESULT = "VRAMTRACE_TRUTH ", "VRAMTRACE_RESULT "
EXIT_NO_GPU, EXIT_NO_PACKAGE = 3, 4

# name, script + arguments, what the job must show when a GPU runs it.
# expect: exact = the truth states every count; vmm = "hard" (cuMemCreate
# must be seen) or "soft" (expected, a warning until a GPU run settles it);
# env = set for the baseline and traced runs alike; modes = only these.
# report_mode = what `vramtrace report` should infer per run mode (a warning).
EXPANDABLE = {"PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True"}
POOL_THEN_PER_TENSOR = {"default": "pool", "per-tensor": "per-tensor"}
JOBS = [
    ("driver", ["driver_ctypes.py"], {"exact": True}),
    ("torch-whole", ["torch_train.py", "--feed", "whole"], {"report_mode": POOL_THEN_PER_TENSOR}),
    ("torch-stream", ["torch_train.py", "--feed", "stream"], {"report_mode": POOL_THEN_PER_TENSOR}),
    # PyTorch's expandable segments allocate with cuMemCreate/cuMemMap: the
    # VMM path on a real driver, for certain. The caching allocator must be
    # on, so no --per-tensor run.
    ("torch-expandable", ["torch_train.py", "--feed", "whole"],
     {"vmm": "hard", "env": EXPANDABLE, "modes": ["default"], "report_mode": {"default": "pool"}}),
    # XLA allocates through VMM (seen on an H200 with jaxlib 0.11.2: one
    # cuMemCreate for its arena, one per buffer with the platform allocator)
    ("jax-whole", ["jax_train.py", "--feed", "whole"], {"vmm": "hard", "report_mode": POOL_THEN_PER_TENSOR}),
    ("jax-stream", ["jax_train.py", "--feed", "stream"], {"vmm": "hard", "report_mode": POOL_THEN_PER_TENSOR}),
    # CuPy's pool asks the driver for a block per array (rounded to 512 B) and
    # keeps freed blocks for reuse: on an H200 each of its 12 allocations
    # held one array, in both modes, and the report said per-tensor
    ("cupy", ["cupy_job.py"], {"report_mode": {"default": "per-tensor", "per-tensor": "per-tensor"}}),
    ("keras", ["keras_slices.py"], {"report_mode": POOL_THEN_PER_TENSOR}),
]
MODES = [("default", []), ("per-tensor", ["--per-tensor"])]
# What `vramtrace run --per-tensor` sets (analyzer/cmd_run.c): a baseline with
# these and no shim tells the allocator switch's effect from vramtrace's.
PER_TENSOR_ENV = {"TF_GPU_ALLOCATOR": "cuda_malloc_async", "XLA_PYTHON_CLIENT_ALLOCATOR": "platform",
                  "PYTORCH_NO_CUDA_MEMORY_CACHING": "1"}
TRACE_TAR_CAP = 14 << 20  # the device tool brings back files of at most 16 MiB


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--vramtrace", required=True, help="the vramtrace command")
    parser.add_argument("--out", required=True, help="where the summary and traces go")
    parser.add_argument("--work", required=True, help="scratch folder for the runs")
    parser.add_argument("--jobs", default="all", help="comma list of job names (default all)")
    parser.add_argument("--modes", default="default,per-tensor")
    parser.add_argument("--budget", type=float, default=420, help="seconds for all runs")
    parser.add_argument("--run-timeout", type=float, default=150, help="seconds for one run")
    parser.add_argument("--dry-run", action="store_true",
                        help="no GPU: the driver job runs on the simulated driver "
                             "(--sim-lib), the framework jobs must fail early and clean")
    parser.add_argument("--sim-lib", help="folder holding the simulated libcuda.so.1")
    parser.add_argument("--python", default=sys.executable)
    args = parser.parse_args()
    names = [j[0] for j in JOBS]
    args.jobs = names if args.jobs == "all" else args.jobs.split(",")
    bad = [j for j in args.jobs if j not in names]
    modes = [m[0] for m in MODES]
    args.modes = args.modes.split(",")
    bad += [m for m in args.modes if m not in modes]
    if bad:
        parser.error(f"unknown job or mode: {', '.join(bad)} (jobs: {', '.join(names)}; modes: {', '.join(modes)})")
    if args.dry_run and not args.sim_lib:
        parser.error("--dry-run needs --sim-lib")
    return args


class Clock:
    def __init__(self, budget):
        self.end = time.monotonic() + budget

    def left(self):
        return self.end - time.monotonic()


def run_command(argv, env, timeout, log_prefix):
    """Run argv; keep its stdout/stderr beside the trace. Returns a dict."""
    started = time.monotonic()
    try:
        proc = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=timeout)
        code, out, err = proc.returncode, proc.stdout, proc.stderr
    except subprocess.TimeoutExpired as expired:
        code = "timeout"
        out = expired.stdout.decode(errors="replace") if isinstance(expired.stdout, bytes) else (expired.stdout or "")
        err = expired.stderr.decode(errors="replace") if isinstance(expired.stderr, bytes) else (expired.stderr or "")
    seconds = time.monotonic() - started
    for suffix, text in (("stdout", out), ("stderr", err)):
        with open(f"{log_prefix}.{suffix}", "w") as f:
            f.write(text)
    return {"exit": code, "seconds": round(seconds, 1), "truth": tagged(out, TRUTH),
            "result_line": raw_line(out, RESULT), "last_error": last_line(err)}


def raw_line(text, prefix):
    lines = [l for l in text.splitlines() if l.startswith(prefix)]
    return lines[-1][len(prefix):] if lines else None


def tagged(text, prefix):
    line = raw_line(text, prefix)
    try:
        return json.loads(line) if line else None
    except ValueError:
        return None


def last_line(text):
    """The job's last message line; vramtrace's own lines (the launcher's
    summary, the shim's warnings) start with "vramtrace" and are not the job's."""
    lines = [l for l in text.splitlines() if l.strip() and not l.startswith("vramtrace")]
    return lines[-1][:300] if lines else ""


def job_env(args):
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    if args.dry_run:
        env["LD_LIBRARY_PATH"] = args.sim_lib + (":" + env["LD_LIBRARY_PATH"] if env.get("LD_LIBRARY_PATH") else "")
        env.setdefault("VT_SIM_CAPACITY", "1G")
    return env


def frameworks_env(args, name):
    """Framework jobs in a dry run see no driver at all (the GPU-less case)."""
    env = job_env(args)
    if args.dry_run and name != "driver":
        env["LD_LIBRARY_PATH"] = os.environ.get("LD_LIBRARY_PATH", "")
    return env


def report_json(vramtrace, trace, timeout):
    try:
        proc = subprocess.run([vramtrace, "report", trace, "--json", "--allocs"], capture_output=True,
                              text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return None, f"report took more than {timeout:.0f}s"
    if proc.returncode != 0:
        return None, last_line(proc.stderr) or f"exit {proc.returncode}"
    try:
        return json.loads(proc.stdout), ""
    except ValueError as error:
        return None, f"report --json is not JSON: {error}"


def traced_run(args, clock, name, argv, mode, flags, env):
    """One run under `vramtrace run`: RUN_DIR/trace is the launcher's own
    (it creates it), RUN_DIR/job.stdout|stderr are the kit's."""
    run_dir = os.path.join(args.work, "traces", f"{name}.{mode}")
    shutil.rmtree(run_dir, ignore_errors=True)
    os.makedirs(run_dir)
    trace = os.path.join(run_dir, "trace")
    command = [args.vramtrace, "run", "-o", trace, *flags, "--", *argv]
    if mode == "per-tensor":
        # the per-tensor runs allocate the most: every stack memo hit there is
        # unwound too and compared (the default runs keep the recording cost
        # a user would see)
        env = dict(env, VRAMTRACE_STACK_MEMO="verify")
    run = run_command(command, env, min(args.run_timeout, max(clock.left(), 5)),
                      os.path.join(run_dir, "job"))
    run.update(mode=mode, trace=trace, run_dir=run_dir)
    try:
        run["logs"] = vtlog.read_trace(trace) if os.path.isdir(trace) else []
        run["read_error"] = "" if run["logs"] else f"vramtrace run left no log in {trace}"
    except (OSError, vtlog.LogError) as error:
        run["logs"], run["read_error"] = [], str(error)
    run["report"], run["report_error"] = None, "not run (time budget)"
    run["run_json"] = read_json(os.path.join(trace, "run.json"))
    return run


def read_json(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def run_job(args, clock, job):
    name, script, expect = job
    argv = [args.python, os.path.join(JOBS_DIR, script[0]), *script[1:]]
    env = dict(frameworks_env(args, name), **expect.get("env", {}))
    os.makedirs(os.path.join(args.work, "baseline"), exist_ok=True)
    record = {"job": name, "argv": script, "expect": expect, "runs": []}
    base_log = os.path.join(args.work, "baseline", name)
    record["baseline"] = run_command(argv, env, min(args.run_timeout, max(clock.left(), 5)), base_log)
    code = record["baseline"]["exit"]
    if code in (EXIT_NO_GPU, EXIT_NO_PACKAGE):
        record["skipped"] = record["baseline"]["last_error"]
    elif code != 0:
        record["skipped"] = f"baseline run failed (exit {code}): {record['baseline']['last_error']}"
    # A job that cannot run still runs once under the shim: its exit code and
    # message must pass through unchanged.
    modes = [m for m in MODES if m[0] in args.modes and m[0] in expect.get("modes", [m[0]])]
    if "skipped" in record:
        modes = modes[:1]
    for mode, flags in modes:
        if clock.left() < 10:
            record.setdefault("not_run", []).append(mode)
            continue
        run = traced_run(args, clock, name, argv, mode, flags, env)
        if run["result_line"] != record["baseline"]["result_line"] and "skipped" not in record:
            # Rerun the baseline once: is the job itself bit-reproducible?
            again = run_command(argv, env, min(args.run_timeout, max(clock.left(), 5)), base_log + ".again")
            record["baseline_again"] = again
            if mode == "per-tensor":
                # The allocator switch alone (XLA's autotuner times algorithms
                # on other buffers): its own baseline, without the shim.
                run["mode_baseline"] = run_command(argv, dict(env, **PER_TENSOR_ENV),
                                                   min(args.run_timeout, max(clock.left(), 5)),
                                                   base_log + ".per-tensor")
        record["runs"].append(run)
    return record


def output_of(argv, timeout):
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
        return proc.stdout.strip() or proc.stderr.strip()
    except (OSError, subprocess.TimeoutExpired) as error:
        return f"({type(error).__name__}: {error})"


def versions(args):
    """Driver, CUDA and framework versions, each probe in its own process."""
    lines = []
    smi = shutil.which("nvidia-smi")
    if smi:
        query = output_of([smi, "--query-gpu=name,driver_version,memory.total", "--format=csv,noheader"], 60)
        lines.append(f"nvidia-smi: {query}")
        cuda = [l for l in output_of([smi], 60).splitlines() if "CUDA Version" in l]
        lines.append(f"nvidia-smi header: {cuda[0].strip(' |') if cuda else 'n/a'}")
    else:
        lines.append("nvidia-smi: not found")
    lines.extend(output_of([args.python, os.path.join(HERE, "versions_probe.py")], 120).splitlines())
    lines.append(f"python: {sys.version.split()[0]} ({args.python})")
    lines.append(f"uname: {' '.join(os.uname())}")
    return lines


def write_tar(args, records):
    """Traces and job output, in job order, until the size cap."""
    path = os.path.join(args.out, "traces.tar.gz")
    omitted = []
    with tarfile.open(path, "w:gz") as tar:
        for record in records:
            for run in record["runs"]:
                if os.path.getsize(path) > TRACE_TAR_CAP:
                    omitted.append(os.path.basename(run["run_dir"]))
                    continue
                tar.add(run["run_dir"], arcname=os.path.join("traces", os.path.basename(run["run_dir"])))
        tar.add(os.path.join(args.work, "baseline"), arcname="baseline")
    return omitted


def main():
    args = parse_args()
    os.makedirs(args.out, exist_ok=True)
    os.makedirs(args.work, exist_ok=True)
    clock = Clock(args.budget)
    version_lines = versions(args)
    with open(os.path.join(args.out, "versions.txt"), "w") as f:
        f.write("\n".join(version_lines) + "\n")
    print("\n".join(version_lines), flush=True)
    records = []
    api = vtlog.api_names(REPO)
    for job in (j for j in JOBS if j[0] in args.jobs):
        records.append(run_job(args, clock, job))
        evaluate(records[-1], args, api)
        print(checks.one_line(records[-1]), flush=True)
        write_summary(args, records, version_lines, [])  # a killed kit still leaves one
    add_reports(args, clock, records, api)
    summary = write_summary(args, records, version_lines, write_tar(args, records))
    print(summary["markdown"])
    return 0 if summary["json"]["passed"] else 1


def evaluate(record, args, api):
    try:
        record["checks"] = checks.evaluate(record, args.dry_run, api)
    except Exception as error:  # a kit bug must not hide the other jobs' results
        record["checks"] = [{"mode": "-", "checks": [checks.check(
            "kit evaluated the run", checks.FAIL, f"{type(error).__name__}: {error}")]}]


def add_reports(args, clock, records, api):
    """`vramtrace report --json` per trace while time is left (it symbolizes:
    it may be slow on large framework libraries), then the checks again."""
    for record in (r for r in records if "skipped" not in r):
        for run in record["runs"]:
            if clock.left() < 20:
                return
            run["report"], run["report_error"] = report_json(args.vramtrace, run["trace"],
                                                             min(60, clock.left() - 10))
        evaluate(record, args, api)


def write_summary(args, records, version_lines, omitted):
    summary = checks.summary(records, version_lines, args.dry_run, omitted)
    with open(os.path.join(args.out, "summary.md"), "w") as f:
        f.write(summary["markdown"])
    with open(os.path.join(args.out, "summary.json"), "w") as f:
        json.dump(summary["json"], f, indent=1, sort_keys=True)
    return summary


if __name__ == "__main__":
    sys.exit(main())
