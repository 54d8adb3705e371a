#!/usr/bin/env python3
"""Folded, CSV and Perfetto exports of trainer traces against `report --json`:
 - folded lines sum, per device and per category, to the bytes live at the
   chosen moment (each device's peak by default; --at SECONDS, --at end);
 - the CSV rows live at that moment sum to the same, per device;
 - every Trace Event Format event has name, ph, ts, pid, tid (counters
   their args); replaying the counters up to each device's peak gives that
   device's categories_at_peak; async slices open and close in pairs;
 - bad input is refused with one line and the right exit code.
    check_exports.py VRAMTRACE TRAINER SIMDRIVER_DIR WORKDIR"""
import collections
import csv
import decimal
import json
import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from trainer_trace import export, make_trace, report_json  # noqa: E402

CATS = ["dataset", "prefetch", "weights", "optimizer", "gradients", "activations", "pool",
        "unknown"]
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what)


def folded_sums(path):
    """{device: {category: bytes}} from a folded file."""
    sums = collections.defaultdict(lambda: collections.Counter())
    with open(path) as f:
        for line in f:
            stack, _, count = line.rstrip("\n").rpartition(" ")
            frames = stack.split(";")
            check(frames[0].startswith("GPU ") and frames[-1].startswith("["),
                  f"folded line shape: {line!r}")
            check(len(frames) >= 3, f"folded line has no frames: {line!r}")
            sums[int(frames[0][4:])][frames[-1].strip("[]")] += int(count)
    return sums


def csv_live(path, moment_of_device):
    """{device: bytes} of the CSV rows live at each device's moment."""
    live = collections.Counter()
    with open(path, newline="") as f:
        rows = list(csv.reader(f))
    check(rows[0] == ["start_ns", "end_ns", "device", "bytes", "category", "site"],
          f"csv header {rows[0]}")
    for r in rows[1:]:
        check(len(r) == 6, f"csv row has {len(r)} fields: {r}")
        check(r[4] in CATS, f"csv category {r[4]}")
        if not r[2]:
            continue
        dev, start = int(r[2]), int(r[0])
        end = int(r[1]) if r[1] else None
        t = moment_of_device(dev)
        check(end is None or end >= start, f"csv row ends before it starts: {r}")
        if start <= t and (end is None or t < end):
            live[dev] += int(r[3])
    return live, len(rows) - 1


def check_folded_csv(vt, trace, work, name, extra, want_dev, want_cats, moment_of_device):
    fpath = export(vt, trace, "folded", os.path.join(work, name + ".folded"), *extra)
    cpath = export(vt, trace, "csv", os.path.join(work, name + ".csv"), *extra)
    sums = folded_sums(fpath)
    for dev, want in want_dev.items():
        check(sum(sums[dev].values()) == want,
              f"{name}: folded GPU {dev} sums to {sum(sums[dev].values())}, want {want}")
    got_cats = collections.Counter()
    for dev in sums:
        got_cats.update(sums[dev])
    for c in CATS:
        check(got_cats[c] == want_cats[c], f"{name}: folded {c} {got_cats[c]}, want {want_cats[c]}")
    live, nrows = csv_live(cpath, moment_of_device)
    for dev, want in want_dev.items():
        check(live[dev] == want, f"{name}: csv rows live on GPU {dev} sum to {live[dev]}, want {want}")
    print(f"ok   {name}: folded and csv sum to {sum(want_dev.values())} bytes "
          f"({len(want_dev)} device(s), {nrows} csv rows)")


REQUIRED = ("name", "ph", "ts", "pid", "tid")


