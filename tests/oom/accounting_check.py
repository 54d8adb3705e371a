#!/usr/bin/env python3
"""Accounting per device: a job allocates 64 MiB itself and has a library
stand-in named libcublasLt.so allocate 32 MiB for itself, on a simulated
driver whose context holds 48 MiB back (VT_SIM_CONTEXT_RESERVE). `report
--json` must name the library's bytes under its module, the job's under
framework allocations, and leave the reservation unexplained (within 1 %).
    accounting_check.py VRAMTRACE ACCOUNTING_JOB SIMDRIVER_DIR WORK"""
import json
import os
import shutil
import subprocess
import sys

MIB = 1 << 20
RESERVE = 48 * MIB


def main():
    vt, job, sim, work = sys.argv[1:5]
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    trace = os.path.join(work, "trace")
    env = dict(os.environ, LD_LIBRARY_PATH=sim + ":" + os.path.dirname(job),
               VT_SIM_CAPACITY="1G", VT_SIM_CONTEXT_RESERVE="48M")
    subprocess.run([vt, "run", "-o", trace, "--", job, "64", "32"], env=env, check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=60)
    rep = json.loads(subprocess.run([vt, "report", trace, "--json"], check=True,
                                    stdout=subprocess.PIPE, text=True).stdout)
    acc = rep["accounting"]
    fails = []
    if len(acc) != 1:
        fails.append(f"one device accounted, got {acc}")
    else:
        d = acc[0]
        libs = {l["module"]: l["bytes"] for l in d["libraries"]}
        lt = [b for m, b in libs.items() if m.startswith("libcublasLt.so")]
        if lt != [32 * MIB]:
            fails.append(f"libcublasLt.so's 32 MiB, got {d['libraries']}")
        if d["framework_bytes"] != 64 * MIB:
            fails.append(f"framework 64 MiB, got {d['framework_bytes']}")
        if abs(d["unexplained_bytes"] - RESERVE) > RESERVE / 100:
            fails.append(f"unexplained {d['unexplained_bytes']}, want {RESERVE} within 1 %")
        if d["used_bytes"] != 64 * MIB + 32 * MIB + RESERVE:
            fails.append(f"used {d['used_bytes']}")
    text = subprocess.run([vt, "report", trace], check=True, stdout=subprocess.PIPE,
                          text=True).stdout
    if "library libcublasLt.so" not in text or "unexplained" not in text:
        fails.append("the text's accounting section")
    for f in fails:
        print("FAIL:", f)
    print("PASS" if not fails else f"{len(fails)} failure(s)")
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
