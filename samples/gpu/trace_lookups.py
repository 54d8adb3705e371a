#!/usr/bin/env python3
"""How a traced job found the CUDA driver: the shim's lookup records
(VT_REC_LOOKUP) of a trace, counted by path (dlsym, cuGetProcAddress,
cuGetProcAddress_v2) and outcome (routed to a wrapper, passed untouched,
...), with the names. Also the device allocations and H2D copies seen.

  trace_lookups.py TRACE_DIR [--json] [--require-path dlsym]

--require-path P exits 1 when the trace holds no lookup through P."""
import argparse
import json
import os
import sys
from collections import Counter

import checks
import vtlog

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("trace")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--require-path", choices=checks.PATHS)
    args = parser.parse_args()
    try:
        logs = vtlog.read_trace(args.trace)
    except (OSError, vtlog.LogError) as error:
        print(f"trace_lookups: {error}", file=sys.stderr)
        return 2
    if not logs:
        print(f"trace_lookups: no vramtrace.*.log in {args.trace}", file=sys.stderr)
        return 2
    m = checks.measure(logs, vtlog.api_names(REPO))
    names = Counter(f"{l.path} {l.outcome} {l.name}" for log in logs for l in log.lookups)
    if args.json:
        json.dump({"lookups": m["lookups"], "names": dict(names), "allocs": m["allocs"],
                   "htod_copies": m["htod_copies"], "htod_bytes": m["htod_bytes"],
                   "processes": m["processes"]}, sys.stdout, indent=1, sort_keys=True)
        print()
    else:
        print(f"{m['processes']} process log(s); {m['allocs']} device allocations; "
              f"{m['htod_copies']} H2D copies, {m['htod_bytes']} bytes")
        for path in checks.PATHS:
            counts = m["lookups"].get(path, {})
            detail = ", ".join(f"{k} {v}" for k, v in sorted(counts.items()) if k != "total")
            print(f"  {path:<11} {counts.get('total', 0):5d} lookups  {detail}")
        for line, count in sorted(names.items()):
            print(f"    {count:4d} x {line}")
    if args.require_path and not m["lookups"].get(args.require_path, {}).get("total"):
        print(f"trace_lookups: no lookup through {args.require_path} in {args.trace}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
