#!/usr/bin/env python3
"""The short answer `vramtrace run` prints on stderr when the job ends.

  run_summary_check.py VRAMTRACE TRAINER WORK_DIR

On the simulated trainer: the answer is the first of the two lines, before
the "trace in" line; its peak is what `report --json` says, its flags
are the report's flags (each kind once), and it ends with the next command
(`vramtrace report DIR`, `vramtrace oom DIR` after an out-of-memory, the
directory quoted for the shell when it needs it). A job with no CUDA calls
gets no answer."""
import json
import os
import shlex
import shutil
import subprocess
import sys

vt, trainer, work = sys.argv[1:4]
failures = []


def fail(msg):
    failures.append(msg)
    print("FAIL:", msg)


def run(out, *job, capacity="4G"):
    env = dict(os.environ, VT_SIM_CAPACITY=capacity, VRAMTRACE_RELAY="1")
    done = subprocess.run([vt, "run", "--simulated-driver", "-o", out, "--", *job],
                          capture_output=True, text=True, env=env, timeout=120)
    lines = [l for l in done.stderr.splitlines() if l.startswith("vramtrace: ")]
    return done, lines


def report(out):
    done = subprocess.run([vt, "report", "--json", out], capture_output=True, text=True, check=True)
    return json.loads(done.stdout)


shutil.rmtree(work, ignore_errors=True)
os.makedirs(work)

# the demo's job: whole dataset, prefetch 2 (two flags), in a folder with a space
demo = os.path.join(work, "demo trace")
done, lines = run(demo, trainer, "--dataset", "whole", "--dataset-bytes", "1G", "--batch-bytes", "8M",
                  "--layers", "3", "--layer-bytes", "64M", "--optimizer", "adam", "--prefetch", "2",
                  "--steps", "20", "--markers")
print("\n".join(lines))
if done.returncode != 0 or len(lines) != 2 or not lines[1].startswith("vramtrace: trace in "):
    fail(f"demo: exit {done.returncode}, want the answer then the trace line: {lines}")
else:
    answer, r = lines[0], report(demo)
    dev = r["devices"][0]
    pct = round(100 * dev["peak_bytes"] / dev["total_bytes"])
    if not answer.startswith("vramtrace: peak GPU 0 1.77 GiB") or f"({pct}% of 4.00 GiB)" not in answer:
        fail(f"demo: the peak is not the report's ({dev['peak_bytes']} B, {pct}%): {answer}")
    kinds = list(dict.fromkeys(f["kind"] for f in r["flags"]))
    if f"; flags: {', '.join(kinds)};" not in answer or not kinds:
        fail(f"demo: flags {kinds} not in the answer: {answer}")
    if not answer.endswith(f"; next: vramtrace report {shlex.quote(os.path.realpath(demo))}"):
        fail(f"demo: the next command is not `vramtrace report '<dir>'`: {answer}")
    if "out of memory" in answer:
        fail(f"demo: an out-of-memory that did not happen: {answer}")

# out of memory: 1 GiB of device, a 1000 MiB dataset
oom = os.path.join(work, "oom")
done, lines = run(oom, trainer, "--dataset", "whole", "--dataset-bytes", "1000M", "--steps", "10",
                  capacity="1G")
print("\n".join(lines))
answer = lines[0] if lines else ""
if done.returncode != 1 or "; out of memory on GPU 0 at " not in answer or "(4.00 MiB asked)" not in answer \
        or not answer.endswith(f"; next: vramtrace oom {os.path.realpath(oom)}"):
    fail(f"oom: exit {done.returncode}, answer {answer!r}")

# no CUDA calls: the trace line only
done, lines = run(os.path.join(work, "none"), "true")
if done.returncode != 0 or any("peak" in l or "next:" in l for l in lines):
    fail(f"no CUDA calls: {lines}")

print("FAILED" if failures else "run summary: ok")
sys.exit(1 if failures else 0)
