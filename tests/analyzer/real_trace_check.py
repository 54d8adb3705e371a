#!/usr/bin/env python3
"""The classifier on a real trace: PyTorch 2.11 on an H200 (driver 580.159.04),
samples/frameworks/torch_train.py --feed whole under `vramtrace run
--per-tensor` (tests/analyzer/real/h200-torch-per-tensor: the log, the
symbols, the job's own truth line).

    real_trace_check.py VRAMTRACE_BINARY TRACE_DIR

Without the cache every temporary is a cudaMalloc, so live bytes return to
the step-end level several times a step: the step finder must still count
the job's 128 steps (it counted 1157, and then nothing recurred, the
weights read as a dataset and the optimizer slots as unknown). Checked
against the tensors the job named, every one of them: the two dataset
arrays (one the size of a weight), the 4 weights, their 4 gradients (kept
between steps: zero_grad(set_to_none=False)) and the 8 Adam slots.
Exit 0 pass, 1 fail."""
import json
import os
import subprocess
import sys

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "..", "..", "samples", "gpu"))
import checks  # noqa: E402  (categories_vs_truth: the GPU kit's own comparison)
from checklib import check, summary  # noqa: E402


def main(vramtrace, trace):
    with open(os.path.join(trace, "truth.json")) as f:
        truth = json.load(f)
    proc = subprocess.run([vramtrace, "report", trace, "--json", "--allocs"], capture_output=True, text=True)
    check(proc.returncode == 0, f"vramtrace report exit {proc.returncode} {proc.stderr.strip()}")
    if proc.returncode != 0:
        return summary()
    report = json.loads(proc.stdout)
    steps = truth["batches"]["count"]
    found = report["processes"][0]["steps"]
    # the activity after the last valley may count as one more step
    check(steps <= found <= steps + 1, f"{found} steps found, the job ran {steps}")
    result = checks.categories_vs_truth(truth, report["allocations"])
    for role, (agree, named, misses) in result.items():
        print(f"     {role}: {agree}/{named}" + (f" (misses: {', '.join(misses)})" if misses else ""))
    for role, wanted in (("dataset", 2), ("params", 4), ("grads", 4), ("optimizer_state", 8)):
        agree, named, _ = result.get(role, (0, 0, []))
        check((agree, named) == (wanted, wanted), f"{role}: {agree} of {wanted} named as the job names them")
    return summary()


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit("usage: real_trace_check.py VRAMTRACE_BINARY TRACE_DIR")
    sys.exit(main(sys.argv[1], sys.argv[2]))
