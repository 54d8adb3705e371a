#!/usr/bin/env python3
"""`vramtrace report` end to end on the simulated trainer with stacks on:
sites are named after the trainer's own functions (past the driver, the
shim and the trainer's allocation wrappers) with the right category, the
flags carry the upload's site, --at moves the state, and the text report
has its sections.
    report_check.py VRAMTRACE VT_TRAINER SIMDRIVER_DIR"""
import json
import os
import signal
import subprocess
import sys
import tempfile
import time

from checklib import check, failures


def report(vt, trace, *args):
    return subprocess.run([vt, "report", trace] + list(args), check=True,
                          stdout=subprocess.PIPE, text=True).stdout


def identity(rows):
    """(device, address, n-th allocation at that address) for each."""
    seen, out = {}, []
    for key in rows:
        n = seen.get(key, 0)
        seen[key] = n + 1
        out.append(key + (n,))
    return out


def trainer_pid(pid, trainer):
    """Is process pid running the trainer (not vramtrace's relay)?"""
    try:
        return os.path.basename(os.readlink("/proc/%s/exe" % pid)) == os.path.basename(trainer)
    except OSError:
        return False


def killed_mid_run(vt, trainer, env, work):
    """SIGKILL the trainer mid-run: the report still works, says the process
    died, and what was live at the end carries its true category."""
    trace, truth = os.path.join(work, "killed"), os.path.join(work, "killed.truth")
    run = subprocess.Popen([vt, "run", "-o", trace, "--", trainer, "--dataset", "whole",
                            "--steps", "2000", "--step-sleep-ms", "2", "--prefetch", "3",
                            "--truth", truth], env=env, stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL)
    child = None
    for _ in range(200):  # the launcher's child, once it has started steps
        time.sleep(0.02)
        kids = open("/proc/%d/task/%d/children" % (run.pid, run.pid)).read().split()
        # the launcher's children: the job, and its stderr relay
        kids = [k for k in kids if trainer_pid(k, trainer)]
        if kids and os.path.exists(truth) and os.path.getsize(truth) > 4096:
            child = int(kids[0])
            break
    check(child is not None, "trainer started under vramtrace run")
    if child is None:
        run.kill()
        run.wait()
        return
    os.kill(child, signal.SIGKILL)
    check(run.wait() == 128 + signal.SIGKILL, "vramtrace run exits 128+SIGKILL")
    r = json.loads(report(vt, trace, "--json", "--allocs", "--at", "end"))
    check(r["processes"][0]["state"] == "died" and not r["processes"][0]["clean_exit"],
          "killed process reported as died")
    rows = [l.split() for l in open(truth) if l.startswith("alloc ") and len(l.split()) == 6]
    true_cat = dict(zip(identity([(int(t[1]), int(t[2], 16)) for t in rows]), [t[4] for t in rows]))
    got = r["allocations"]
    keys = identity([(a["device"], int(a["addr"], 16)) for a in got])
    live = [(k, a) for k, a in zip(keys, got) if a["t_free_ns"] is None]
    wrong = [(a["bytes"], true_cat.get(k), a["category"]) for k, a in live
             if true_cat.get(k) != a["category"]]
    check(live and not wrong, "live at the kill: %d allocations, wrong %s" % (len(live), wrong))
    check([f["depth"] for f in r["flags"] if f["kind"] == "prefetch_depth"] == [3],
          "killed run: prefetch depth 3")


def main():
    vt, trainer, sim = sys.argv[1:4]
    env = dict(os.environ, LD_LIBRARY_PATH=sim, VT_SIM_DEVICES="2", VT_SIM_CAPACITY="4G")
    with tempfile.TemporaryDirectory(prefix="vt-report-") as work:
        trace = os.path.join(work, "trace")
        subprocess.run([vt, "run", "-o", trace, "--", trainer, "--dataset", "whole",
                        "--dataset-bytes", "96M", "--steps", "6", "--prefetch", "3"],
                       env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        r = json.loads(report(vt, trace, "--json", "--top", "20"))
        sites = {s["site"].split(" (")[0]: s for s in r["sites"]}
        want = {"create_dataset": "dataset", "create_weights": "weights",
                "create_optimizer": "optimizer", "prefetch_batch": "prefetch",
                "train_step": None}
        for fn, cat in want.items():
            s = sites.get(fn)
            check(s is not None and s["site"].startswith(fn + " ("),
                  "site %s named function (file:line): %s" % (fn, s and s["site"]))
            if s and cat:
                check(s["category"] == cat, "site %s is %s (got %s)" % (fn, cat, s["category"]))
        check(not any(k in sites for k in ("driver_alloc", "tensor_alloc")),
              "the trainer's allocation wrappers are not sites: %s" % sorted(sites))
        whole = [f for f in r["flags"] if f["kind"] == "whole_dataset_upload"]
        check(len(whole) == 1 and whole[0]["site"].startswith("create_dataset ("),
              "whole_dataset_upload names the upload's site: %s" % [f["site"] for f in whole])
        check(len(whole) == 1 and whole[0]["bytes"] == [96 << 20], "dataset bytes per device")
        depth = [f["depth"] for f in r["flags"] if f["kind"] == "prefetch_depth"]
        check(depth == [3], "prefetch depth 3: %s" % depth)
        peak = r["devices"][0]
        check(r["at"]["label"] == "peak" and r["at"]["bytes"] == peak["peak_bytes"],
              "--at peak: the peak's bytes")
        check(sum(r["categories_at_peak"].values()) == peak["peak_bytes"],
              "categories at peak add up to the peak")
        end = json.loads(report(vt, trace, "--json", "--at", "end"))
        check(end["at"]["bytes"] == 0 and end["at"]["label"] == "end", "--at end: all freed")
        early = json.loads(report(vt, trace, "--json", "--at", "0"))
        check(early["at"]["bytes"] == 0, "--at 0: nothing yet")
        mid_s = "%.9f" % ((peak["peak_t_ns"]) / 1e9)
        mid = json.loads(report(vt, trace, "--json", "--at", mid_s))
        check(mid["at"]["bytes"] >= r["categories_at_peak"]["dataset"],
              "--at %s: the dataset is live" % mid_s)
        text = report(vt, trace)
        for section in ("Processes", "Devices", "Bytes by category at peak", "Top sites at peak",
                        "Flags", "[whole_dataset_upload] 96.0 MiB dataset uploaded to GPU 0",
                        "dataset        96.0 MiB"):
            check(section in text, "text report has '%s'" % section)
        bad = subprocess.run([vt, "report", trace, "--at", "soon"], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
        check(bad.returncode == 2 and bad.stderr.count("\n") == 1, "bad --at: exit 2, one line")
        killed_mid_run(vt, trainer, env, work)
    print("%d failed" % len(failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
