#!/usr/bin/env python3
"""The HTML export in headless Chromium (Debian package `chromium`, driven by
its own flags, no browser download):
 - the file is self-contained (no URL to fetch, under 10 MB);
 - it loads with no console message, no script error and no network request
   (the page's Content-Security-Policy forbids every fetch; its self-check
   reports CSP violations and Resource Timing entries);
 - it draws one chart per device;
 - hovering each device's peak (a mouse event at that pixel, from the
   page's #selftest mode) shows the same bytes per category as
   `report --json` devices[].categories_at_peak;
 - clicking a band lists its sites with stacks; OOM markers are drawn;
 - each device's accounting panel draws the segments `report --json`
   accounting (and accounting_at_peak) lists, with labels that do not
   overlap; on the accounting job (a context reservation of 48 MiB, a
   library stand-in that allocates 32 MiB for itself) the unexplained
   segment is the reservation within 1 %; with the stand-in libnvidia-ml of
   tests/simdriver naming another process, an "other processes" segment
   and a table row that names it;
 - a screenshot is kept: BUILD/tests/export/html/*.png
    check_html.py VRAMTRACE TRAINER SIMDRIVER_DIR WORKDIR ACCOUNTING_JOB [CHROMIUM]
Exit 77 (skipped) when no Chromium is installed."""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from trainer_trace import export, make_trace, report_json  # noqa: E402

ANALYZER_TESTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "analyzer")
sys.path.insert(0, ANALYZER_TESTS)
from checklib import unpack_fixture  # noqa: E402

CATS = ["dataset", "prefetch", "weights", "optimizer", "gradients", "activations", "pool",
        "unknown"]
MIB = 1 << 20
RESERVE = 48 * MIB  # the simulated context's reservation in the accounting job
OTHER = 256 * MIB   # another process's bytes, per the stand-in libnvidia-ml
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what)


def chromium_flags(profile):
    return ["--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
            "--no-first-run", "--user-data-dir=" + profile, "--virtual-time-budget=5000",
            "--window-size=1400,1900"]


def static_checks(path):
    size = os.path.getsize(path)
    check(size < 10 * 1024 * 1024, f"{path}: {size} bytes, over 10 MB")
    text = open(path, encoding="utf-8").read()
    urls = set(re.findall(r"(?:https?|ftp)://[^\s\"'<>)]+", text)) - {"http://www.w3.org/2000/svg"}
    check(not urls, f"URLs in the page: {sorted(urls)[:5]}")
    for pat in (r"<script[^>]+src=", r"<link[^>]+href=", r"<img[^>]+src=", r"@import",
                r"\bfetch\(", r"XMLHttpRequest", r"<iframe"):
        check(not re.search(pat, text, re.I), f"the page may fetch something: /{pat}/")
    return size


def run_page(chromium, path, shot, profile):
    url = "file://" + os.path.abspath(path) + "#selftest"
    p = subprocess.run([chromium] + chromium_flags(profile) + ["--enable-logging=stderr", "--v=0",
                       "--dump-dom", url], capture_output=True, text=True, timeout=120)
    m = re.search(r'<pre id="vt-selftest">(.*?)</pre>', p.stdout, re.S)
    console = [l for l in p.stderr.splitlines() if "CONSOLE" in l]
    check(not console, f"console messages: {console[:3]}")
    subprocess.run([chromium] + chromium_flags(profile) + ["--hide-scrollbars",
                   "--screenshot=" + shot, url], capture_output=True, timeout=120)
    check(os.path.exists(shot) and os.path.getsize(shot) > 10000, f"no screenshot {shot}")
    if not m:
        check(False, f"{path}: the page's self-check did not run: {p.stderr[-2000:]}")
        return None
    return json.loads(m.group(1).replace("&quot;", '"').replace("&amp;", "&")
                      .replace("&lt;", "<").replace("&gt;", ">"))


def boxes_meet(a, b):
    return (a["x"] < b["x"] + b["width"] and b["x"] < a["x"] + a["width"] and
            a["y"] < b["y"] + b["height"] and b["y"] < a["y"] + a["height"])


def text_seconds(ns):
    """A time as the text report writes it (vt_format_seconds)."""
    s = ns / 1e9
    return ("%.1f s" % s) if s >= 10 else ("%.3f s" % s) if s >= 0.01 else ("%.6f s" % s)


