#!/usr/bin/env python3
"""`vramtrace report` end to end on the simulated trainer with stacks on:
sites are named after the trainer's own functions (past the driver, the
shim and the trainer's allocation wrappers) with the right category, the
flags carry the upload's site, --at moves the state, and the text report
has its sections.
    report_check.py VRAMTRACE VT_TRAINER SIMDRIVER_DIR"""
import json
import os
import subprocess
import sys
import tempfile

failures = []


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        failures.append(what)


def report(vt, trace, *args):
    return subprocess.run([vt, "report", trace] + list(args), check=True,
                          stdout=subprocess.PIPE, text=True).stdout


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
    print("%d failed" % len(failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
