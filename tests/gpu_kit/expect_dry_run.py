#!/usr/bin/env python3
"""Assert the numbers in a `check.sh --dry-run` summary (OUT/summary.md).

The driver job (samples/frameworks/driver_ctypes.py) fixes its sizes: a
4 MiB dataset (cuMemAlloc_v2 + one cuMemcpyHtoD_v2, found by dlsym), a
64 KiB batch buffer filled 8 times and scratch buffers of 1 and 3 MiB
(cuMemAlloc/cuMemcpyHtoD/cuMemFree found by cuGetProcAddress_v2). So on the
simulated driver, in both modes, the table must read exactly this."""
import importlib.util
import json
import os
import sys
import tarfile

MiB = 1 << 20
DRIVER_ROW = {
    "exit base/shim": "0/0",
    "result same": "PASS",
    "allocs ok/failed": "4/0",
    "alloc bytes": str(4 * MiB + 64 * 1024 + 1 * MiB + 3 * MiB),
    "VMM creates": "0",
    "H2D copies": "9",
    "H2D bytes": str(4 * MiB + 8 * 64 * 1024),
    "dataset bytes (truth)": str(4 * MiB),
    "dataset bytes seen as H2D": str(4 * MiB),
    # both paths hand out the cuMemAlloc_v2 wrapper: an allocation cannot say which
    "allocs by path": "dlsym+get_proc_v2:4",
    "verdict": "PASS",
}
FRAMEWORKS = {"torch-whole": "torch", "torch-stream": "torch", "torch-expandable": "torch", "jax-whole": "jax", "jax-stream": "jax",
              "cupy": "cupy", "keras": "tensorflow"}


def table(markdown):
    lines = [l for l in markdown.splitlines() if l.startswith("| ")]
    head = [c.strip() for c in lines[0].strip("|").split("|")]
    return [dict(zip(head, (c.strip() for c in l.strip("|").split("|")))) for l in lines[1:]]


def overhead_errors(out):
    """overhead.md: every case measured, a number of ns per pair for each
    (step 3 of check.sh, on the simulated driver here)."""
    path = os.path.join(out, "overhead.md")
    if not os.path.exists(path):
        return ["no overhead.md (check.sh step 3 did not run)"]
    with open(path) as f:
        rows = [line.split("|")[1:3] for line in f if line.startswith("| ") and "---" not in line]
    cases = {name.strip(): value.strip() for name, value in rows[1:]}
    errors = []
    for case in ("no shim", "no shim, unwinding by hand (floor)", "vramtrace, stacks on",
                 "vramtrace, stacks off"):
        value = cases.get(case)
        try:
            float(value)
        except (TypeError, ValueError):
            errors.append(f"overhead.md: '{case}' has no ns per pair ({value!r})")
    return errors


def main(out):
    errors = []
    with open(os.path.join(out, "summary.md")) as f:
        rows = table(f.read())
    by_key = {(r["job"], r["mode"]): r for r in rows}
    for mode in ("default", "per-tensor"):
        row = by_key.get(("driver", mode))
        if row is None:
            errors.append(f"no driver row for mode {mode}")
            continue
        errors += [f"driver [{mode}] {k}: {row.get(k)!r}, expected {v!r}"
                   for k, v in DRIVER_ROW.items() if row.get(k) != v]
        lookups = dict(part.rsplit(" ", 1) for part in row["routed/total lookups"].split(", "))
        if lookups.get("get_proc_v2") != "3/3":
            errors.append(f"driver [{mode}] get_proc_v2 lookups {lookups.get('get_proc_v2')}, expected 3/3")
        routed, total = map(int, lookups.get("dlsym", "0/0").split("/"))
        if routed < 3 or total < routed:
            errors.append(f"driver [{mode}] dlsym lookups {routed}/{total}: expected >= 3 routed "
                          "(cuMemAlloc_v2, cuMemcpyHtoD_v2, cuMemFree_v2)")
    for job, module in FRAMEWORKS.items():
        code = 3 if importlib.util.find_spec(module) else 4
        row = by_key.get((job, "default"))
        if row is None:
            errors.append(f"no row for {job}")
        elif (row["exit base/shim"], row["result same"], row["verdict"]) != (f"{code}/{code}", "PASS", "PASS"):
            errors.append(f"{job}: {row['exit base/shim']} {row['result same']} {row['verdict']}, "
                          f"expected {code}/{code} PASS PASS (fails early, the same with vramtrace)")
    with open(os.path.join(out, "summary.json")) as f:
        if not json.load(f)["passed"]:
            errors.append("summary.json says the dry run did not pass")
    with tarfile.open(os.path.join(out, "traces.tar.gz")) as tar:
        names = tar.getnames()
    if not any(n.startswith("traces/driver.default/trace/vramtrace.") and n.endswith(".log") for n in names):
        errors.append(f"traces.tar.gz holds no driver log: {names[:10]}")
    errors += overhead_errors(out)
    for e in errors:
        print("FAIL:", e)
    if not errors:
        print(f"PASS: dry-run summary has the expected numbers ({len(rows)} rows)")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
