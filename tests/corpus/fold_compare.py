#!/usr/bin/env python3
"""The classifying report of a folding model (analyzer/model/model_fold.h)
against the full model's, on the corpus's jobs: `vramtrace report` and
`report --json` must print the same bytes either way. The jobs are short,
so the folding starts early (VRAMTRACE_FOLD_KEEP_STEPS) to fold at all.

  fold_compare.py --vramtrace V --bindir B --simdriver S [--only NAME] [-j N]

Prints one line per job (folded allocations, or why the full model
answered) and exits 1 when a report differs. Each trace is also cut off a
chunk boundary (a log that stops mid-chunk warns): the folding report must
say on stderr what the full one says, each warning once, also where it
falls back to the full model and reads the trace a second time."""
import argparse
import concurrent.futures
import glob
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import score  # noqa: E402  (the corpus's manifest and job runner)


def report(args, trace, env_extra, json_out):
    env = dict(os.environ, **env_extra)
    argv = [args.vramtrace, "report", trace] + (["--json"] if json_out else [])
    r = subprocess.run(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       timeout=args.timeout)
    return r.returncode, r.stdout, r.stderr.decode(errors="replace")


def compare(job, args, work):
    res = score.run_job(job, argparse.Namespace(**vars(args), keep=None), work)
    if res["error"] and "job failed" in res["error"]:
        return job["name"], None, res["error"]
    trace = os.path.join(work, job["name"] + ".trace")
    notes, same = [], True
    for js in (False, True):
        full = report(args, trace, {"VRAMTRACE_FOLD": "0"}, js)
        for keep in args.keep_steps.split(","):
            got = report(args, trace, {"VRAMTRACE_FOLD_KEEP_STEPS": keep,
                                       "VRAMTRACE_FOLD_VERBOSE": "1"}, js)
            if got[0] != full[0] or got[1] != full[1]:
                same = False
            if js:
                note = [l for l in got[2].splitlines() if "folded" in l]
                notes.append("keep %s: %s" % (keep, note[0].split(": ", 1)[1] if note else "?"))
    cut = cut_copy(trace)
    if cut:
        full = report(args, cut, {"VRAMTRACE_FOLD": "0"}, False)
        got = report(args, cut, {"VRAMTRACE_FOLD_KEEP_STEPS": "1"}, False)
        if got[2] != full[2]:
            same = False
            notes.append("cut trace: stderr %r, full model's %r" % (got[2], full[2]))
    return job["name"], same, "; ".join(notes)


def cut_copy(trace):
    """A copy of trace whose largest log ends 100 bytes into its last whole
    chunk (format.h's 256 KiB chunks); None when no log spans two chunks."""
    logs = sorted(glob.glob(os.path.join(trace, "*.log")), key=os.path.getsize)
    chunk = 256 * 1024
    if not logs or os.path.getsize(logs[-1]) < 2 * chunk:
        return None
    cut = trace + ".cut"
    shutil.rmtree(cut, ignore_errors=True)
    shutil.copytree(trace, cut)
    log = os.path.join(cut, os.path.basename(logs[-1]))
    size = os.path.getsize(log)
    os.truncate(log, (size - 1) // chunk * chunk - chunk + 100)
    return cut


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--vramtrace", required=True)
    ap.add_argument("--bindir", required=True)
    ap.add_argument("--simdriver", required=True)
    ap.add_argument("--jobs", default=os.path.join(score.HERE, "jobs.txt"))
    ap.add_argument("--only")
    ap.add_argument("--keep-steps", default="1,3,8")
    ap.add_argument("-j", type=int, default=2)
    ap.add_argument("--timeout", type=int, default=300)
    args = ap.parse_args()
    jobs = score.read_manifest(args.jobs)
    if args.only:
        jobs = [j for j in jobs if args.only in j["name"]]
    bad = 0
    with tempfile.TemporaryDirectory(prefix="vt-fold-") as work:
        with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, args.j)) as ex:
            for name, same, note in ex.map(lambda j: compare(j, args, work), jobs):
                state = "ERROR" if same is None else "same" if same else "DIFFERS"
                bad += same is not True
                print("%-26s %-7s %s" % (name, state, note))
    print("%d of %d jobs differ or failed" % (bad, len(jobs)))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