def check_perfetto(vt, trace, work, name, rep):
    path = export(vt, trace, "perfetto", os.path.join(work, name + ".json"))
    with open(path) as f:
        doc = json.load(f, parse_float=decimal.Decimal)
    events = doc["traceEvents"]
    check(isinstance(events, list) and events, f"{name}: no traceEvents")
    gpu_pid = {}
    for e in events:
        for k in REQUIRED:
            check(k in e, f"{name}: event without {k}: {e}")
        check(e["ph"] in ("M", "C", "b", "e", "i", "X"), f"{name}: odd ph {e['ph']}")
        if e["ph"] == "C":
            check(isinstance(e.get("args"), dict) and e["args"] and
                  all(isinstance(v, int) for v in e["args"].values()),
                  f"{name}: counter without numeric args: {e}")
        if e["ph"] in ("b", "e"):
            check("id" in e and "cat" in e, f"{name}: async event without id/cat: {e}")
        if e["ph"] == "M" and e["name"] == "process_name" and e["args"]["name"].startswith("GPU "):
            gpu_pid[e["pid"]] = int(e["args"]["name"].split()[1])
    # async slices pair up
    open_ids = collections.Counter()
    for e in events:
        if e["ph"] == "b":
            open_ids[(e["pid"], e["cat"], e["id"])] += 1
        elif e["ph"] == "e":
            open_ids[(e["pid"], e["cat"], e["id"])] -= 1
            check(open_ids[(e["pid"], e["cat"], e["id"])] >= 0, f"{name}: 'e' before 'b': {e}")
    # the counters replayed up to each device's peak
    for d in rep["devices"]:
        dev, peak_t = d["ordinal"], d["peak_t_ns"]
        state = None
        for e in events:
            if e["ph"] == "C" and gpu_pid.get(e["pid"]) == dev and int(e["ts"] * 1000) <= peak_t:
                state = e["args"]
        check(state is not None, f"{name}: no counter for GPU {dev}")
        if state is None:
            continue
        for c in CATS:
            check(state.get(c, 0) == d["categories_at_peak"][c],
                  f"{name}: perfetto GPU {dev} {c} at peak {state.get(c)}, "
                  f"want {d['categories_at_peak'][c]}")
    flags = collections.Counter(e["name"] for e in events if e.get("cat") == "flag")
    # the out-of-memory finding is the failed allocation's own instant there
    want_flags = collections.Counter(f["kind"] for f in rep["flags"] if f["kind"] != "out_of_memory")
    check(flags == want_flags, f"{name}: perfetto flags {dict(flags)}, report {dict(want_flags)}")
    if any(f["kind"] == "out_of_memory" for f in rep["flags"]):
        check(any(" failed (CUresult" in e.get("name", "") for e in events),
              f"{name}: the out-of-memory failure has its instant")
    kinds = collections.Counter(e["ph"] for e in events)
    copies = sum(1 for e in events if e.get("cat") == "copy")
    check(copies == rep["totals"]["htod_calls"] + rep["totals"]["dtoh_calls"] +
          rep["totals"]["dtod_calls"] or copies > 0, f"{name}: {copies} copy events")
    print(f"ok   {name}: perfetto {len(events)} events {dict(kinds)}, counters at peak match "
          f"report, {copies} copies")
    return events


def check_trace(vt, trace, work, name):
    rep = report_json(vt, trace)
    devs = {d["ordinal"]: d for d in rep["devices"]}
    # each device at its own peak (the default, and --at peak)
    want_dev = {o: d["peak_bytes"] for o, d in devs.items()}
    for extra, tag in (([], "peak"), (["--at", "peak"], "at-peak")):
        check_folded_csv(vt, trace, work, f"{name}-{tag}", extra, want_dev,
                         rep["categories_at_peak"], lambda dev: devs[dev]["peak_t_ns"])
    # the top site's function is a frame of the folded stacks
    top = rep["sites"][0]["site"] if rep["sites"] else "(no stack)"
    if top != "(no stack)":
        fn = top.split(" (")[0]
        frames = set()
        with open(os.path.join(work, f"{name}-peak.folded")) as f:
            for line in f:
                frames.update(line.rpartition(" ")[0].split(";"))
        check(fn in frames, f"{name}: top site {fn} is no frame of the folded stacks")
    # one moment on every device: between the first allocation and the
    # first peak, and the end
    with open(os.path.join(work, f"{name}-peak.csv"), newline="") as f:
        first = min(int(r["start_ns"]) for r in csv.DictReader(f))
    mid = (first + min(d["peak_t_ns"] for d in rep["devices"])) / 2e9
    for spec in (f"{mid:.6f}", "end"):
        at = report_json(vt, trace, "--at", spec)["at"]
        want = {x["ordinal"]: x["bytes"] for x in at["devices"]}
        t = at["t_ns"] if spec != "end" else 1 << 63
        check_folded_csv(vt, trace, work, f"{name}-at-{spec}", ["--at", spec], want,
                         at["categories"], lambda dev: t)
    return check_perfetto(vt, trace, work, name, rep)