def report_segments(a):
    """The segments a bar must have, in order: (kind, label, bytes)."""
    segs = [("framework", "framework allocations", a["framework_bytes"]),
            ("pools", "allocator pools", a["pool_bytes"])]
    segs += [("library", lib["module"], lib["bytes"]) for lib in a["libraries"]]
    segs += [("vmm", "VMM mappings", a["vmm_bytes"]),
             ("others", "other processes", a.get("other_processes_bytes", 0)),
             ("unexplained", "unexplained", a["unexplained_bytes"])]
    return [s for s in segs if s[2] > 0]


def check_accounting_panels(name, rep, got):
    """Each reading of report --json drawn as a bar with its segments, in
    proportion, and labels that do not overlap."""
    pages = {d["ordinal"]: d["readings"] for d in got.get("accounting", [])}
    for key in ("accounting_at_peak", "accounting"):
        for a in rep.get(key, []):
            readings = [r for r in pages.get(a["device"], []) if r["used"] == a["used_bytes"]]
            check(readings, f"{name}: GPU {a['device']}: no accounting bar for {key} "
                  f"({a['used_bytes']} used)")
            if not readings:
                continue
            r = readings[0]
            drawn = [(s["kind"], s["label"], s["bytes"]) for s in r["segments"]]
            check(drawn == report_segments(a), f"{name}: GPU {a['device']} {key}: segments "
                  f"{drawn}, report says {report_segments(a)}")
            check(r["table_rows"] == len(drawn), f"{name}: {r['table_rows']} table rows for "
                  f"{len(drawn)} segments")
            whole = max(a["used_bytes"], sum(s[2] for s in drawn), 1)
            for s in r["segments"]:
                want = r["bar"]["width"] * s["bytes"] / whole
                check(abs(s["box"]["width"] - want) <= max(1.0, want / 100),
                      f"{name}: segment {s['label']} {s['box']['width']:.1f} px wide, want "
                      f"{want:.1f}")
            labels = r["labels"]
            check(len(labels) == len(drawn), f"{name}: {len(labels)} labels for {len(drawn)} "
                  f"segments")
            for i, la in enumerate(labels):
                for lb in labels[i + 1:]:
                    check(not boxes_meet(la["box"], lb["box"]), f"{name}: GPU {a['device']}: "
                          f"labels overlap: {la['text']!r} and {lb['text']!r}")
    return sum(len(r) for r in pages.values())


