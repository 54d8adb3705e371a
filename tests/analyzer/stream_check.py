#!/usr/bin/env python3
"""`vramtrace report --stream` against the full report on the same traces:
the committed golden traces, a generated trace of a million events and the
simulated trainer with stacks. Each device's peak, when it happened and
what was left at the end, the bytes each site held at the peak (by the same
site names) and the trace's totals must be the full report's; the records
the streaming model held must follow the live allocations, not the
trace's. Bad flags get one line and exit 2.
    stream_check.py VRAMTRACE GEN_TRACE TRAINER SIMDRIVER_DIR GOLDEN_DIR"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections import defaultdict

from checklib import check, failures


def report(vt, trace, *args):
    return json.loads(subprocess.run([vt, "report", trace, "--json", "--top", "100000"] +
                                     list(args), check=True, stdout=subprocess.PIPE,
                                     text=True).stdout)


def export_checks(vt, trace, what, full, st):
    """export --stream: the timeline as Perfetto JSON and CSV, its top the peak."""
    pf = json.loads(subprocess.run([vt, "export", trace, "--stream", "--format", "perfetto",
                                    "-o", "-"], check=True, stdout=subprocess.PIPE,
                                   text=True).stdout)
    ev = pf["traceEvents"]
    peaks = {d["ordinal"]: d["peak_bytes"] for d in full["devices"] if d["peak_bytes"]}
    counters = defaultdict(int)
    for e in ev:
        if e["ph"] == "C":
            dev = int(e["name"].split()[1])
            counters[dev] = max(counters[dev], e["args"]["bytes"])
    check(dict(counters) == peaks, "%s: perfetto counters top out at the peaks %s" % (what, peaks))
    instants = [e for e in ev if e["ph"] == "i"]
    check(len(instants) == len(st["peaks"]) + len(st["failures"]),
          "%s: perfetto: an instant per peak and failure (%d)" % (what, len(instants)))
    rows = subprocess.run([vt, "export", trace, "--stream", "--format", "csv", "-o", "-"],
                          check=True, stdout=subprocess.PIPE, text=True).stdout.splitlines()
    per = defaultdict(list)
    for r in rows[1:]:
        pid, dev, t, w, b = map(int, r.split(","))
        per[(pid, dev)].append(b)
    check(rows[0] == "pid,device,t_ns,bucket_ns,max_bytes" and
          all(len(v) <= 1024 for v in per.values()) and
          {d: max(v) for (p, d), v in per.items()} == peaks,
          "%s: csv timeline, at most 1024 rows a GPU, top the peak" % what)


def compare(vt, trace, what):
    full, st = report(vt, trace), report(vt, trace, "--stream")
    t = full["totals"]
    check(st["mode"] == "stream", "%s: mode stream" % what)
    check((st["events"], st["allocations"], st["frees"], st["failed_allocs"]) ==
          (t["events"], t["alloc_calls"], t["free_calls"], t["failed_allocs"]),
          "%s: the same totals (%d events, %d allocations)" % (what, st["events"],
                                                               st["allocations"]))
    costs = [p["recording_cost"] for p in full["processes"]]
    check([p["recording_cost"] for p in st["processes"]] == costs,
          "%s: the same recording cost (%s)" % (what, costs))
    if full["steps"]["source"] == "markers":
        check([p["step_markers"] for p in st["processes"]] == [p["steps"] for p in full["processes"]],
              "%s: step markers counted (%s)" % (what, [p["steps"] for p in full["processes"]]))
    by_dev = defaultdict(list)
    for p in st["peaks"]:
        by_dev[p["device"]].append(p)
    for d in full["devices"]:
        pk = by_dev.get(d["ordinal"], [])
        if not d["peak_bytes"]:
            check(not pk, "%s: GPU %d held nothing, no snapshot" % (what, d["ordinal"]))
            continue
        check(len(pk) == 1 and (pk[0]["peak_bytes"], pk[0]["peak_t_ns"], pk[0]["end_bytes"]) ==
              (d["peak_bytes"], d["peak_t_ns"], d["end_bytes"]),
              "%s: GPU %d peak %d at %d ns, %d at the end" %
              (what, d["ordinal"], d["peak_bytes"], d["peak_t_ns"], d["end_bytes"]))
        check(pk and sum(s["bytes"] for s in pk[0]["sites"]) == d["peak_bytes"],
              "%s: GPU %d sites add up to the peak" % (what, d["ordinal"]))
        tl = pk[0]["timeline"] if pk else None
        check(tl and 0 < len(tl["max_bytes"]) <= 1024 and max(tl["max_bytes"]) == d["peak_bytes"] and
              tl["max_bytes"][(d["peak_t_ns"] - tl["t0_ns"]) // tl["bucket_ns"]] == d["peak_bytes"],
              "%s: GPU %d timeline: %d buckets, its top the peak, in the peak's bucket" %
              (what, d["ordinal"], len(tl["max_bytes"]) if tl else 0))
    want = {s["site"]: s["bytes_at_peak"] for s in full["sites"] if s["bytes_at_peak"]}
    got = defaultdict(int)
    for p in st["peaks"]:
        for s in p["sites"]:
            got[s["site"]] += s["bytes"]
    check(dict(got) == want, "%s: bytes per site at the peak: %s" % (what, sorted(want.items())[:4]))
    export_checks(vt, trace, what, full, st)
    check(st["records_held"] <= max(st["allocations"], 1),
          "%s: %d records held for %d allocations" % (what, st["records_held"],
                                                      st["allocations"]))
    return st


def main():
    vt, gen, trainer, sim, golden = sys.argv[1:6]
    for name in sorted(os.listdir(golden)):
        trace = os.path.join(golden, name, "trace")
        if os.path.isdir(trace):
            compare(vt, trace, "golden " + name)
    with tempfile.TemporaryDirectory(prefix="vt-stream-") as work:
        trace = os.path.join(work, "gen")
        subprocess.run([gen, trace, "1000000"], check=True, stdout=subprocess.DEVNULL)
        st = compare(vt, trace, "generated 1M events")
        check(st["records_held"] * 100 < st["allocations"],
              "generated: memory follows the live allocations (%d records for %d allocations)"
              % (st["records_held"], st["allocations"]))

        trace = os.path.join(work, "trainer")
        env = dict(os.environ, LD_LIBRARY_PATH=sim, VT_SIM_DEVICES="2", VT_SIM_CAPACITY="4G")
        subprocess.run([vt, "run", "-o", trace, "--", trainer, "--dataset", "whole",
                        "--dataset-bytes", "96M", "--steps", "6", "--prefetch", "3",
                        "--devices", "2"],
                       env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        st = compare(vt, trace, "trainer, 2 GPUs, stacks")
        check(st["processes"][0]["recording_cost"] is not None,
              "trainer: the shim measured its own time")
        names = [s["site"] for p in st["peaks"] for s in p["sites"]]
        check(any(n.startswith("create_dataset (") for n in names),
              "trainer: the dataset's site is named function (file:line): %s" % names[:3])
        text = subprocess.run([vt, "report", trace, "--stream"], check=True,
                              stdout=subprocess.PIPE, text=True).stdout
        check("at the peak, by allocating site" in text and "create_dataset (" in text,
              "trainer: the text report names the sites")

        # out of memory: what held the GPU when it said no, as `oom` says
        trace = os.path.join(work, "oom")
        env = dict(env, VT_SIM_DEVICES="1", VT_SIM_CAPACITY="1G")
        subprocess.run([vt, "run", "-o", trace, "--", trainer, "--dataset", "whole",
                        "--dataset-bytes", "1000M", "--steps", "3"],
                       env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        oom = json.loads(subprocess.run([vt, "oom", trace, "--json"], check=True,
                                        stdout=subprocess.PIPE, text=True).stdout)
        st = compare(vt, trace, "trainer out of memory")
        f = st["failures"]
        check(len(f) == 1 and f[0]["bytes"] == oom["oom"]["bytes"] and
              f[0]["live_bytes"] == oom["tracked_live_bytes"],
              "oom: the failed request and what was live then (%s)" %
              [(x["bytes"], x["live_bytes"]) for x in f])
        sites = {s["site"]: s["bytes"] for s in f[0]["sites"]} if f else {}
        check(oom["top_sites"] and all(sites.get(s["site"]) == s["bytes"] for s in oom["top_sites"]),
              "oom: bytes per site then, as `oom` says: %s" % sorted(sites.items())[:3])

        # diff --stream: the full diff's peaks, bytes per site and exit codes
        two, oomed = os.path.join(work, "trainer"), trace
        for args in ([two, oomed], [oomed, two], [two, two]):
            full = subprocess.run([vt, "diff", *args, "--json", "--fail-over", "5"],
                                  stdout=subprocess.PIPE, text=True)
            st = subprocess.run([vt, "diff", *args, "--json", "--fail-over", "5", "--stream"],
                                stdout=subprocess.PIPE, text=True)
            f, s_ = json.loads(full.stdout), json.loads(st.stdout)
            what = "diff --stream %s -> %s" % tuple(os.path.basename(a) for a in args)
            check(s_["mode"] == "stream" and s_["categories"] is None, what + ": mode stream")
            check(st.returncode == full.returncode and s_["peak"] == f["peak"] and
                  s_["changed"] == f["changed"],
                  "%s: exit %d, changed %s, peaks %s" % (what, st.returncode, s_["changed"],
                                                        s_["peak"]))
            want = {x["site"]: (x["base"], x["new"]) for x in f["sites"]}
            got = {x["site"]: (x["base"], x["new"]) for x in s_["sites"]}
            check(got == want, "%s: bytes per site at the peaks" % what)

        # two processes on one GPU (two runs' logs in one trace): each one's
        # own peak, and the report says the GPU was shared
        shared = os.path.join(work, "shared")
        os.makedirs(shared)
        for src in (two, oomed):
            for f in os.listdir(src):
                if f.startswith("vramtrace.") and f.endswith(".log"):
                    shutil.copy(os.path.join(src, f), shared)
        alone = {json.loads(subprocess.run([vt, "report", src, "--stream", "--json"], check=True,
                                           stdout=subprocess.PIPE, text=True).stdout)["peaks"][0]
                 ["peak_bytes"] for src in (two, oomed)}
        st = json.loads(subprocess.run([vt, "report", shared, "--stream", "--json"], check=True,
                                       stdout=subprocess.PIPE, text=True).stdout)
        gpu0 = [p for p in st["peaks"] if p["device"] == 0]
        check(len(gpu0) == 2 and {p["peak_bytes"] for p in gpu0} == alone and
              all(p["processes_on_device"] == 2 for p in gpu0),
              "shared GPU: each process's own peak %s" % sorted(alone))
        full = json.loads(subprocess.run([vt, "report", shared, "--json"], check=True,
                                         stdout=subprocess.PIPE, text=True).stdout)
        merged = [d["peak_bytes"] for d in full["devices"] if d["ordinal"] == 0][0]
        check(gpu0 and gpu0[0]["device_peak_at_least"] <= merged <= gpu0[0]["device_peak_at_most"],
              "shared GPU: the full report's merged peak %d within the bounds %s" %
              (merged, gpu0 and (gpu0[0]["device_peak_at_least"], gpu0[0]["device_peak_at_most"])))
        text = subprocess.run([vt, "report", shared, "--stream"], check=True,
                              stdout=subprocess.PIPE, text=True).stdout
        check("2 processes used this GPU" in text, "shared GPU: the text says so")

    bad = subprocess.run([vt, "report", golden, "--stream", "--at", "end"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    check(bad.returncode == 2 and bad.stderr.count("\n") == 2 and
          bad.stderr.endswith("Try 'vramtrace report --help' for more information.\n"),
          "--stream with --at: exit 2, one line and the Try line (%r)" % bad.stderr)
    if failures:
        print("%d failure(s)" % len(failures))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
