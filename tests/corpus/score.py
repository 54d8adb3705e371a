#!/usr/bin/env python3
"""Score vramtrace's analyzer on the corpus (tests/corpus/README.md).

Every job in jobs.txt runs under `vramtrace run` on the simulated driver and
writes its ground truth (--truth); `vramtrace report DIR --json --allocs` is
compared with it:

  accuracy  bytes live at each device's peak that carry their true category,
            over the bytes live at those peaks. The peak is the TRUTH's: the
            job's own allocation/free record is replayed in order per device
            and the first moment with the most live bytes is taken, so the
            score does not depend on the analyzer's timeline. (The report's
            own live_at_peak view is printed beside it as `rpeak`.)
            Allocations are matched as matrix_check.py does: (device,
            address, n-th allocation at that address); a VMM allocation's
            address is its handle. Truth `other` counts as right when the
            report says unknown.
  findings  whole_dataset_upload and prefetch_depth, per device: true
            positive, false positive, missed, or right no-finding; steps found
            vs true; per-step leaks (`leak DEV BYTES_PER_STEP`) against the
            growth_per_step findings: found when one finding on that device
            says bytes_per_step within 5 %; failed
            allocations (`failed_alloc` lines) against totals.failed_allocs.
  a job that dies on purpose writes `exit_code N`: that exit status is its
  success.
Sets (jobs.txt's second column): no = tuning, yes = hold1, hold2 = hold2,
hold3 = hold3, hold4 = hold4, hold5 = hold5, hold6 = hold6, hold7 = hold7,
hold8 = hold8, hold9 = hold9, hold10 = hold10, hold11 = hold11, hold12 = hold12,
hold13 = hold13, hold14 = hold14; --set holdout takes hold1, hold2, hold3, hold4, hold5,
hold6, hold7, hold8, hold9, hold10, hold11, hold12, hold13 and hold14.

Report-only (default): exit 0 when every job ran and left a trace, 1 when a
job failed or the scorer broke. --require: also exit 1 unless every job is
>= 90% accurate, the mean is >= 97% and no whole_dataset_upload is false.
--growth: exit 1 unless every leak job has exactly one growth_per_step
finding with the right bytes per step and no other job has any.
"""
import argparse
import concurrent.futures
import itertools
import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
REQ_MIN, REQ_MEAN = 0.90, 0.97
SIZE_TOLERANCE = 0.02
# jobs.txt's set column -> the set's name; every set but `tuning` is holdout
SETS = {"no": "tuning", "yes": "hold1", "hold2": "hold2", "hold3": "hold3",
        "hold4": "hold4", "hold5": "hold5", "hold6": "hold6", "hold7": "hold7",
        "hold8": "hold8", "hold9": "hold9", "hold10": "hold10", "hold11": "hold11",
        "hold12": "hold12", "hold13": "hold13", "hold14": "hold14"}


def read_manifest(path):
    jobs = []
    with open(path) as f:
        for line in f:
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            name, group, cmd = line.split(None, 2)
            if group not in SETS:
                raise ValueError("jobs.txt: %s: the set column must be one of %s" %
                                 (name, ", ".join(SETS)))
            jobs.append({"name": name, "holdout": group != "no", "set": SETS[group], "cmd": cmd})
    return jobs


