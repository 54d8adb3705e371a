"""End-to-end Python frames under `vramtrace run` on the simulated driver.

usage: e2e_check.py SCENARIO VRAMTRACE PYTRACE SIMDRIVER_DIR WORKDIR [PYTHON]
SCENARIO: frames | killed | fork | off | native NATIVE_CLIENT
        | embed EMBED_CLIENT LIBPYTHON
Runs the job, reads the trace with pytrace (analyzer/pystack.c over the real
log reader) and checks sites and frames against the "# SITE:" markers in
e2e_job.py / e2e_data.py. Exits non-zero on the first failed check."""
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
JOB = os.path.join(HERE, "e2e_job.py")
DATA = os.path.join(HERE, "e2e_data.py")
DATASET_BYTES = 8 << 20
BATCH_BYTES = 64 << 10


def fail(msg):
    print("FAIL:", msg)
    sys.exit(1)


def sites(path):
    out = {}
    with open(path) as f:
        for n, line in enumerate(f, 1):
            m = re.search(r"# SITE:(\w+)", line)
            if m:
                out[m.group(1)] = n
    return out


def env_for(simdir, extra=None):
    env = dict(os.environ)
    env["LD_LIBRARY_PATH"] = simdir + (":" + env["LD_LIBRARY_PATH"] if env.get("LD_LIBRARY_PATH") else "")
    env["VT_TEST_LIBCUDA"] = os.path.join(simdir, "libcuda.so.1")
    env.update(extra or {})
    return env


def read_trace(pytrace, trace):
    out = subprocess.run([pytrace, trace], capture_output=True, text=True)
    if out.returncode != 0:
        fail(f"pytrace failed: {out.stderr.strip()}")
    lines = [json.loads(x) for x in out.stdout.splitlines() if x.strip()]
    return [x for x in lines if "type" in x], lines[-1]["summary"]


def frames_of(ev):
    return [(os.path.realpath(f[0]), f[1], f[2]) for f in ev["python"]]


def find(events, kind, nbytes, main_tid=None, other_thread=False):
    for ev in events:
        if ev["type"] == kind and ev["bytes"] == nbytes:
            if main_tid is None or (ev["tid"] != main_tid) == other_thread:
                return ev
    fail(f"no {kind} of {nbytes} bytes in the trace")


def expect_frames(name, ev, want_prefix):
    got = frames_of(ev)
    if got[:len(want_prefix)] != want_prefix:
        fail(f"{name}: Python frames\n  got  {got}\n  want {want_prefix} (innermost first)")
    # every frame bound to an eval-loop native frame, outward order
    nidx = [f[4] for f in ev["python"]]
    if any(i < 0 or i >= ev["depth"] for i in nidx) or nidx != sorted(nidx):
        fail(f"{name}: native binding {nidx} (native depth {ev['depth']})")
    print(f"ok   {name}: {len(got)} Python frames, site {ev.get('site')}")


def expect_site(name, ev, func, path, line):
    want = f"{func} ({path}:{line})"
    if ev.get("site") != want:
        fail(f"{name}: site {ev.get('site')!r}, want {want!r}")


def header_sum(vramtrace, trace, field):
    out = subprocess.run([vramtrace, "dump", trace], capture_output=True, text=True)
    if out.returncode != 0:
        fail(f"vramtrace dump failed: {out.stderr.strip()}")
    return sum(int(v) for v in re.findall(r"(?:^| )" + field + r"=(\d+)", out.stdout, re.M))


def check_memo(vramtrace, pytrace, trace, simdir, python):
    """The stack memo under CPython, every hit checked against the unwinder:
    none differs, and each allocation keeps its own Python caller."""
    job = os.path.join(HERE, "e2e_memo_job.py")
    r = subprocess.run([vramtrace, "run", "-o", trace, "--", python, job],
                       env=env_for(simdir, {"VRAMTRACE_STACK_MEMO": "verify"}), cwd=HERE,
                       capture_output=True, text=True, timeout=60)
    if r.returncode != 0:
        fail(f"memo job failed ({r.returncode}): {r.stdout}{r.stderr}")
    verified = header_sum(vramtrace, trace, "stack_memo_verified")
    differed = header_sum(vramtrace, trace, "stack_memo_mismatches")
    if verified < 250 or differed:
        fail(f"stack memo under CPython: {verified} hits verified, {differed} differed")
    events, _ = read_trace(pytrace, trace)
    line = sites(job)
    callers = {}
    for ev in events:
        if ev["type"] != "alloc":
            continue
        frames = frames_of(ev)
        caller = [f for f in frames if f[0] == os.path.realpath(job) and f[1] in ("from_a", "from_b")]
        if not caller:
            fail(f"an allocation without its Python caller: {frames}")
        name, lineno = caller[0][1], caller[0][2]
        if lineno != line[name] or ev["bytes"] != {"from_a": 4096, "from_b": 8192}[name]:
            fail(f"{name} at line {lineno} allocated {ev['bytes']} bytes")
        callers[name] = callers.get(name, 0) + 1
    if callers != {"from_a": 200, "from_b": 100}:
        fail(f"allocations by Python caller: {callers}")
    print(f"ok   stack memo under CPython: {verified} hits checked against the unwinder, "
          f"none differed; 200 + 100 allocations each with its own Python caller")


