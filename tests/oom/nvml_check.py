#!/usr/bin/env python3
"""NVML's per-process view in the accounting (interpose/nvml_sample.c), with
the stand-in libnvidia-ml.so.1 of tests/simdriver (SIMDRIVER_DIR/nvml):
  - present (on LD_LIBRARY_PATH): the accounting job (64 MiB its own, 32 MiB
    from a library stand-in) on a simulated driver holding 304 MiB back: 48
    MiB for its context, 256 MiB for another process, which the stand-in
    lists as a real process (a `sleep` this test starts). report --json
    names that process (pid, name, bytes) at the peak and at the exit
    reading, gives this process's bytes per NVML, and leaves only the
    context unexplained; the text says "other processes on GPU 0"; every
    nvmlInit has its nvmlShutdown (descriptors given back), and NVML is
    called only beside the shim's own readings;
  - out of memory beside that process: `vramtrace oom` (text and JSON)
    names it;
  - absent: the run works, the job's /proc/self/maps has no libnvidia-ml
    after the shim's peak reading, and the loader looked for it at most
    twice in the whole run of two readings (RTLD_NOLOAD, then a load, once:
    the failure is kept).
    nvml_check.py VRAMTRACE ACCOUNTING_JOB SIMDRIVER_DIR WORK"""
import json
import os
import shutil
import subprocess
import sys

MIB = 1 << 20
CONTEXT = 48 * MIB
OTHER = 256 * MIB
fails = []


def check(cond, what):
    if not cond:
        fails.append(what)
        print("FAIL:", what)


def run_job(vt, job, trace, libpath, extra_env):
    env = dict(os.environ, LD_LIBRARY_PATH=libpath, VT_SIM_CAPACITY="1G", **extra_env)
    return subprocess.run([vt, "run", "-o", trace, "--", job, "64", "32", "free"], env=env,
                          capture_output=True, text=True, timeout=60)


def report(vt, trace, *extra):
    return subprocess.run([vt, "report", trace, *extra], check=True, capture_output=True,
                          text=True).stdout


def check_reading(what, a, other_pid, framework):
    check(a.get("nvml") is not None, f"{what}: no nvml view: {a}")
    if a.get("nvml") is None:
        return
    check(a["nvml"]["process_bytes"] == framework + 32 * MIB + CONTEXT,
          f"{what}: this process per NVML {a['nvml']['process_bytes']}")
    check(a["other_processes"] == [{"pid": other_pid, "name": "sleep", "bytes": OTHER}],
          f"{what}: other processes {a['other_processes']}")
    check(a["other_processes_bytes"] == OTHER, f"{what}: {a['other_processes_bytes']}")
    check(abs(a["unexplained_bytes"] - CONTEXT) <= CONTEXT / 100,
          f"{what}: unexplained {a['unexplained_bytes']}, the context {CONTEXT}")
    check(a["used_bytes"] == framework + 32 * MIB + CONTEXT + OTHER, f"{what}: used {a['used_bytes']}")


def check_present(vt, job, sim, work):
    trace = os.path.join(work, "present")
    calls = os.path.join(work, "nvml_calls.txt")
    other = subprocess.Popen(["sleep", "60"])
    try:
        p = run_job(vt, job, trace, ":".join([os.path.join(sim, "nvml"), sim,
                                              os.path.dirname(job)]),
                    {"VT_SIM_CONTEXT_RESERVE": str(CONTEXT + OTHER),
                     "VT_FAKE_NVML_OTHERS": f"{other.pid}:{OTHER}",
                     "VT_FAKE_NVML_LOG": calls})
    finally:
        other.kill()
        other.wait()
    check(p.returncode == 0, f"present: the job exited {p.returncode}: {p.stderr[-2000:]}")
    check("libnvidia-ml mapped: yes" in p.stdout, f"present: not loaded: {p.stdout!r}")
    rep = json.loads(report(vt, trace, "--json"))
    at_peak = [a for a in rep.get("accounting_at_peak", []) if a["device"] == 0]
    last = [a for a in rep.get("accounting", []) if a["device"] == 0]
    check(at_peak and at_peak[0]["reading"] == "peak", f"present: no peak reading: {at_peak}")
    check(last and last[0]["reading"] == "exit", f"present: no exit reading: {last}")
    if at_peak:
        check_reading("peak", at_peak[0], other.pid, 64 * MIB)
    if last:
        check_reading("exit", last[0], other.pid, 0)
    text = report(vt, trace)
    want = f"other processes on GPU 0 (pid {other.pid} sleep 256 MiB"
    check(want in text, f"present: the text lacks {want!r}:\n{text}")
    lines = open(calls).read().split() if os.path.exists(calls) else []
    check(lines.count("init") == 2 and lines.count("shutdown") == 2,
          f"present: NVML initialised {lines.count('init')} and shut down "
          f"{lines.count('shutdown')} times, want 2 and 2 (the peak and the exit reading)")


