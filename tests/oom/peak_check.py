#!/usr/bin/env python3
"""The shim's own readings of used memory (interpose/peak_sample.c), on a
simulated driver whose context holds 48 MiB back:
  - a job whose peak (256 MiB) is mid-run gets a `peak` reading of 256 MiB +
    the reservation (within 1 %), and an `exit` reading;
  - a job allocating and freeing 1 MiB 100000 times makes the shim call
    cuMemGetInfo at most a few times a second (4/s, plus first use and exit);
  - report --json's accounting_at_peak splits the peak reading: 256 MiB of
    the job's allocations, the reservation unexplained (within 1 %).
    peak_check.py VRAMTRACE PEAK_JOB SIMDRIVER_DIR WORK"""
import json
import os
import re
import shutil
import subprocess
import sys

MIB = 1 << 20
RESERVE = 48 * MIB
PEAK = 256 * MIB


def run(vt, job, sim, trace, args):
    env = dict(os.environ, LD_LIBRARY_PATH=sim, VT_SIM_CAPACITY="1G",
               VT_SIM_CONTEXT_RESERVE="48M")
    out = subprocess.run([vt, "run", "-o", trace, "--", job] + args, env=env, check=True,
                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                         timeout=100).stdout
    m = re.search(r"meminfo_calls (\d+) seconds ([\d.]+)", out)
    dump = subprocess.run([vt, "dump", trace], check=True, stdout=subprocess.PIPE,
                          text=True).stdout
    readings = [(m2.group(1), int(m2.group(3)) - int(m2.group(2)))
                for m2 in re.finditer(r"reason=(\w+) free=(\d+) total=(\d+)", dump)]
    return int(m.group(1)), float(m.group(2)), readings


def check_peak(vt, job, sim, work, fails):
    trace = os.path.join(work, "peak")
    _, _, readings = run(vt, job, sim, trace, ["peak"])
    peaks = [used for reason, used in readings if reason == "peak"]
    want = PEAK + RESERVE
    if not peaks or abs(max(peaks) - want) > want / 100:
        fails.append(f"a peak reading of {want} within 1 %, got {readings}")
    if "exit" not in [reason for reason, _ in readings]:
        fails.append(f"an exit reading, got {readings}")
    # report --json accounts for the peak reading too: the job's 256 MiB as
    # framework allocations, the reservation as unexplained (within 1 %)
    rep = json.loads(subprocess.run([vt, "report", "--json", trace], check=True,
                                    stdout=subprocess.PIPE, text=True).stdout)
    at_peak = [d for d in rep.get("accounting_at_peak", []) if d["device"] == 0]
    if not at_peak:
        fails.append(f"no accounting_at_peak for GPU 0: {rep.get('accounting_at_peak')}")
    else:
        d = at_peak[0]
        if d["reading"] != "peak" or abs(d["framework_bytes"] - PEAK) > PEAK / 100 or \
                abs(d["unexplained_bytes"] - RESERVE) > RESERVE / 100:
            fails.append(f"accounting at the peak: {d}")


def check_loop(vt, job, sim, work, fails):
    calls, seconds, readings = run(vt, job, sim, os.path.join(work, "loop"),
                                   ["loop", "100000"])
    bound = 2 + 4 * (seconds + 1)  # first use, exit, 4 a second
    if calls > bound:
        fails.append(f"at most {bound:.0f} cuMemGetInfo calls in {seconds} s, got {calls}")
    if len(readings) > bound:
        fails.append(f"at most {bound:.0f} readings, got {len(readings)}")


def main():
    vt, job, sim, work = sys.argv[1:5]
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    fails = []
    check_peak(vt, job, sim, work, fails)
    check_loop(vt, job, sim, work, fails)
    for f in fails:
        print("FAIL:", f)
    print("PASS" if not fails else f"{len(fails)} failure(s)")
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