def check_refusals(vt, trace, work):
    # a folder for -o cannot be made under a plain file (export makes the
    # folders -o names; its defaults are export_cli's)
    with open(os.path.join(work, "plainfile"), "w"):
        pass
    cases = [
        (["export", os.path.join(work, "no-such-dir"), "--format", "csv", "-o", "-"], 1),
        (["export", trace, "--format", "svg", "-o", "-"], 2),
        (["export", trace, "--format", "csv", "--at", "soon", "-o", "-"], 2),
        (["export", trace, "--format", "csv", "-o", os.path.join(work, "plainfile", "x.csv")], 1),
    ]
    for argv, rc in cases:
        p = subprocess.run([vt] + argv, capture_output=True, text=True)
        lines = p.stderr.strip().splitlines()
        check(p.returncode == rc, f"{argv[1:]}: exit {p.returncode}, want {rc}")
        # a usage error (2) adds the line that points to --help
        want = 2 if rc == 2 and lines[-1:] == ["Try 'vramtrace export --help' for more information."] else 1
        check(len(lines) == want and p.stdout == "", f"{argv[1:]}: want one line, got {p.stderr!r}")
    check(not any(n.startswith("x.csv") for n in os.listdir(work)), "half-written file left")
    print("ok   bad input refused with one line")


def check_report_html(vt, trace, work):
    """`report DIR --html FILE`: the report as usual, and the export's page."""
    page = os.path.join(work, "report.html")
    plain = subprocess.run([vt, "report", trace], capture_output=True, text=True)
    both = subprocess.run([vt, "report", trace, "--html", page], capture_output=True, text=True)
    check(both.returncode == 0 and both.stdout == plain.stdout,
          f"report --html: exit {both.returncode}, or its text report changed")
    ref = export(vt, trace, "html", os.path.join(work, "export.html"))
    with open(page, "rb") as a, open(ref, "rb") as b:
        check(a.read() == b.read(), "report --html and export --format html differ")
    bad = subprocess.run([vt, "report", trace, "--html", os.path.join(work, "nodir", "r.html")],
                         capture_output=True, text=True)
    check(bad.returncode == 1 and bad.stderr.count("\n") == 1,
          f"report --html into a missing dir: exit {bad.returncode}, {bad.stderr!r}")
    print("ok   report --html writes the export's page")


def main():
    vt, trainer, sim, work = sys.argv[1:5]
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    two = make_trace(vt, trainer, sim, os.path.join(work, "two"),
                     ["--dataset", "whole", "--devices", "2", "--steps", "8"])
    check_trace(vt, two, work, "two-devices")
    pool = make_trace(vt, trainer, sim, os.path.join(work, "pool"),
                      ["--alloc", "pool", "--dataset", "whole", "--no-markers"], devices=1)
    check_trace(vt, pool, work, "pool")
    oom = make_trace(vt, trainer, sim, os.path.join(work, "oom"),
                     ["--dataset", "whole", "--dataset-bytes", "96M"], devices=1,
                     capacity="128M", expect_ok=False)
    events = check_trace(vt, oom, work, "oom")
    failed = [e for e in events if e["ph"] == "i" and "failed" in e["name"]]
    check(len(failed) >= 1, "oom: no failed-allocation instant in the perfetto export")
    check_refusals(vt, two, work)
    check_report_html(vt, two, work)
    if failures:
        print(f"{len(failures)} failure(s)")
        return 1
    print("all export checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
