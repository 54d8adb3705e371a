#!/usr/bin/env python3
"""`vramtrace top --json` on a job while it runs, and after it ended.

  top_live_check.py VRAMTRACE TRAINER WORK_DIR

A slow simulated trainer (a sleep per step, markers) on two devices:
while it runs, top sees it running, with live bytes on each device and at
least one step; once it ended, top's live bytes, peak and categories at the
peak per device equal `report --json`'s end bytes, peak and categories."""
import json
import os
import shutil
import subprocess
import sys
import time

vt, trainer, work = sys.argv[1:4]
failures = []


def check(ok, msg):
    if not ok:
        failures.append(msg)
        print("FAIL:", msg)


def top_json(trace):
    done = subprocess.run([vt, "top", "--json", trace], capture_output=True, text=True, timeout=60)
    check(done.returncode == 0, f"top --json exit {done.returncode}: {done.stderr}")
    return json.loads(done.stdout)


shutil.rmtree(work, ignore_errors=True)
os.makedirs(work)
trace = os.path.join(work, "trace")
env = dict(os.environ, VT_SIM_CAPACITY="4G", VT_SIM_DEVICES="2")
job = subprocess.Popen([vt, "run", "--simulated-driver", "-o", trace, "--", trainer, "--steps", "30",
                        "--step-sleep-ms", "100", "--markers", "--layers", "3", "--layer-bytes",
                        "64M", "--devices", "2"], env=env, stderr=subprocess.PIPE, text=True)
live = None
deadline = time.time() + 60
while time.time() < deadline and job.poll() is None:
    time.sleep(0.3)
    if not os.path.isdir(trace):
        continue
    frame = top_json(trace)
    if frame["state"] == "running" and frame["steps"] >= 1 and frame["devices"]:
        live = frame
        break
check(live is not None, "top never saw the job running with a step done")
if live:
    check(len(live["devices"]) == 2, f"two devices while running: {live['devices']}")
    check(all(d["live_bytes"] > 0 for d in live["devices"]), f"live bytes: {live['devices']}")
    check(all(d["peak_bytes"] >= d["live_bytes"] for d in live["devices"]), "peak >= live")
    check(live["top_sites"] and live["top_sites"][0]["bytes"] > 0, "a site holds memory now")
_, err = job.communicate(timeout=120)
check(job.returncode == 0, f"job exit {job.returncode}: {err}")

end = top_json(trace)
rep = json.loads(subprocess.run([vt, "report", "--json", trace], capture_output=True, text=True,
                                check=True).stdout)
check(end["state"] == "exited", f"state after the end: {end['state']}")
check(end["steps"] == 30, f"steps after the end: {end['steps']}")
by_ord = {d["ordinal"]: d for d in rep["devices"]}
check(sorted(by_ord) == sorted(d["ordinal"] for d in end["devices"]), "the same devices")
for d in end["devices"]:
    r = by_ord.get(d["ordinal"], {})
    check(d["live_bytes"] == r.get("end_bytes"), f"GPU {d['ordinal']} live {d['live_bytes']} vs end {r.get('end_bytes')}")
    check(d["peak_bytes"] == r.get("peak_bytes"), f"GPU {d['ordinal']} peak {d['peak_bytes']} vs {r.get('peak_bytes')}")
    check(d["categories_at_peak"] == r.get("categories_at_peak"), f"GPU {d['ordinal']} categories")
check(len(end["findings"]) == len(rep["flags"]), f"one finding per report flag: {end['findings']} vs {rep['flags']}")
sys.exit(1 if failures else 0)
