#!/usr/bin/env python3
"""A distributed job's exports: a 4-rank job on two hosts (two trace
directories, rank 0 uploading its whole dataset), and one host's trace on
its own (two ranked processes in one trace).
  check_job.py perfetto VRAMTRACE TRAINER SIMDIR WORKDIR
    - a process track per rank named "rank N (host:pid)", sorted in rank
      order; pids of different traces never meet (each trace's processes and
      devices get their own), every event on a named track, each rank's
      copies on its own track; one trace keeps its processes' pids; the
      hosts' first steps start together (aligned by step markers), or, for
      ranks that do not mark their steps, the second host's ranks come after
      the first's (by wall clock: the hosts run one after the other).
  check_job.py html VRAMTRACE TRAINER SIMDIR WORKDIR [CHROMIUM]
    - in headless Chromium (the page's #selftest mode): the rank view has a
      row per rank in rank order, every row's chart on the same scale (the
      same top label and chart height, the same pixels per byte for the
      peak's mark and the bar), hovering a rank's peak shows its peak
      bytes, rank 0 named as the heavy rank of dataset in
      the imbalance list and marked on its row, the alignment line, and no
      label overlapping another; a trace without ranks has no rank view.
      Exit 77 (skipped) when no Chromium is installed."""
import collections
import json
import os
import re
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import check_html  # noqa: E402
from check_html import boxes_meet, check, run_page, static_checks  # noqa: E402
from trainer_trace import JOB_HOSTS, export, make_job, make_trace, report_json  # noqa: E402

RANK_TRACK = re.compile(r"^rank (\d+) \((.+):(\d+)\)$")


def tracks(events):
    names, sort = {}, {}
    for e in events:
        if e["ph"] == "M" and e["name"] == "process_name":
            names[e["pid"]] = e["args"]["name"]
        elif e["ph"] == "M" and e["name"] == "process_sort_index":
            sort[e["pid"]] = e["args"]["sort_index"]
    return names, sort


def check_alignment(events, pid_of_rank, ntraces, name, by_steps):
    """By step markers each host's first step starts at the same time; by
    wall clock the second host (run after the first) comes after it."""
    first_step, span = [], []
    for _, host_ranks in JOB_HOSTS[:ntraces]:
        pids = {pid_of_rank.get(r) for r, _, _ in host_ranks}
        ts = [e["ts"] for e in events if e["pid"] in pids and e["ph"] != "M"]
        span.append((min(ts), max(ts)) if ts else None)
        first_step.append(min((e["ts"] for e in events if e["pid"] in pids and
                               e.get("args", {}).get("kind") == "step"), default=None))
    if by_steps:
        check(None not in first_step and max(first_step) - min(first_step) < 0.01,
              f"{name}: the hosts' first steps start at {first_step} us")
    elif ntraces > 1:
        check(None not in span and span[1][0] > span[0][1],
              f"{name}: by wall clock the second host's ranks (us {span[1]}) come after "
              f"the first's ({span[0]})")


def check_perfetto_job(vt, traces, work, name, want_ranks, want_real_pids, by_steps=True):
    path = export(vt, traces, "perfetto", os.path.join(work, name + ".json"))
    with open(path) as f:
        events = json.load(f)["traceEvents"]
    names, sort = tracks(events)
    ranks = {pid: RANK_TRACK.match(n) for pid, n in names.items() if RANK_TRACK.match(n)}
    got = sorted(ranks, key=lambda pid: sort.get(pid, 1 << 40))
    check([int(ranks[pid].group(1)) for pid in got] == want_ranks,
          f"{name}: rank tracks in sort order {[names[p] for p in got]}, want ranks {want_ranks}")
    check(len(set(names)) == len(names), f"{name}: two tracks share a pid")
    # every event on a named track: a pid of one trace cannot stand for a
    # process of another
    unnamed = {e["pid"] for e in events} - set(names)
    check(not unnamed, f"{name}: events on unnamed pids {sorted(unnamed)[:5]}")
    real = sorted(int(m.group(3)) for m in ranks.values())
    if want_real_pids:
        check(sorted(ranks) == real, f"{name}: one trace's pids changed: {sorted(ranks)} {real}")
    # each rank's own copies (its dataset's batches) on its own track
    copies = collections.Counter(e["pid"] for e in events if e.get("cat") == "copy")
    for pid in got:
        check(copies[pid] >= 1, f"{name}: no copy on {names[pid]}'s track")
    # each trace's devices are tracks of their own
    gpus = [n for n in names.values() if n.startswith("GPU ")]
    check(len(gpus) == 2 * len(traces), f"{name}: GPU tracks {gpus}")
    check(all(e["ts"] >= 0 for e in events), f"{name}: an event before the job's start")
    check_alignment(events, {int(ranks[pid].group(1)): pid for pid in got}, len(traces), name,
                    by_steps)
    print(f"ok   {name}: {len(events)} events, tracks {[names[p] for p in got]}, "
          f"{sum(copies.values())} copies on them")


def perfetto_main(vt, trainer, sim, work):
    dirs = make_job(vt, trainer, sim, work)
    check_perfetto_job(vt, dirs, work, "job-two-hosts", [0, 1, 2, 3], False)
    check_perfetto_job(vt, dirs[:1], work, "job-one-host", [0, 1], True)
    dirs = make_job(vt, trainer, sim, work, markers=False)
    check_perfetto_job(vt, dirs, work, "job-wall-clock", [0, 1, 2, 3], False, by_steps=False)