def parse_truth(path):
    t = {"events": [], "whole": [], "no_whole": False, "prefetch": [], "no_prefetch": False,
         "steps": {}, "leaks": [], "config": {}, "exit_code": 0, "failed": []}
    with open(path) as f:
        for line in f:
            w = line.split()
            if not w or w[0].startswith("#"):
                continue
            k = w[0]
            if k == "alloc":
                t["events"].append(("alloc", int(w[1]), int(w[2], 16), int(w[3]), w[4]))
            elif k == "free":
                t["events"].append(("free", int(w[1]), int(w[2], 16)))
            elif k == "config":
                t["config"] = dict(kv.split("=", 1) for kv in w[1:])
            elif k == "finding" and w[1] == "whole_dataset_upload":
                t["whole"].append((int(w[2]), int(w[3])))
            elif k == "no_finding" and w[1] == "whole_dataset_upload":
                t["no_whole"] = True
            elif k == "finding" and w[1] == "prefetch_depth":
                t["prefetch"].append((int(w[2]), int(w[3]), int(w[4])))
            elif k == "no_finding" and w[1] == "prefetch_depth":
                t["no_prefetch"] = True
            elif k == "steps":
                t["steps"][int(w[1])] = int(w[2])
            elif k == "leak":
                t["leaks"].append((int(w[1]), int(w[2])))
            elif k == "exit_code":
                t["exit_code"] = int(w[1])
            elif k == "failed_alloc":
                t["failed"].append((int(w[1]), int(w[2])))
    return t


def truth_peak(events):
    """Per device: the identities live at the first moment of most live bytes."""
    seen, live, live_bytes, best = {}, {}, {}, {}
    for e in events:
        dev, addr = e[1], e[2]
        if e[0] == "alloc":
            n = seen.get((dev, addr), 0)
            seen[(dev, addr)] = n + 1
            live.setdefault(dev, {})[(dev, addr)] = ((dev, addr, n), e[3], e[4])
            live_bytes[dev] = live_bytes.get(dev, 0) + e[3]
            if live_bytes[dev] > best.get(dev, (-1, None))[0]:
                best[dev] = (live_bytes[dev], list(live[dev].values()))
        else:
            ent = live.get(dev, {}).pop((dev, addr), None)
            if ent is None:
                raise ValueError("truth frees 0x%x on %d, not live" % (addr, dev))
            live_bytes[dev] -= ent[1]
    return best


def report_identities(allocs):
    seen, out = {}, {}
    for a in sorted(allocs, key=lambda a: a["t_alloc_ns"]):
        k = (a["device"], int(a["addr"], 16))
        n = seen.get(k, 0)
        seen[k] = n + 1
        out[k + (n,)] = a
    return out


def same_cat(truth_cat, got):
    return truth_cat == got or (truth_cat == "other" and got in ("unknown", "other"))


def accuracy(truth, rep):
    best = truth_peak(truth["events"])
    got = report_identities(rep.get("allocations", []))
    live = ok = 0
    wrong = {}
    for dev, (nbytes, entries) in best.items():
        for ident, b, cat in entries:
            live += b
            a = got.get(ident)
            gcat = a["category"] if a else "absent"
            if same_cat(cat, gcat):
                ok += b
            else:
                key = "%s->%s" % (cat, gcat)
                wrong[key] = wrong.get(key, 0) + b
    # the report's own peak view, for comparison
    rl = sum(a["bytes"] for a in got.values() if a.get("live_at_peak"))
    tcat = {}
    seen = {}
    for e in truth["events"]:
        if e[0] == "alloc":
            n = seen.get((e[1], e[2]), 0)
            seen[(e[1], e[2])] = n + 1
            tcat[(e[1], e[2], n)] = e[4]
    rok = sum(a["bytes"] for k, a in got.items()
              if a.get("live_at_peak") and same_cat(tcat.get(k, "?"), a["category"]))
    return (ok / live if live else 1.0), wrong, (rok / rl if rl else 1.0)


def reasons_at_peak(truth, rep):
    """Per reason the report gave: the bytes at the truth's peak it got
    right and, by true category, the bytes it got wrong."""
    got = report_identities(rep.get("allocations", []))
    out = {}
    for dev, (nbytes, entries) in truth_peak(truth["events"]).items():
        for ident, b, cat in entries:
            a = got.get(ident)
            if not a:
                continue
            r = out.setdefault(a.get("reason", "?"), {"right": 0, "wrong": {}})
            if same_cat(cat, a["category"]):
                r["right"] += b
            else:
                key = "%s->%s" % (cat, a["category"])
                r["wrong"][key] = r["wrong"].get(key, 0) + b
    return out


