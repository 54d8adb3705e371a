#!/usr/bin/env python3
"""The trainer matrix (matrix.txt) against the analyzer, with ground truth.

For every configuration: run samples/trainer with --truth, analyse the trace,
and check:
  1. per-tensor mode: >= 95% of the bytes live at each device's peak carry
     their true category (accuracy printed for every configuration);
  2. whole-dataset configurations carry a whole_dataset_upload flag with the
     right devices and bytes; streaming ones carry none;
  3. pool mode: the process is reported as "pool", its region as pool, and a
     whole-dataset upload into it is still flagged;
  4. the prefetch_depth flag reports the trainer's depth on every device;
  5. steps: counted from markers, or from the period without them.

Two ways to get the trace:
  --vramtrace BIN --simdriver DIR   `vramtrace run` + `vramtrace report --json --allocs`
                                    with the simulated libcuda.so.1 in DIR
  --fake LIB --report-records BIN   the record-emitting stand-in (fakecuda.c)
"""
import argparse
import json
import os
import shlex
import subprocess
import sys
import tempfile

MIN_ACCURACY = 0.95


def parse_truth(path):
    cfg, allocs, datasets = {}, [], []
    with open(path) as f:
        for line in f:
            w = line.split()
            if not w or w[0].startswith("#"):
                continue
            if w[0] == "config":
                cfg = dict(kv.split("=", 1) for kv in w[1:])
            elif w[0] == "alloc":
                allocs.append((int(w[1]), int(w[2], 16), int(w[3]), w[4]))
            elif w[0] == "dataset":
                datasets.append((int(w[1]), int(w[2]), int(w[3])))
    return cfg, allocs, datasets


def identity(allocs):
    """(device, address, n-th allocation at that address) for each, in order."""
    seen, out = {}, []
    for dev, addr, nbytes in allocs:
        k = (dev, addr)
        n = seen.get(k, 0)
        seen[k] = n + 1
        out.append((dev, addr, n))
    return out