def check_trace(vt, chromium, trace, work, name, want_ooms=False, lead_in_from=None,
                recording_cost=True):
    rep = report_json(vt, trace)
    html = export(vt, trace, "html", os.path.join(work, name + ".html"))
    size = static_checks(html)
    with tempfile.TemporaryDirectory() as profile:
        got = run_page(chromium, html, os.path.join(work, name + ".png"), profile)
    if got is None:
        return
    check(got["problems"] == [], f"{name}: errors or blocked fetches: {got['problems']}")
    check(got["resources"] == 0, f"{name}: {got['resources']} network requests")
    check(got["charts"] == len(rep["devices"]),
          f"{name}: {got['charts']} charts for {len(rep['devices'])} devices")
    if lead_in_from is not None:
        lo = (got.get("zoom") or {}).get("full", [0])[0]
        check(lo >= lead_in_from, f"{name}: the chart starts at {lo} ns, nothing was allocated "
              f"before {lead_in_from} ns")
    # the shim's own time in the header line, where the logs have it
    said = "vramtrace's own time" in got.get("subtitle", "")
    check(said == recording_cost, f"{name}: the header line {'lacks' if recording_cost else 'has'} "
          f"the recording cost: {got.get('subtitle')!r}")
    check(got["flags"] == len(rep["flags"]), f"{name}: {got['flags']} flags shown, "
          f"report has {len(rep['flags'])}")
    check(got["site_rows"] == len(rep["sites"]) or got["site_rows"] >= 10,
          f"{name}: {got['site_rows']} site rows")
    by_dev = {d["ordinal"]: d for d in got["devices"]}
    for d in rep["devices"]:
        tip = by_dev.get(d["ordinal"])
        check(tip is not None, f"{name}: no chart for GPU {d['ordinal']}")
        if not tip:
            continue
        check(tip["t_ns"] == d["peak_t_ns"],
              f"{name}: GPU {d['ordinal']} tooltip at t={tip['t_ns']}, peak at {d['peak_t_ns']}")
        check(tip["total"] == d["peak_bytes"],
              f"{name}: GPU {d['ordinal']} tooltip total {tip['total']}, peak {d['peak_bytes']}")
        for c in CATS:
            check(tip["categories"].get(c, 0) == d["categories_at_peak"][c],
                  f"{name}: GPU {d['ordinal']} tooltip {c} {tip['categories'].get(c, 0)}, "
                  f"report {d['categories_at_peak'][c]}")
    band = got.get("band", {})
    check(band.get("sites", 0) >= 1, f"{name}: clicking the {band.get('category')} band listed no site")
    if rep["sites"] and rep["sites"][0]["site"] != "(no stack)":
        check(band.get("frames", 0) >= 1, f"{name}: the band's first site shows no stack frames")
    zoom = got.get("zoom") or {}
    view = zoom.get("view")
    lo, hi = zoom.get("full") or (0, zoom.get("end_t_ns", 0))
    check(hi == zoom.get("end_t_ns") and 0 <= lo < hi, f"{name}: the unzoomed chart's span: {zoom}")
    quarter = (hi - lo) / 4
    check(view is not None and abs(view[0] - (lo + quarter)) <= (hi - lo) / 100 and
          abs(view[1] - (hi - quarter)) <= (hi - lo) / 100,
          f"{name}: dragging over the middle half did not zoom to it: {zoom}")
    check(zoom.get("bands", 0) >= 1 and zoom.get("reset"), f"{name}: zoomed chart empty or not reset: {zoom}")
    if want_ooms:
        check(got["ooms"] >= 1, f"{name}: no out-of-memory marker drawn")
        check(got.get("oom_box") == 1 and got.get("first_flag") == "out_of_memory",
              f"{name}: the out-of-memory finding is not the first box: {got.get('first_flag')}")
    check(got.get("oom_box") == (1 if rep["flags"] and rep["flags"][0]["kind"] == "out_of_memory" else 0),
          f"{name}: an out-of-memory box without the finding, or the reverse")
    # bytes whose category is a guess are said as such: the note at the top
    # when report --json lists any, and "category?" rows in the site table
    unsure = rep.get("low_confidence_at_peak", [])
    check(got.get("unsure_note") == (1 if unsure else 0),
          f"{name}: low-confidence note {got.get('unsure_note')}, report lists {len(unsure)}")
    if unsure:
        check(got.get("unsure_sites", 0) >= 1, f"{name}: no site row marked as a guess")
    for d, lab in zip(rep["devices"], got.get("labels", [])):
        if d["total_bytes"] and d["peak_bytes"] * 10 >= d["total_bytes"] * 9:
            check(lab["peak"] and lab["capacity"], f"{name}: GPU {d['ordinal']} lacks a label: {lab}")
        if lab["peak"] and lab["capacity"]:
            check(not boxes_meet(lab["peak"], lab["capacity"]),
                  f"{name}: GPU {d['ordinal']}: the peak and capacity labels overlap: {lab}")
    bars = check_accounting_panels(name, rep, got)
    if rep["devices"]:
        want = text_seconds(rep["devices"][0]["peak_t_ns"])
        check(got.get("peak_time_text") == want,
              f"{name}: the page says the peak was at {got.get('peak_time_text')}, the text {want}")
    print(f"ok   {name}: {size} bytes, {got['charts']} chart(s), tooltips at the peaks match "
          f"report --json, band '{band.get('category')}' lists {band.get('sites')} site(s) "
          f"({band.get('frames')} frames), {got['ooms']} OOM marker(s), "
          f"{len(unsure)} low-confidence group(s), {got.get('unsure_sites')} site row(s) marked, "
          f"{bars} accounting bar(s)")
    return rep, got