def print_reasons(results):
    """--by-reason: which rule is wrong most, over every job scored."""
    table = {}
    for res in results:
        for reason, r in res.get("reasons", {}).items():
            t = table.setdefault(reason, {"right": 0, "wrong": {}, "jobs": set()})
            t["right"] += r["right"]
            for k, v in r["wrong"].items():
                t["wrong"][k] = t["wrong"].get(k, 0) + v
            if r["wrong"]:
                t["jobs"].add(res["name"])
    print("%10s %10s  %-60s  %s" % ("wrong MiB", "right MiB", "reason", "wrong as (jobs)"))
    for reason, t in sorted(table.items(), key=lambda kv: -sum(kv[1]["wrong"].values())):
        wrong = sum(t["wrong"].values())
        kinds = ", ".join("%s %.0f" % (k, v / 2**20) for k, v in
                          sorted(t["wrong"].items(), key=lambda kv: -kv[1])[:3])
        print("%10.1f %10.1f  %-60.60s  %s (%s)" % (wrong / 2**20, t["right"] / 2**20, reason,
                                                   kinds or "-", ", ".join(sorted(t["jobs"]))))


def near(a, b):
    return abs(a - b) <= SIZE_TOLERANCE * max(a, b)


def score_whole(truth, flags):
    """-> (tp, fp, missed, text)"""
    exp = {}
    for d, b in truth["whole"]:
        exp.setdefault(d, []).append(b)
    reported = []
    for f in flags:
        if f["kind"] == "whole_dataset_upload":
            for d, b in zip(f["devices"], f["bytes"]):
                reported.append((d, b))
    tp = fp = 0
    matched = set()
    unmatched = []
    for d, b in reported:
        # the true arrays of that device not yet found whose sizes add up
        # nearest to the reported bytes: one array, or several reported as
        # one finding (x and y uploaded together, the findings merged)
        free = [i for i in range(len(exp.get(d, []))) if (d, i) not in matched]
        best = None
        for r in range(1, min(len(free), 6) + 1):
            for combo in itertools.combinations(free, r):
                total = sum(exp[d][i] for i in combo)
                if near(b, total) and (best is None or abs(b - total) < best[0]):
                    best = (abs(b - total), combo)
        if best:
            matched.update((d, i) for i in best[1])
            tp += 1
        else:
            unmatched.append((d, b))
    for d, b in unmatched:
        # a table uploaded column by column, reported as one finding: more
        # arrays than the combinations above try, once the others matched;
        # the largest first while they fit
        combo, total = [], 0
        for i in sorted((i for i in range(len(exp.get(d, []))) if (d, i) not in matched),
                        key=lambda i: -exp[d][i]):
            if total + exp[d][i] <= b * (1 + SIZE_TOLERANCE):
                combo.append(i)
                total += exp[d][i]
        if combo and near(b, total):
            matched.update((d, i) for i in combo)
            tp += 1
        else:
            fp += 1
    missed = sum(len(v) for v in exp.values()) - len(matched)
    if not exp and not reported:
        text = "right no-finding"
    else:
        parts = []
        if tp:
            parts.append("%d true positive" % tp)
        if fp:
            parts.append("%d FALSE POSITIVE %s" % (fp, [(d, b) for d, b in reported
                                                       if not any(near(b, e) for e in exp.get(d, []))]))
        if missed:
            parts.append("%d missed" % missed)
        text = ", ".join(parts)
    return tp, fp, missed, text