def run_config(args, name, opts, work):
    truth = os.path.join(work, name + ".truth")
    trainer = [args.trainer] + shlex.split(opts) + ["--truth", truth]
    env = dict(os.environ)
    if args.fake:
        rec = os.path.join(work, name + ".rec")
        env.update(FAKECUDA_OUT=rec, LD_PRELOAD=args.fake,
                   LD_LIBRARY_PATH=os.path.dirname(args.fake))
        subprocess.run(trainer, env=env, check=True, stdout=subprocess.DEVNULL)
        report = [args.report_records, rec, "--json", "--allocs"]
        env = dict(os.environ)
    else:
        trace = os.path.join(work, name + ".trace")
        env["LD_LIBRARY_PATH"] = args.simdriver + (":" + env["LD_LIBRARY_PATH"]
                                                   if env.get("LD_LIBRARY_PATH") else "")
        env.setdefault("VT_SIM_DEVICES", "4")
        env.setdefault("VT_SIM_CAPACITY", str(16 << 30))
        subprocess.run([args.vramtrace, "run", "-o", trace, "--"] + trainer, env=env,
                       check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        report = [args.vramtrace, "report", trace, "--json", "--allocs"]
    out = subprocess.run(report, env=env, check=True, stdout=subprocess.PIPE).stdout
    return parse_truth(truth), json.loads(out)


def accuracy(truth_allocs, rep):
    got = [a for a in rep["allocations"]]
    gkeys = identity([(a["device"], int(a["addr"], 16), a["bytes"]) for a in got])
    tkeys = identity([(d, a, b) for d, a, b, _ in truth_allocs])
    true_cat = {k: t[3] for k, t in zip(tkeys, truth_allocs)}
    live = ok = 0
    wrong = {}
    for k, a in zip(gkeys, got):
        if not a["live_at_peak"]:
            continue
        live += a["bytes"]
        want = true_cat.get(k, "?")
        if want == a["category"]:
            ok += a["bytes"]
        else:
            key = "%s->%s" % (want, a["category"])
            wrong[key] = wrong.get(key, 0) + a["bytes"]
    return (ok / live if live else 0.0), wrong


def check(name, cfg, truth_allocs, datasets, rep):
    errors = []
    pool = cfg["mode"] == "pool"
    acc, wrong = accuracy(truth_allocs, rep)
    if not pool and acc < MIN_ACCURACY:
        errors.append("accuracy %.1f%% < 95%% (%s)" % (
            100 * acc, ", ".join("%s %d MiB" % (k, v >> 20) for k, v in sorted(wrong.items()))))
    flags = rep["flags"]
    whole = [f for f in flags if f["kind"] == "whole_dataset_upload"]
    if cfg["dataset"] in ("whole", "sliced"):
        want_devs = sorted(d for d, _, _ in datasets)
        want_bytes = int(cfg["dataset_bytes"])
        hit = [f for f in whole if f["devices"] == want_devs and
               all(b == want_bytes for b in f["bytes"])]
        if len(hit) != 1 or len(whole) != 1:
            errors.append("whole_dataset_upload flags %s, want one on %s of %d bytes" % (
                [(f["devices"], f["bytes"]) for f in whole], want_devs, want_bytes))
    elif whole:
        errors.append("streaming config flagged: %s" % [(f["devices"], f["bytes"]) for f in whole])
    if int(cfg["devices"]) > 1 and cfg["dataset"] != "stream":
        if not any(f["kind"] == "replicated_across_devices" for f in flags):
            errors.append("no replicated_across_devices flag")
    mode = rep["processes"][0]["mode"]
    if mode != cfg["mode"]:
        errors.append("mode %s, want %s" % (mode, cfg["mode"]))
    if pool and not any(f["kind"] == "opaque_pool" for f in flags):
        errors.append("no opaque_pool flag")
    depth = int(cfg["prefetch"])
    pf = [f for f in flags if f["kind"] == "prefetch_depth"]
    if not pool:
        if depth and sorted({f["depth"] for f in pf}) != [depth]:
            errors.append("prefetch depth %s, want %d" % ([f["depth"] for f in pf], depth))
        if depth and len(pf) != int(cfg["devices"]):
            errors.append("prefetch flags on %d devices, want %s" % (len(pf), cfg["devices"]))
        if not depth and pf:
            errors.append("prefetch flagged without prefetch")
    steps = rep["steps"]
    want_src = "markers" if cfg["markers"] == "1" else "period"
    if steps["source"] != want_src or steps["count"] != int(cfg["steps"]):
        errors.append("steps %d from %s, want %s from %s" % (
            steps["count"], steps["source"], cfg["steps"], want_src))
    return acc, errors


def check_recording_cost(rep, through_shim):
    """The shim times its own work (one call in 64, at random): a job it
    traced has the measure, counting about as many calls as it recorded
    events; records made without it (fakecuda) have none."""
    cost = rep["processes"][0].get("recording_cost", "absent")
    if not through_shim:
        return [] if cost is None else ["recording_cost %r without the shim" % (cost,)]
    events = rep["totals"]["events"]
    if not cost:
        return ["no recording_cost"]
    errors = []
    if not events // 2 <= cost["calls"] <= events:
        errors.append("recording_cost counts %d calls for %d events" % (cost["calls"], events))
    # one in 64 at random intervals of 1-127: a short job may still time a
    # few (two intervals within 12 calls: 0.4 %), so some slack at the top
    if not cost["calls"] // 256 <= cost["timed_calls"] <= cost["calls"] // 16 + 3:
        errors.append("%d of %d calls timed" % (cost["timed_calls"], cost["calls"]))
    if cost["total_ns"] <= 0 or cost["total_ns"] >= cost["recorded_ns"] * 2:
        errors.append("recording_cost total %d ns of %d recorded" % (
            cost["total_ns"], cost["recorded_ns"]))
    return errors


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--matrix", required=True)
    ap.add_argument("--trainer", required=True)
    ap.add_argument("--vramtrace")
    ap.add_argument("--simdriver")
    ap.add_argument("--fake")
    ap.add_argument("--report-records")
    ap.add_argument("--only", help="run the configurations whose name contains this")
    args = ap.parse_args()
    if not args.fake and not (args.vramtrace and args.simdriver):
        ap.error("give --fake LIB --report-records BIN, or --vramtrace BIN --simdriver DIR")
    configs = []
    with open(args.matrix) as f:
        for line in f:
            line = line.strip()
            if line and not line.startswith("#"):
                name, _, opts = line.partition(" ")
                if not args.only or args.only in name:
                    configs.append((name, opts.strip()))
    failed = 0
    print("%-26s %-10s %9s  %s" % ("config", "mode", "accuracy", "result"))
    with tempfile.TemporaryDirectory(prefix="vt-matrix-") as work:
        for name, opts in configs:
            try:
                (cfg, truth_allocs, datasets), rep = run_config(args, name, opts, work)
                acc, errors = check(name, cfg, truth_allocs, datasets, rep)
                errors += check_recording_cost(rep, not args.fake)
            except (subprocess.CalledProcessError, ValueError, KeyError) as e:
                detail = getattr(e, "stderr", None)
                detail = detail.decode(errors="replace").strip() if detail else ""
                acc, errors, cfg = 0.0, ["run failed: %s %s" % (e, detail)], {"mode": "?"}
            failed += bool(errors)
            print("%-26s %-10s %8.1f%%  %s" % (name, cfg.get("mode", "?"), 100 * acc,
                                              "ok" if not errors else "FAIL: " + "; ".join(errors)))
            sys.stdout.flush()
    print("%d of %d configurations failed" % (failed, len(configs)))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