def check_accounting_nvml(vt, chromium, job, sim, work):
    """The accounting job small (2 MiB its own, 1 MiB from the library) beside
    another process of 256 MiB that the stand-in libnvidia-ml names: an
    "other processes" segment, and the small segments' labels in rows
    below the bar, apart."""
    trace = os.path.join(work, "accounting-nvml")
    other = subprocess.Popen(["sleep", "60"])
    try:
        env = dict(os.environ, VT_SIM_CAPACITY="1G", VT_SIM_CONTEXT_RESERVE=str(RESERVE + OTHER),
                   LD_LIBRARY_PATH=":".join([os.path.join(sim, "nvml"), sim, os.path.dirname(job)]),
                   VT_FAKE_NVML_OTHERS=f"{other.pid}:{OTHER}")
        subprocess.run([vt, "run", "-o", trace, "--", job, "2", "1"], env=env, check=True,
                       capture_output=True, timeout=60)
    finally:
        other.kill()
        other.wait()
    res = check_trace(vt, chromium, trace, work, "accounting-nvml")
    if not res:
        return
    readings = (res[1].get("accounting") or [{}])[0].get("readings", [])
    check(readings, "accounting-nvml: no accounting panel drawn")
    for r in readings:
        seg = {s["kind"]: s for s in r["segments"]}
        check(seg.get("others", {}).get("bytes") == OTHER,
              f"accounting-nvml: {r['which']}: the other processes' segment {seg.get('others')}")
        check(f"pid {other.pid} sleep 256 MiB" in r["table_text"],
              f"accounting-nvml: {r['which']}: the table does not name the process: "
              f"{r['table_text']!r}")
        check(r["nvml_self"] and "This process per NVML" in r["nvml_self"],
              f"accounting-nvml: {r['which']}: this process's bytes per NVML: {r['nvml_self']}")
        below = [la for la in r["labels"] if la["box"]["y"] > r["segments"][0]["box"]["y"] +
                 r["segments"][0]["box"]["height"]]
        check(len(below) >= 2, f"accounting-nvml: {r['which']}: small segments' labels not "
              f"below the bar: {r['labels']}")


def check_accounting_job(vt, chromium, job, sim, work):
    """The accounting job (tests/oom): 64 MiB of its own, 32 MiB from a
    library stand-in named libcublasLt.so, a context holding 48 MiB back."""
    trace = os.path.join(work, "accounting")
    env = dict(os.environ, LD_LIBRARY_PATH=sim + ":" + os.path.dirname(job),
               VT_SIM_CAPACITY="1G", VT_SIM_CONTEXT_RESERVE="48M")
    subprocess.run([vt, "run", "-o", trace, "--", job, "64", "32"], env=env, check=True,
                   capture_output=True, timeout=60)
    res = check_trace(vt, chromium, trace, work, "accounting")
    if not res:
        return
    rep, got = res
    readings = (got.get("accounting") or [{}])[0].get("readings", [])
    check(readings, "accounting: no accounting panel drawn")
    for r in readings:
        seg = {s["kind"]: s for s in r["segments"]}
        unexplained = seg.get("unexplained", {}).get("bytes", 0)
        check(abs(unexplained - RESERVE) <= RESERVE / 100,
              f"accounting: {r['which']}: unexplained {unexplained}, the reservation {RESERVE}")
        lib = seg.get("library", {})
        check(lib.get("label", "").startswith("libcublasLt.so") and lib.get("bytes") == 32 * MIB,
              f"accounting: {r['which']}: the library segment {lib}")
        check(seg.get("framework", {}).get("bytes") == 64 * MIB,
              f"accounting: {r['which']}: the framework segment {seg.get('framework')}")
        check("used of" in r["heading"] and " at " in r["heading"],
              f"accounting: {r['which']}: the reading is not said: {r['heading']!r}")


def main():
    vt, trainer, sim, work, accounting_job = sys.argv[1:6]
    chromium = sys.argv[6] if len(sys.argv) > 6 else (shutil.which("chromium") or
                                                        shutil.which("chromium-browser"))
    if not chromium or not os.path.exists(chromium):
        print("SKIP: no chromium (apt-get install -y chromium)")
        return 77
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    two = make_trace(vt, trainer, sim, os.path.join(work, "two"),
                     ["--dataset", "whole", "--devices", "2", "--steps", "12"])
    check_trace(vt, chromium, two, work, "two-devices")
    oom = make_trace(vt, trainer, sim, os.path.join(work, "oom"),
                     ["--dataset", "whole", "--dataset-bytes", "96M"], devices=1,
                     capacity="128M", expect_ok=False)
    check_trace(vt, chromium, oom, work, "oom", want_ooms=True)
    # a real job: PyTorch on an H200 imported for 6.2 s before its first
    # allocation; the chart starts near it, not at 0
    real = os.path.join(work, "real")
    os.makedirs(real)
    unpack_fixture(os.path.join(ANALYZER_TESTS, "real", "h200-torch-per-tensor"), real)
    # (recorded before the shim timed itself: no recording cost)
    check_trace(vt, chromium, real, work, "real-h200", lead_in_from=6_000_000_000,
                recording_cost=False)
    check_accounting_job(vt, chromium, accounting_job, sim, work)
    check_accounting_nvml(vt, chromium, accounting_job, sim, work)
    if failures:
        print(f"{len(failures)} failure(s)")
        return 1
    print(f"all HTML checks passed; screenshots in {work}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