def same(values, tolerance):
    return max(values) - min(values) <= tolerance


def check_rank_view(got, name, want_rows):
    ranks = got.get("ranks")
    check(ranks is not None, f"{name}: no rank view")
    if not ranks:
        return
    rows = ranks["rows"]
    check([r["label"] for r in rows] == [f"rank {k}" for k in range(want_rows)],
          f"{name}: rows {[r['label'] for r in rows]}")
    check(all(a["top"] < b["top"] for a, b in zip(rows, rows[1:])),
          f"{name}: rows not drawn top to bottom in rank order")
    # one scale: the same top label and height on every row, and a byte is
    # as many pixels on every row (the peak's mark, the bar)
    check(len({r["max_label"] for r in rows}) == 1,
          f"{name}: scale labels {[r['max_label'] for r in rows]}")
    check(same([r["chart_height"] for r in rows], 0.5),
          f"{name}: chart heights {[r['chart_height'] for r in rows]}")
    big = max(rows, key=lambda r: r["peak_bytes"])
    for r in rows:
        want = big["peak_px"] * r["peak_bytes"] / big["peak_bytes"]
        check(r["peak_px"] is not None and abs(r["peak_px"] - want) <= 1.5,
              f"{name}: {r['label']}'s peak mark {r['peak_px']} px above 0, want {want:.1f}")
        want = big["bar_px"] * r["peak_bytes"] / big["peak_bytes"]
        check(abs(r["bar_px"] - want) <= 1.5,
              f"{name}: {r['label']}'s bar {r['bar_px']} px, want {want:.1f}")
        check(r["bands"] >= 1, f"{name}: {r['label']}'s chart has no band")
        check(r["hover_bytes"] == r["peak_bytes"],
              f"{name}: hovering {r['label']}'s peak shows {r['hover_bytes']} bytes, "
              f"its peak is {r['peak_bytes']}")
    check(big["peak_px"] > 20, f"{name}: the highest peak is {big['peak_px']} px high")
    # rank 0 holds the dataset the others stream: the heavy rank of the
    # first imbalance, marked on its row
    imb = ranks["imbalance"]
    check(imb and imb[0]["category"] == "dataset" and imb[0]["heavy"] == "rank 0",
          f"{name}: imbalance {imb}")
    check("dataset" in rows[0]["badges"] and
          not any("dataset" in r["badges"] for r in rows[1:]),
          f"{name}: dataset marks on rows {[r['badges'] for r in rows]}")
    check(ranks["alignment"].startswith("aligned by step markers: 6 steps on every rank"),
          f"{name}: alignment line {ranks['alignment']!r}")
    labels = [b for b in ranks["labels"] if b["width"] > 0]
    for i, a in enumerate(labels):
        for b in labels[i + 1:]:
            check(not boxes_meet(a, b), f"{name}: labels overlap: {a} {b}")
    print(f"ok   {name}: {len(rows)} rank rows on one scale ({rows[0]['max_label']}), "
          f"{len(labels)} labels apart, imbalance {imb[0]['category'] if imb else None} "
          f"on {imb[0]['heavy'] if imb else None}")


def html_page(vt, chromium, traces, work, name):
    html = export(vt, traces, "html", os.path.join(work, name + ".html"))
    static_checks(html)
    with tempfile.TemporaryDirectory() as profile:
        got = run_page(chromium, html, os.path.join(work, name + ".png"), profile)
    if got is not None:
        check(got["problems"] == [], f"{name}: errors or blocked fetches: {got['problems']}")
        first = report_json(vt, traces[0])
        check(got["charts"] == len(first["devices"]),
              f"{name}: {got['charts']} device charts, the first trace has "
              f"{len(first['devices'])} devices")
    return got or {}


def html_main(vt, trainer, sim, work, chromium):
    if not chromium or not os.path.exists(chromium):
        print("SKIP: no chromium (apt-get install -y chromium)")
        return 77
    dirs = make_job(vt, trainer, sim, work)
    check_rank_view(html_page(vt, chromium, dirs, work, "job-two-hosts"), "job-two-hosts", 4)
    check_rank_view(html_page(vt, chromium, dirs[:1], work, "job-one-host"), "job-one-host", 2)
    plain = make_trace(vt, trainer, sim, os.path.join(work, "plain"),
                       ["--dataset", "whole", "--steps", "4"])
    got = html_page(vt, chromium, [plain], work, "no-ranks")
    check("ranks" not in got, f"no-ranks: a rank view without ranks: {got.get('ranks')}")
    return None


def main():
    mode, vt, trainer, sim, work = sys.argv[1:6]
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    if mode == "perfetto":
        rc = perfetto_main(vt, trainer, sim, work)
    else:
        chromium = sys.argv[6] if len(sys.argv) > 6 else (shutil.which("chromium") or
                                                           shutil.which("chromium-browser"))
        rc = html_main(vt, trainer, sim, work, chromium)
    if rc is not None:
        return rc
    if check_html.failures:
        print(f"{len(check_html.failures)} failure(s)")
        return 1
    print(f"all {mode} job checks passed; files in {work}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
