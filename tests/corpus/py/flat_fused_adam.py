#!/usr/bin/env python3
"""Flat buffers everywhere, as Megatron-LM with apex's FusedAdam lays them
out (PYTORCH_NO_CUDA_MEMORY_CACHING=1: one cudaMalloc per tensor).
Module.to -> _apply(convert) uploads each parameter; _flatten_dense_tensors
packs them into ONE contiguous parameter buffer (device-to-device copies)
and each parameter's .data becomes a view into it, so the per-parameter
tensors are freed. The DDP wrapper's GradBuffer allocates one zeroed
main_grad buffer of the same size. apex FusedAdam.__init__ makes its
_dummy_overflow_buf (torch.cuda.IntTensor([0]): 4 bytes uploaded); with one
flat parameter, FusedAdam.step's first call makes exp_avg and exp_avg_sq
as zeros_like(flat): two flat buffers. Each step: the batch is pinned and
uploaded (the next one not yet: depth 1), activations (one the size of a
parameter), backward makes each parameter's .grad, the hook adds it into
main_grad and drops it (param.grad = None), multi_tensor_adam updates the
flat parameter, main_grad is zeroed. Markers on, driver by
cuGetProcAddress.

Truth: the flat parameter buffer weights (and the per-parameter tensors
before it), main_grad and the transient .grads gradients, exp_avg and
exp_avg_sq optimizer: four buffers of 48 MiB each; the overflow flag other;
the batch prefetch (4 MiB, the size of a parameter), depth 1; no dataset;
10 steps."""
import vtc

job = vtc.Job("flat_fused_adam", "getproc", __doc__)
PARAMS = (16 * vtc.MIB, 12 * vtc.MIB, 8 * vtc.MIB, 6 * vtc.MIB, 4 * vtc.MIB,
          1 * vtc.MIB, 1 * vtc.MIB)
FLAT = sum(PARAMS)
BATCH, STEPS = 4 * vtc.MIB, 10


def _apply(sizes):
    out = []
    for n in sizes:  # convert(t): t.to(device)
        p = job.mem_alloc(0, n, "weights")
        job.htod(0, p, n)
        out.append(p)
    return out


def _flatten_dense_tensors(params):
    flat = job.mem_alloc(0, FLAT, "weights")
    off = 0
    for p, n in zip(params, PARAMS):
        job.dtod(0, flat + off, p, n)
        off += n
    return flat


class GradBuffer:
    def __init__(self, numel_bytes):
        self.data = job.mem_alloc(0, numel_bytes, "gradients")
        job.zero(0, self.data, numel_bytes)

    def reset(self):
        job.zero(0, self.data, FLAT)


class FusedAdam:
    def __init__(self, flat):
        self.flat = flat
        self.state = {}
        self._dummy_overflow_buf = job.mem_alloc(0, 4, "other")
        job.htod(0, self._dummy_overflow_buf, 4)

    def zeros_like(self, nbytes):
        p = job.mem_alloc(0, nbytes, "optimizer")
        job.zero(0, p, nbytes)
        return p

    def step(self):
        if not self.state:
            self.state["exp_avg"] = self.zeros_like(FLAT)
            self.state["exp_avg_sq"] = self.zeros_like(FLAT)
        # multi_tensor_applier(multi_tensor_adam, _dummy_overflow_buf, ...)


class Module:
    def to(self):
        params = _apply(PARAMS)
        self.flat = _flatten_dense_tensors(params)
        for p in params:  # param.data = flat view; the old storage goes
            job.mem_free(0, p)
        return self


def pin_memory_and_cuda(pinned):
    b = job.mem_alloc(0, BATCH, "prefetch")
    job.htod(0, b, BATCH, src=pinned)
    return b


def forward(batch):
    acts = [job.mem_alloc(0, n, "activations") for n in (8 * vtc.MIB, PARAMS[1], 2 * vtc.MIB)]
    return acts


def backward(acts, grad_buffer):
    for n in reversed(PARAMS):
        g = job.mem_alloc(0, n, "gradients")  # AccumulateGrad
        # the hook: main_grad.add_(param.grad); param.grad = None
        job.mem_free(0, g)
    for a in reversed(acts):
        job.mem_free(0, a)


def train(model, opt, grad_buffer, pinned):
    for s in range(STEPS):
        job.step(s)
        batch = pin_memory_and_cuda(pinned)
        acts = forward(batch)
        backward(acts, grad_buffer)
        opt.step()
        grad_buffer.reset()
        job.mem_free(0, batch)


def main():
    job.start(markers_default=True)
    job.open_devices(1)
    model = Module().to()
    grad_buffer = GradBuffer(FLAT)
    opt = FusedAdam(model.flat)
    pinned = job.pinned(BATCH)
    train(model, opt, grad_buffer, pinned)
    for p in (opt.state["exp_avg"], opt.state["exp_avg_sq"], opt._dummy_overflow_buf,
              grad_buffer.data, model.flat):
        job.mem_free(0, p)
    job.line("no_finding whole_dataset_upload")
    job.line("finding prefetch_depth 0 1 %d" % BATCH)
    job.line("steps 0 %d" % STEPS)
    job.finish()


main()
