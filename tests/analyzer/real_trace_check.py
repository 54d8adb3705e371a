#!/usr/bin/env python3
"""The analyzer on real traces: samples/frameworks jobs under `vramtrace run`
on an H200 (driver 580.159.04), kept in tests/analyzer/real/NAME (the log,
xz-compressed: its unused chunk space is zeros; the symbols; the job's own
truth line).

    real_trace_check.py VRAMTRACE_BINARY FIXTURE_DIR

h200-torch-per-tensor: torch_train.py --feed whole, --per-tensor (PyTorch
2.11, Adam, zero_grad(set_to_none=False)). Without the cache every
temporary is a cudaMalloc, so live bytes return to the step-end level
several times a step: the step finder must still count the job's 128 steps
(it counted 1157, and then nothing recurred, the weights read as a dataset
and the optimizer slots as unknown). Every tensor the job named must be
named so: 2 dataset arrays (one the size of a weight), 4 weights, their 4
kept gradients, 8 Adam slots; gradients made on the autograd thread are
named by their backward op, not by PyTorch's tensor factory.

h200-jax-whole-default: jax_train.py --feed whole, default mode (XLA's
arena, jaxlib 0.11.2): the arena is one opaque pool, the dataset upload
into it is flagged, and the upload, made on an XLA worker thread, is named
by what XLA was doing (it was tsl::PThread::ThreadFn, the thread's start).

h200-jax-stream-per-tensor: jax_train.py --feed stream, --per-tensor (XLA's
platform allocator: every buffer its own 2 MiB VMM allocation; each step's
loss kept on the device, so the step-end level rises 2 MiB a step): the
steps are still found (none were), and every array the job named lies in
an allocation through its mapped address (the handle is not an address).
Its categories are not asserted: sizes carry nothing there (README).
Exit 0 pass, 1 fail."""
import json
import os
import subprocess
import sys
import tempfile

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "..", "..", "samples", "gpu"))
import checks  # noqa: E402  (categories_vs_truth: the GPU kit's own comparison)
from checklib import check, summary, unpack_fixture  # noqa: E402

MIB = 1 << 20


def report(vramtrace, trace):
    proc = subprocess.run([vramtrace, "report", trace, "--json", "--allocs"], capture_output=True, text=True)
    check(proc.returncode == 0, f"vramtrace report exit {proc.returncode} {proc.stderr.strip()}")
    return json.loads(proc.stdout) if proc.returncode == 0 else None


def torch_per_tensor(rep, truth):
    steps = truth["batches"]["count"]
    found = rep["processes"][0]["steps"]
    # the activity after the last valley may count as one more step
    check(steps <= found <= steps + 1, f"{found} steps found, the job ran {steps}")
    result = checks.categories_vs_truth(truth, rep["allocations"])
    for role, (agree, named, misses) in result.items():
        print(f"     {role}: {agree}/{named}" + (f" (misses: {', '.join(misses)})" if misses else ""))
    for role, wanted in (("dataset", 2), ("params", 4), ("grads", 4), ("optimizer_state", 8)):
        agree, named, _ = result.get(role, (0, 0, []))
        check((agree, named) == (wanted, wanted), f"{role}: {agree} of {wanted} named as the job names them")
    grad_sites = {s["site"].split("(")[0] for s in rep["sites"] if s["category"] == "gradients"}
    check(grad_sites and not any("empty_generic" in s for s in grad_sites),
          f"gradient sites are backward ops: {sorted(grad_sites)}")


def jax_whole_default(rep, truth):
    check([p["mode"] for p in rep["processes"]] == ["pool"], f"modes {[p['mode'] for p in rep['processes']]}")
    pools = [f for f in rep["flags"] if f["kind"] == "opaque_pool"]
    check(len(pools) == 1 and max(pools[0]["bytes"]) > 100 * 1024 * MIB,
          f"one opaque pool, XLA's 75 % arena: {[f['bytes'] for f in pools]}")
    dataset = max(t["bytes"] for t in truth["dataset"])
    uploads = [f for f in rep["flags"] if f["kind"] == "whole_dataset_upload"]
    check(len(uploads) == 1 and uploads[0]["bytes"] == [dataset], f"the dataset upload flagged: {uploads}")
    site = uploads[0]["site"] if uploads else ""
    check("CopyRawHostToDevice" in site and "ThreadFn" not in site, f"the upload's site: {site[:120]}")


def jax_stream_per_tensor(rep, truth):
    steps = truth["batches"]["count"]
    found = rep["processes"][0]["steps"]
    # each step keeps its loss in a 2 MiB buffer: the level drifts, the
    # pattern repeats; a few set-up valleys before training count too
    check(steps <= found <= steps + 8, f"{found} steps found, the job ran {steps}")
    vmm = [a for a in rep["allocations"] if "mapped_at" in a]
    check(len(vmm) == 1680, f"every cuMemCreate'd buffer has its mapped address: {len(vmm)} "
          f"of {len(rep['allocations'])} allocations (7 are cuMemAlloc's)")
    result = checks.categories_vs_truth(truth, rep["allocations"])
    lost = [m for _, _, misses in result.values() for m in misses if m.endswith("no allocation")]
    check(result and not lost, f"every array of the truth lies in an allocation: {lost}")


FIXTURES = {"h200-torch-per-tensor": torch_per_tensor, "h200-jax-whole-default": jax_whole_default,
            "h200-jax-stream-per-tensor": jax_stream_per_tensor}


def main(vramtrace, fixture):
    with open(os.path.join(fixture, "truth.json")) as f:
        truth = json.load(f)
    with tempfile.TemporaryDirectory() as tmp:
        rep = report(vramtrace, unpack_fixture(fixture, tmp))
    if rep is not None:
        FIXTURES[os.path.basename(os.path.normpath(fixture))](rep, truth)
    return summary()


if __name__ == "__main__":
    if len(sys.argv) != 3 or os.path.basename(os.path.normpath(sys.argv[2])) not in FIXTURES:
        sys.exit(f"usage: real_trace_check.py VRAMTRACE_BINARY tests/analyzer/real/{{{','.join(FIXTURES)}}}")
    sys.exit(main(sys.argv[1], sys.argv[2]))