def score_prefetch(truth, flags):
    exp = {d: (depth, b) for d, depth, b in truth["prefetch"]}
    rep = {}
    for f in flags:
        if f["kind"] == "prefetch_depth":
            for d in f["devices"]:
                rep[d] = (f.get("depth"), f.get("batch_bytes"))
    out, ok = [], True
    for d in sorted(set(exp) | set(rep)):
        if d in exp and d in rep:
            if exp[d][0] == rep[d][0]:
                out.append("dev%d true positive (depth %s)" % (d, rep[d][0]))
            else:
                ok = False
                out.append("dev%d WRONG depth %s, true %d" % (d, rep[d][0], exp[d][0]))
        elif d in exp:
            ok = False
            out.append("dev%d missed (true depth %d x %d B)" % (d, exp[d][0], exp[d][1]))
        else:
            ok = False
            out.append("dev%d FALSE POSITIVE (depth %s)" % (d, rep[d][0]))
    if not out:
        out.append("right no-finding")
    return ok, "; ".join(out)


def run_job(job, args, work):
    name = job["name"]
    trace = os.path.join(work, name + ".trace")
    truth = os.path.join(work, name + ".truth")
    cmd = job["cmd"].replace("@BIN@", args.bindir).replace("@SRC@", HERE).replace(
        "@PY@", sys.executable)
    argv = shlex.split(cmd) + ["--truth", truth]
    env = dict(os.environ)
    env["LD_LIBRARY_PATH"] = args.simdriver + (":" + env["LD_LIBRARY_PATH"]
                                               if env.get("LD_LIBRARY_PATH") else "")
    env.setdefault("VT_SIM_DEVICES", "4")
    env.setdefault("VT_SIM_CAPACITY", "8G")
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    res = {"name": name, "holdout": job["holdout"], "set": job["set"], "error": None}
    p = subprocess.run([args.vramtrace, "run", "-o", trace, "--"] + argv, env=env,
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=args.timeout)
    # a job that dies on purpose (out of memory) says so in its truth
    expected_exit = parse_truth(truth)["exit_code"] if os.path.exists(truth) else 0
    if p.returncode != expected_exit or not os.path.exists(truth):
        res["error"] = "job failed (exit %d): %s" % (p.returncode, p.stderr.decode(
            errors="replace").strip()[-400:])
        return res
    r = subprocess.run([args.vramtrace, "report", trace, "--json", "--allocs"], env=env,
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=args.timeout)
    if r.returncode != 0:
        res["error"] = "report failed (exit %d): %s" % (r.returncode, r.stderr.decode(
            errors="replace").strip()[-400:])
        return res
    rep = json.loads(r.stdout)
    t = parse_truth(truth)
    res["acc"], res["wrong"], res["rpeak"] = accuracy(t, rep)
    if getattr(args, "by_reason", False):  # fold_compare.py passes its own arguments
        res["reasons"] = reasons_at_peak(t, rep)
    flags = rep.get("flags", [])
    res["whole"] = score_whole(t, flags)
    res["prefetch"] = score_prefetch(t, flags)
    true_steps = max(t["steps"].values()) if t["steps"] else 0
    st = rep.get("steps", {})
    res["steps"] = (st.get("count", 0), st.get("source", "?"), true_steps)
    res["leak"], res["leak_ok"] = score_growth(t, flags)
    res["failed"] = (rep.get("totals", {}).get("failed_allocs", 0), len(t["failed"]))
    res["mode"] = rep["processes"][0]["mode"] if rep.get("processes") else "?"
    if args.keep:
        os.makedirs(args.keep, exist_ok=True)
        shutil.copy(truth, os.path.join(args.keep, name + ".truth"))
        with open(os.path.join(args.keep, name + ".report.json"), "wb") as f:
            f.write(r.stdout)
    return res


def guarded(job, args, work):
    """A job's failure (crash, timeout, unreadable truth or report) is its
    result, not the scorer's end."""
    try:
        return run_job(job, args, work)
    except Exception as e:  # noqa: BLE001 - reported per job, and fails the run
        return {"name": job["name"], "holdout": job["holdout"], "set": job["set"],
                "error": "%s: %s" % (type(e).__name__, e)}


