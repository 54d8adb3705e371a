#!/usr/bin/env python3
"""What recording costs on a real driver: bench_record's pair child, timed.

    overhead.py --bench BENCH_RECORD --shim LIBVRAMTRACE [--out FILE.md]
                [--short N] [--long N] [--runs R] [--budget SECONDS]

bench/bench_record.c measures the shim on the simulated driver, whose
cuMemAlloc costs nanoseconds. Here the same child (`bench_record pairs cuda
N`: N cuMemAlloc_v2(256)+cuMemFree_v2 pairs at a 24-frame stack) runs on
whatever libcuda.so.1 the loader finds - on the GPU machine, the real one -
without the shim, under it (stacks on, stacks off), and with the same
unwinding done by hand (`cuda-unwound`: the floor in context).

Method as in bench_record: each case is a whole process timed at two run
lengths, the fastest of R runs kept at each, cost = the slope between them
(start-up, cuInit and the context excluded); cases take turns within each
round so machine drift falls on all of them alike.
Exit: 0 measured, 1 a case failed, 2 usage.
"""
import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time

CASES = [
    # name, kind of pair, environment added
    ("no shim", "cuda", {}),
    ("no shim, unwinding by hand (floor)", "cuda-unwound", {}),
    ("vramtrace, stacks on", "cuda", {"LD_PRELOAD": "SHIM"}),
    ("vramtrace, stacks off", "cuda", {"LD_PRELOAD": "SHIM", "VRAMTRACE_STACK_DEPTH": "0"}),
]


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--bench", required=True, help="bench_record (the carried or built one)")
    p.add_argument("--shim", required=True, help="libvramtrace.so")
    p.add_argument("--out", help="write the table here too (markdown)")
    p.add_argument("--short", type=int, help="pairs in the short run (default: a sixth of --long)")
    p.add_argument("--long", type=int,
                   help="pairs in the long run (default: about a second's worth, calibrated)")
    p.add_argument("--runs", type=int, default=5, help="runs per length; the fastest is kept")
    p.add_argument("--budget", type=float, default=150, help="seconds for everything")
    args = p.parse_args()
    for path in (args.bench, args.shim):
        if not os.path.exists(path):
            p.error(f"{path} does not exist")
    if args.long is None:
        args.long = calibrated_long(args)
    if args.short is None:
        args.short = max(args.long // 6, 1)
    if not (0 < args.short < args.long) or args.runs < 1:
        p.error("need 0 < --short < --long and --runs >= 1")
    return args


def calibrated_long(args):
    """Pairs that take about a second: a real driver's pair costs tens of
    microseconds, the simulated one's well under one."""
    times = [timed_run(args, "cuda", {}, n, 60)[0] for n in (1000, 4000)]
    if None in times or times[1] <= times[0]:
        return 12000
    per_pair = (times[1] - times[0]) / 3000
    return int(min(max(1.0 / per_pair, 6000), 2000000))


def timed_run(args, kind, extra, n, timeout):
    """Seconds for one child process, or None when it failed."""
    env = dict(os.environ)
    env.pop("LD_PRELOAD", None)
    trace_dir = tempfile.mkdtemp(prefix="vt-overhead-")
    env["VRAMTRACE_DIR"] = trace_dir
    for key, value in extra.items():
        env[key] = os.path.abspath(args.shim) if value == "SHIM" else value
    started = time.monotonic()
    try:
        proc = subprocess.run([args.bench, "pairs", kind, str(n)], env=env, timeout=timeout,
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        ok = proc.returncode == 0
        why = f"exit {proc.returncode}: {proc.stderr.strip()[-200:]}"
    except subprocess.TimeoutExpired:
        ok, why = False, f"timed out after {timeout:.0f} s"
    seconds = time.monotonic() - started
    shutil.rmtree(trace_dir, ignore_errors=True)
    return (seconds, None) if ok else (None, why)


def measure(args):
    deadline = time.monotonic() + args.budget
    best = {(c[0], n): None for c in CASES for n in (args.short, args.long)}
    failed = {}
    rounds = 0
    for _ in range(args.runs):
        for name, kind, extra in CASES:
            for n in (args.short, args.long):
                left = deadline - time.monotonic()
                if name in failed or left < 5:
                    continue
                seconds, why = timed_run(args, kind, extra, n, left)
                if seconds is None:
                    failed[name] = why
                elif best[(name, n)] is None or seconds < best[(name, n)]:
                    best[(name, n)] = seconds
        rounds += 1
        if deadline - time.monotonic() < 5:
            break
    return best, failed, rounds


def table(args, best, failed, rounds):
    per_pair = {}
    for name, _, _ in CASES:
        lo, hi = best[(name, args.short)], best[(name, args.long)]
        if lo is not None and hi is not None:
            per_pair[name] = (hi - lo) / (args.long - args.short) * 1e9
    base = per_pair.get("no shim")
    lines = [f"pairs: cuMemAlloc_v2(256 B) + cuMemFree_v2 at a 24-frame stack; slope between "
             f"{args.short} and {args.long} pairs, fastest of {rounds} run(s) per length", "",
             "| case | ns per pair | extra over no shim |", "| --- | ---: | ---: |"]
    for name, _, _ in CASES:
        if name in per_pair:
            ns = per_pair[name]
            extra = "" if base is None or name == "no shim" else f"{ns - base:+.0f} ns ({(ns - base) / base * 100:+.1f} %)"
            lines.append(f"| {name} | {ns:.0f} | {extra} |")
        else:
            lines.append(f"| {name} | n/a ({failed.get(name, 'not run: out of time')}) | |")
    return "\n".join(lines) + "\n"


def main():
    args = parse_args()
    best, failed, rounds = measure(args)
    text = table(args, best, failed, rounds)
    sys.stdout.write(text)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
