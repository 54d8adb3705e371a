#!/usr/bin/env python3
"""PyTorch inference, PYTORCH_NO_CUDA_MEMORY_CACHING=1 (each tensor its own
cudaMalloc): the model is built and load_state_dict'ed on the CPU, then
model.to("cuda") (torch/nn/modules/module.py: to -> _apply(convert) -> one
allocation and one upload per parameter; a 40 MiB embedding among them).
Then model.eval() and, per batch, input.to(device) (one batch on the
device), activations freed layer by layer - one of them the size of a
weight - and the output copied back. No optimizer: 0 steps. No markers."""
import vtc

job = vtc.Job("torch_inference", "getproc", __doc__)
PARAMS = [40 * vtc.MIB] + [6 * vtc.MIB, 8 * vtc.KIB] * 4
INPUT, ACT, OUT = 512 * vtc.KIB, 6 * vtc.MIB, 64 * vtc.KIB
BATCHES = 10


def convert(nbytes):
    p = job.mem_alloc(0, nbytes, "weights")
    job.htod(0, p, nbytes)
    return p


def _apply(params, fn):
    return [fn(n) for n in params]


def to(params):
    return _apply(params, convert)


def forward(x):
    a = job.mem_alloc(0, ACT, "activations")
    for _ in range(3):
        b = job.mem_alloc(0, ACT, "activations")
        job.mem_free(0, a)
        a = b
    out = job.mem_alloc(0, OUT, "activations")
    job.mem_free(0, a)
    return out


def main():
    job.start(markers_default=False)
    job.open_devices(1)
    params = to(PARAMS)
    for _ in range(BATCHES):
        x = job.mem_alloc(0, INPUT, "prefetch")
        job.htod(0, x, INPUT)
        out = forward(x)
        job.mem_free(0, x)
        job.dtoh(0, out, OUT)
        job.mem_free(0, out)
    for p in params:
        job.mem_free(0, p)
    job.line("no_finding whole_dataset_upload")
    job.line("finding prefetch_depth 0 1 %d" % INPUT)
    job.line("steps 0 0")
    job.finish()


main()
