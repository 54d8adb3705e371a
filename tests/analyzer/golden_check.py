#!/usr/bin/env python3
"""Golden tests: each tests/analyzer/golden/NAME/ holds a committed trace
(trace/vramtrace.*.log) and the `vramtrace report trace --json` it must give
(expected.json), and optionally expected_at.json for `--at end`.
    golden_check.py VRAMTRACE GOLDEN_DIR [--update]
Runs the report from inside NAME/ so the "trace" key is the relative path."""
import difflib
import json
import os
import subprocess
import sys

CASES = [("expected.json", []), ("expected_at_end.json", ["--at", "end"])]


def main():
    if len(sys.argv) < 3:
        print("usage: golden_check.py VRAMTRACE GOLDEN_DIR [--update]")
        return 2
    vramtrace, root = os.path.abspath(sys.argv[1]), sys.argv[2]
    update = "--update" in sys.argv[3:]
    failed = checked = 0
    for name in sorted(os.listdir(root)):
        case = os.path.join(root, name)
        if not os.path.isdir(os.path.join(case, "trace")):
            continue
        for expected, extra in CASES:
            path = os.path.join(case, expected)
            if not os.path.exists(path) and not update:
                continue
            out = subprocess.run([vramtrace, "report", "trace", "--json"] + extra, cwd=case,
                                 check=True, stdout=subprocess.PIPE, text=True).stdout
            got = json.loads(out)
            if update:
                with open(path, "w") as f:
                    f.write(json.dumps(got, indent=2, sort_keys=False) + "\n")
                print("updated", path)
                continue
            checked += 1
            with open(path) as f:
                want = json.load(f)
            if got == want:
                print("ok  ", name, expected)
                continue
            failed += 1
            print("FAIL", name, expected)
            sys.stdout.writelines(difflib.unified_diff(
                json.dumps(want, indent=2).splitlines(True),
                json.dumps(got, indent=2).splitlines(True), "expected", "got"))
    if not update and checked == 0:
        print("no golden cases found under", root)
        return 1
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