def run_job(vramtrace, trace, simdir, python, extra_env=None, hang=False, flags=()):
    cmd = [vramtrace, "run", "-o", trace, "--", python, JOB] + (["--hang"] if hang else [])
    cmd += list(flags)
    if not hang:
        r = subprocess.run(cmd, env=env_for(simdir, extra_env), cwd=HERE,
                           capture_output=True, text=True, timeout=60)
        if r.returncode != 0:
            fail(f"job failed ({r.returncode}): {r.stdout}{r.stderr}")
        return
    # Killed mid-run: the job prints "uploaded" after its uploads, then
    # waits; SIGKILL the Python process itself (the launcher's child).
    p = subprocess.Popen(cmd, env=env_for(simdir, extra_env), cwd=HERE,
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    line = p.stdout.readline()
    if "uploaded" not in line:
        p.kill()
        fail(f"job did not reach its uploads: {line!r}")
    logs = [f for f in os.listdir(trace) if f.endswith(".log")]
    pid = int(logs[0].split(".")[1])
    os.kill(pid, signal.SIGKILL)
    p.wait(timeout=30)


def check_report_sites(pysites, trace):
    """The sites and full stacks the reports print (analyzer/sites.c through
    pystack.c): the Python site, and Python frames in place of the
    interpreter's eval-loop frames, in order."""
    out = subprocess.run([pysites, trace], capture_output=True, text=True)
    if out.returncode != 0:
        fail(f"pysites failed: {out.stderr.strip()}")
    events = [json.loads(x) for x in out.stdout.splitlines() if x.strip()]
    j, d = sites(JOB), sites(DATA)
    copy = next((e for e in events if e["type"] == "copy" and e["bytes"] == DATASET_BYTES), None)
    if copy is None:
        fail("pysites: no dataset copy")
    want_site = f"upload ({os.path.realpath(DATA)}:{d['copy']})"
    if os.path.realpath(copy["site"].split(" (")[1].split(":")[0]) != os.path.realpath(DATA) or \
            not copy["site"].startswith("upload (") or not copy["site"].endswith(f":{d['copy']})"):
        fail(f"report site {copy['site']!r}, want {want_site!r}")
    py = [line for line in copy["stack"] if line.startswith("py ")]
    want = [f"upload ({DATA}:{d['copy']})", f"load_dataset ({JOB}:{j['load_dataset']})",
            f"main ({JOB}:{j['main']})"]
    got = [line[5:] for line in py]
    norm = [re.sub(r"\((.*):(\d+)\)$", lambda m: f"({os.path.realpath(m.group(1))}:{m.group(2)})", g)
            for g in got]
    want = [re.sub(r"\((.*):(\d+)\)$", lambda m: f"({os.path.realpath(m.group(1))}:{m.group(2)})", w)
            for w in want]
    if norm[:3] != want or not py[0].startswith("py * "):
        fail(f"merged stack Python frames {got}, want {want} first, site marked")
    if copy["stack"][0].startswith("py "):
        fail("merged stack starts with a Python frame: the native frames below it are lost")
    if any("_PyEval_EvalFrameDefault" in line for line in copy["stack"]):
        fail("an eval-loop frame was not replaced by its Python frames:\n  " +
             "\n  ".join(copy["stack"]))
    print(f"ok   report site {copy['site']}; merged stack {len(copy['stack'])} lines, "
          f"{len(py)} Python frames in place of the eval loop")


def check_report(vramtrace, trace):
    """`vramtrace report --json`: the whole-dataset flag names the Python
    line that uploaded it, and the top allocation site is a Python frame."""
    out = subprocess.run([vramtrace, "report", trace, "--json"], capture_output=True, text=True)
    if out.returncode != 0:
        fail(f"report failed ({out.returncode}): {out.stderr.strip()}")
    rep = json.loads(out.stdout)
    d = sites(DATA)
    data = os.path.realpath(DATA)
    flags = [f for f in rep.get("flags", []) if f.get("kind") == "whole_dataset_upload"]
    want = f"upload ({data}:{d['copy']})"
    if not flags or os.path.realpath(flags[0]["site"].split(" (")[1].split(":")[0]) != data \
            or not flags[0]["site"].startswith("upload (") \
            or not flags[0]["site"].endswith(f":{d['copy']})"):
        fail(f"report: whole-dataset flag {flags}, want site {want!r}")
    top = rep.get("sites", [{}])[0].get("site", "")
    if not top.startswith("alloc (") or not top.endswith(f":{d['alloc']})"):
        fail(f"report: top site {top!r}, want alloc (…e2e_data.py:{d['alloc']})")
    print(f"ok   report: dataset flag from {flags[0]['site']}, top site {top}")


def check_folded(vramtrace, trace):
    """`vramtrace export --format folded`: the flame graph runs through the
    Python frames, outermost first, in place of the eval loop."""
    out = os.path.join(os.path.dirname(trace), "stacks.folded")
    r = subprocess.run([vramtrace, "export", trace, "--format", "folded", "-o", out],
                       capture_output=True, text=True)
    if r.returncode != 0:
        fail(f"export failed ({r.returncode}): {r.stderr.strip()}")
    lines = open(out).read().splitlines()
    want = ";<module>;main;load_dataset;upload;"
    hit = [line for line in lines if want in line and line.endswith(str(DATASET_BYTES))]
    if not hit or "_PyEval_EvalFrameDefault" in hit[0]:
        fail(f"folded stacks: no dataset line through {want!r} without the eval loop:\n" +
             "\n".join(lines))
    print("ok   folded export: dataset bytes under <module>;main;load_dataset;upload")


def check_frames(events, main_tid):
    j, d = sites(JOB), sites(DATA)
    job, data = os.path.realpath(JOB), os.path.realpath(DATA)
    module_line = next(n for n, l in enumerate(open(JOB), 1) if l.strip() == "main()")
    # 1. the dataset upload on the main thread
    copy = find(events, "copy", DATASET_BYTES)
    expect_site("dataset upload site", copy, "upload", data, d["copy"])
    expect_frames("dataset upload stack", copy, [
        (data, "upload", d["copy"]), (job, "load_dataset", j["load_dataset"]),
        (job, "main", j["main"]), (job, "<module>", module_line)])
    alloc = find(events, "alloc", DATASET_BYTES)
    expect_site("dataset alloc site", alloc, "alloc", data, d["alloc"])
    # 2. the same calls from a second thread (ctypes released the GIL)
    tcopy = find(events, "copy", BATCH_BYTES, main_tid, other_thread=True)
    expect_site("thread upload site", tcopy, "upload", data, d["copy"])
    expect_frames("thread upload stack", tcopy, [
        (data, "upload", d["copy"]), (job, "worker", j["worker"])])
    outer = frames_of(tcopy)[-1]
    if not outer[0].endswith("threading.py"):
        fail(f"thread stack should end in threading.py, ends {outer}")


RUNS = []


def main():
    scenario, vramtrace, pytrace, simdir, work = sys.argv[1:6]
    python = sys.argv[6] if len(sys.argv) > 6 and scenario != "native" else sys.executable
    # one directory per run: ctest runs the interpreters' tests in parallel
    trace = os.path.join(tempfile.mkdtemp(prefix=f"pyframes_{scenario}_", dir=work), "trace")
    RUNS.append(os.path.dirname(trace))  # removed when every check passed
    if scenario == "native":
        client = sys.argv[6]
        r = subprocess.run([vramtrace, "run", "-o", trace, "--", client],
                           env=env_for(simdir), capture_output=True, text=True, timeout=60)
        if r.returncode != 0:
            fail(f"native client failed: {r.stdout}{r.stderr}")
        events, summary = read_trace(pytrace, trace)
        if not events:
            fail("native client recorded no events")
        if any(ev["python"] for ev in events) or summary["pystr"] or summary["notes"]:
            fail(f"native process has Python frames/strings/notes: {summary}")
        print(f"ok   native process: {len(events)} events, no Python frames, no notes")
        return
    if scenario == "embed":
        client, libpython = sys.argv[6], sys.argv[7]
        script = os.path.join(HERE, "e2e_embedded.py")
        r = subprocess.run([vramtrace, "run", "-o", trace, "--", client, libpython, script],
                           env=env_for(simdir), capture_output=True, text=True, timeout=60)
        if r.returncode != 0:
            fail(f"embedding client failed: {r.stdout}{r.stderr}")
        events, summary = read_trace(pytrace, trace)
        allocs = [ev for ev in events if ev["type"] == "alloc"]
        if len(allocs) != 2 or allocs[0]["python"]:
            fail(f"want a native alloc then a Python one: {allocs}")
        line = sites(script)["embedded"]
        expect_site("embedded alloc site", allocs[1], "embedded_upload",
                    os.path.realpath(script), line)
        print(f"ok   embedded: CPython loaded after the first event, then frames: {allocs[1]['site']}")
        return
    if scenario == "memo":
        check_memo(vramtrace, pytrace, trace, simdir, python)
        return
    if scenario == "off":
        run_job(vramtrace, trace, simdir, python, {"VRAMTRACE_PYTHON": "0"})
        events, summary = read_trace(pytrace, trace)
        if not events or any(ev["python"] for ev in events) or summary["pystr"]:
            fail(f"VRAMTRACE_PYTHON=0 still recorded Python frames: {summary}")
        print(f"ok   VRAMTRACE_PYTHON=0: {len(events)} events, no Python frames")
        return
    run_job(vramtrace, trace, simdir, python, hang=(scenario == "killed"),
            flags=["--fork"] if scenario == "fork" else [])
    events, summary = read_trace(pytrace, trace)
    if scenario == "fork":
        # the child's log has its own strings: its frames read by name
        j, d = sites(JOB), sites(DATA)
        job, data = os.path.realpath(JOB), os.path.realpath(DATA)
        child = find(events, "copy", 2 * BATCH_BYTES)
        if child["log"] == find(events, "copy", DATASET_BYTES)["log"]:
            fail("the forked child's upload is in the parent's log")
        expect_site("forked child site", child, "upload", data, d["copy"])
        expect_frames("forked child stack", child, [
            (data, "upload", d["copy"]), (job, "forked_upload", j["child"]),
            (job, "main", j["fork"])])
    main_tid = find(events, "copy", DATASET_BYTES)["tid"]
    check_frames(events, main_tid)
    if os.environ.get("VT_PYSITES"):
        check_report_sites(os.environ["VT_PYSITES"], trace)
    if os.environ.get("VT_REPORT") and scenario == "frames":
        check_report(vramtrace, trace)
    if os.environ.get("VT_EXPORT") and scenario == "frames":
        check_folded(vramtrace, trace)
    if summary["notes"]:
        fail(f"the shim wrote {summary['notes']} note(s)")
    if scenario == "fork" and summary["logs"] != 2:
        fail(f"expected 2 process logs, got {summary}")
    if scenario == "fork":
        # the child's first call creates its log: timed apart (its set-up),
        # not sampled on the parent's interval (vt_self_after_fork)
        dump = subprocess.run([vramtrace, "dump", trace, "--json"], capture_output=True,
                              text=True, check=True).stdout
        heads = [r for r in map(json.loads, dump.splitlines()) if r.get("record") == "log"]
        if len(heads) != 2 or any(h["self_first_calls"] < 1 for h in heads):
            fail("each process's first call timed apart: " +
                 str([(h["pid"], h["self_first_calls"]) for h in heads]))
    if scenario == "killed":
        if summary["died"] != 1 or any(ev["type"] == "free" for ev in events):
            fail(f"the job was not killed mid-run: {summary}")
        print("ok   killed: the log says the process died; its frames read back")
    # names interned once per process: never more strings than distinct names
    # (each process writes its own: count distinct names per log)
    names = sum(len({n for ev in events if ev["log"] == log for f in ev["python"]
                     for n in (f[0], f[1])}) for log in {ev["log"] for ev in events})
    if summary["pystr"] > names + 2:
        fail(f"{summary['pystr']} string records for {names} distinct names")
    print(f"ok   {scenario}: {summary['pystr']} string records for {names} names")


main()
for run in RUNS:  # kept for inspection when a check failed (fail() exits)
    shutil.rmtree(run, ignore_errors=True)