def check_oom(vt, job, sim, work):
    """The library's 64 MiB do not fit beside the other process: `vramtrace
    oom` names that process beside the device's capacity."""
    trace = os.path.join(work, "oom")
    other = subprocess.Popen(["sleep", "60"])
    try:
        env = dict(os.environ, VT_SIM_CAPACITY=str(400 * MIB),
                   VT_SIM_CONTEXT_RESERVE=str(CONTEXT + OTHER),
                   LD_LIBRARY_PATH=":".join([os.path.join(sim, "nvml"), sim,
                                             os.path.dirname(job)]),
                   VT_FAKE_NVML_OTHERS=f"{other.pid}:{OTHER}")
        p = subprocess.run([vt, "run", "-o", trace, "--", job, "64", "64"], env=env,
                           capture_output=True, text=True, timeout=60)
    finally:
        other.kill()
        other.wait()
    check(p.returncode == 1, f"oom: the job exited {p.returncode}, want 1 (out of memory)")
    text = subprocess.run([vt, "oom", trace], capture_output=True, text=True).stdout
    want = f"other processes on GPU 0: 256 MiB (pid {other.pid} sleep 256 MiB; per NVML at "
    check(want in text, f"oom: the post-mortem lacks {want!r}:\n{text}")
    rep = json.loads(subprocess.run([vt, "oom", trace, "--json"], capture_output=True,
                                    text=True).stdout)
    others = [a.get("other_processes") for a in rep.get("accounting", [])]
    check(others == [[{"pid": other.pid, "name": "sleep", "bytes": OTHER}]],
          f"oom --json: accounting's other processes {others}")


def check_absent(vt, job, sim, work):
    trace = os.path.join(work, "absent")
    p = run_job(vt, job, trace, sim + ":" + os.path.dirname(job),
                {"VT_SIM_CONTEXT_RESERVE": str(CONTEXT), "LD_DEBUG": "libs"})
    check(p.returncode == 0, f"absent: the job exited {p.returncode}: {p.stderr[-2000:]}")
    check("libnvidia-ml mapped: no" in p.stdout, f"absent: {p.stdout!r}")
    searches = p.stderr.count("find library=libnvidia-ml.so.1")
    # two readings (peak, exit); each try is two searches (RTLD_NOLOAD, a
    # load): without the kept failure there would be four
    check(1 <= searches <= 2, f"absent: the loader looked for libnvidia-ml {searches} times, "
          f"want 1 or 2 (one try in the run)")
    rep = json.loads(report(vt, trace, "--json"))
    readings = rep.get("accounting", []) + rep.get("accounting_at_peak", [])
    check(len(readings) == 2 and all("nvml" not in a for a in readings),
          f"absent: readings {[(a['reading'], 'nvml' in a) for a in readings]}")


def check_switched_off(vt, job, sim, work):
    """VRAMTRACE_NVML=0: the library is there and never loaded."""
    trace = os.path.join(work, "off")
    p = run_job(vt, job, trace, ":".join([os.path.join(sim, "nvml"), sim, os.path.dirname(job)]),
                {"VT_SIM_CONTEXT_RESERVE": str(CONTEXT), "VRAMTRACE_NVML": "0"})
    check(p.returncode == 0, f"off: the job exited {p.returncode}: {p.stderr[-2000:]}")
    check("libnvidia-ml mapped: no" in p.stdout, f"off: VRAMTRACE_NVML=0 loaded it: {p.stdout!r}")


def main():
    vt, job, sim, work = sys.argv[1:5]
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    check_present(vt, job, sim, work)
    check_oom(vt, job, sim, work)
    check_absent(vt, job, sim, work)
    check_switched_off(vt, job, sim, work)
    print("PASS" if not fails else f"{len(fails)} failure(s)")
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