def score_growth(t, flags):
    """(text, right): each true leak matched by one growth_per_step finding on
    its device whose bytes_per_step is within 5 %; any other is false."""
    grown = [f for f in flags if f["kind"] == "growth_per_step"]
    if not t["leaks"]:
        return ("%d FALSE POSITIVE" % len(grown) if grown else None), not grown
    words, ok = [], len(grown) == len(t["leaks"])
    for dev, per_step in t["leaks"]:
        hit = [f for f in grown if dev in f["devices"]
               and abs(f["bytes_per_step"] - per_step) <= 0.05 * per_step]
        ok = ok and len(hit) == 1
        words.append("dev%d %d B/step %s" % (dev, per_step, "found" if hit else "missed"))
    if len(grown) > len(t["leaks"]):
        words.append("%d more growth findings" % (len(grown) - len(t["leaks"])))
    return "; ".join(words), ok


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--vramtrace", required=True)
    ap.add_argument("--bindir", required=True, help="the built corpus jobs (build/tests/corpus)")
    ap.add_argument("--simdriver", required=True, help="folder of the simulated libcuda.so.1")
    ap.add_argument("--jobs", default=os.path.join(HERE, "jobs.txt"))
    ap.add_argument("--set", default="all",
                    choices=("all", "tuning", "holdout", "hold1", "hold2", "hold3", "hold4",
                             "hold5", "hold6", "hold7", "hold8", "hold9", "hold10", "hold11",
                             "hold12", "hold13", "hold14"),
                    help="holdout: hold1, hold2, hold3, hold4, hold5, hold6, hold7, hold8, hold9, "
                         "hold10, hold11, hold12, hold13 and hold14 (jobs.txt's set column yes, "
                         "hold2, hold3, hold4, hold5, hold6, hold7, hold8, hold9, hold10, hold11, "
                         "hold12, hold13, hold14)")
    ap.add_argument("--only", help="jobs whose name contains this (or one of these, "
                    "comma-separated)")
    ap.add_argument("--whole-found", action="store_true",
                    help="fail unless every job's whole_dataset_upload findings are exactly "
                         "the true ones (none missed, none false)")
    ap.add_argument("--require", action="store_true",
                    help="fail unless each job >= 90%%, mean >= 97%%, no false whole_dataset_upload")
    ap.add_argument("--floor", metavar="MIN,MEAN,FALSE",
                    help="fail unless every job >= MIN %%, the mean >= MEAN %% and at most FALSE "
                         "false whole_dataset_upload findings (the regression floor ctest uses)")
    ap.add_argument("--growth", action="store_true",
                    help="fail unless each leak job has its one growth_per_step finding (bytes "
                         "per step within 5%%) and no other job has any")
    ap.add_argument("--keep", help="copy truths and reports here")
    ap.add_argument("--by-reason", action="store_true",
                    help="also print, per reason the report gave, the bytes at peak it got right "
                         "and wrong over all jobs scored (which rule to look at first)")
    ap.add_argument("-j", type=int, default=2)
    ap.add_argument("--timeout", type=int, default=120)
    args = ap.parse_args()
    jobs = read_manifest(args.jobs)
    if args.set == "holdout":
        jobs = [j for j in jobs if j["holdout"]]
    elif args.set != "all":
        jobs = [j for j in jobs if j["set"] == args.set]
    if args.only:
        parts = args.only.split(",")
        jobs = [j for j in jobs if any(p in j["name"] for p in parts)]
    with tempfile.TemporaryDirectory(prefix="vt-corpus-") as work:
        with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, args.j)) as ex:
            results = list(ex.map(lambda j: guarded(j, args, work), jobs))
    failed, accs, ge90, false_whole = 0, [], 0, 0
    counts = {"whole_tp": 0, "whole_missed": 0, "prefetch_ok": 0, "steps_ok": 0}
    print("%-26s %-4s %-10s %8s %8s  %s" % ("job", "set", "mode", "accuracy", "rpeak", "details"))
    for r in results:
        tag = {"tuning": "tune", "hold1": "hold", "hold2": "hld2", "hold3": "hld3",
               "hold4": "hld4", "hold5": "hld5", "hold6": "hld6",
               "hold7": "hld7", "hold8": "hld8", "hold9": "hld9", "hold10": "hl10",
               "hold11": "hl11", "hold12": "hl12", "hold13": "hl13",
               "hold14": "hl14"}[r["set"]]
        if r["error"]:
            failed += 1
            print("%-26s %-4s %-10s %8s %8s  ERROR %s" % (r["name"], tag, "?", "-", "-", r["error"]))
            continue
        accs.append(r["acc"])
        ge90 += r["acc"] >= REQ_MIN
        tp, fp, missed, wtext = r["whole"]
        false_whole += fp
        counts["whole_tp"] += tp
        counts["whole_missed"] += missed
        pok, ptext = r["prefetch"]
        counts["prefetch_ok"] += pok
        found, src, true_steps = r["steps"]
        counts["steps_ok"] += found == true_steps
        wrong = ", ".join("%s %.1f MiB" % (k, v / 2**20) for k, v in
                          sorted(r["wrong"].items(), key=lambda kv: -kv[1]))
        print("%-26s %-4s %-10s %7.1f%% %7.1f%%  %s" % (r["name"], tag, r["mode"], 100 * r["acc"],
                                                       100 * r["rpeak"], wrong or "all right"))
        print("%-26s   whole_dataset_upload: %s" % ("", wtext))
        print("%-26s   prefetch_depth: %s" % ("", ptext))
        print("%-26s   steps: %d found (%s), %d true%s" % ("", found, src, true_steps,
              "" if r["leak"] is None else "; leak: " + r["leak"]))
        if r["failed"] != (0, 0):
            print("%-26s   failed allocations: %d reported, %d true" % ("", *r["failed"]))
    n = len(results)
    mean = sum(accs) / len(accs) if accs else 0.0
    print("jobs run: %d of %d (set %s)" % (n - failed, n, args.set))
    print("whole_dataset_upload: %d true positive, %d missed; prefetch_depth right on %d jobs; "
          "steps right on %d jobs" % (counts["whole_tp"], counts["whole_missed"],
                                      counts["prefetch_ok"], counts["steps_ok"]))
    print("mean accuracy: %.1f%%" % (100 * mean))
    print("jobs >= 90%%: %d of %d" % (ge90, n))
    print("false whole_dataset_upload findings: %d" % false_whole)
    if args.by_reason:
        print_reasons(r for r in results if not r["error"])
    if failed:
        return 1
    if args.floor:
        fmin, fmean, ffalse = (float(x) for x in args.floor.split(","))
        low = [r["name"] for r in results if not r["error"] and 100 * r["acc"] < fmin]
        if low or 100 * mean < fmean or false_whole > ffalse:
            print("--floor %s: not met (below %.1f%%: %s; mean %.1f%%; false "
                  "whole_dataset_upload %d)" % (args.floor, fmin, ", ".join(low) or "none",
                                                100 * mean, false_whole))
            return 1
    bad_growth = [r["name"] for r in results if not r["error"] and not r["leak_ok"]]
    print("growth_per_step: wrong on %s" % (", ".join(bad_growth) or "no job"))
    if args.growth and bad_growth:
        print("--growth: not met")
        return 1
    off = [r["name"] for r in results
           if not r["error"] and (r["whole"][1] or r["whole"][2])]
    if args.whole_found and off:
        print("--whole-found: not met on %s" % ", ".join(off))
        return 1
    if args.require and (ge90 < n or mean < REQ_MEAN or false_whole):
        print("--require: not met (each >= 90%, mean >= 97%, no false whole_dataset_upload)")
        return 1
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except Exception as e:  # the scorer itself broke: a failure, not a score
        import traceback
        traceback.print_exc()
        sys.exit(2)
