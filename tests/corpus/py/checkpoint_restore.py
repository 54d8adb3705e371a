#!/usr/bin/env python3
"""Resuming from a checkpoint in PyTorch (per-tensor allocator): the model
is moved with .to("cuda") (Module.to -> _apply(convert): one allocation and
upload per parameter), then model.load_state_dict(ckpt["model"])
(_load_from_state_dict -> param.copy_: a second upload into the same
buffers), then optimizer.load_state_dict(ckpt["optim"])
(torch/optim/optimizer.py: _process_value_according_to_param_policy moves
each exp_avg / exp_avg_sq to the parameter's device: new allocations filled
from the host - optimizer state, not data). Training resumes with two
batches on the device (pin_memory + non_blocking). Markers on."""
import vtc

job = vtc.Job("checkpoint_restore", "getproc", __doc__)
PARAMS = (8 * vtc.MIB,) * 4 + (1 * vtc.MIB, 1 * vtc.MIB)
BATCH, ACT, STEPS = 1 * vtc.MIB, 4 * vtc.MIB, 6


def convert(nbytes):
    p = job.mem_alloc(0, nbytes, "weights")
    job.htod(0, p, nbytes)
    return p


def _apply(fn):
    return [fn(n) for n in PARAMS]


def to():
    return _apply(convert)


def _load_from_state_dict(param, nbytes):
    job.htod(0, param, nbytes)  # param.copy_(input_param)


def load_state_dict(params):
    for p, n in zip(params, PARAMS):
        _load_from_state_dict(p, n)


def _process_value_according_to_param_policy(nbytes):
    p = job.mem_alloc(0, nbytes, "optimizer")
    job.htod(0, p, nbytes)
    return p


def optimizer_load_state_dict():
    state = []
    for n in PARAMS:
        state.append(_process_value_according_to_param_policy(n))  # exp_avg
        state.append(_process_value_according_to_param_policy(n))  # exp_avg_sq
    return state


def main():
    job.start(markers_default=True)
    job.open_devices(1)
    params = to()
    load_state_dict(params)
    state = optimizer_load_state_dict()
    pinned = job.pinned(BATCH)
    ring = [job.mem_alloc(0, BATCH, "prefetch")]
    job.htod(0, ring[0], BATCH, src=pinned)
    for s in range(STEPS):
        job.step(s)
        if s + 1 < STEPS:
            ring.append(job.mem_alloc(0, BATCH, "prefetch"))
            job.htod(0, ring[-1], BATCH, src=pinned)
        acts = [job.mem_alloc(0, ACT, "activations") for _ in PARAMS]
        grads = []
        for n, a in zip(reversed(PARAMS), reversed(acts)):
            grads.append(job.mem_alloc(0, n, "gradients"))
            job.mem_free(0, a)
        for g in grads:
            job.mem_free(0, g)
        job.mem_free(0, ring.pop(0))
    assert state
    job.line("no_finding whole_dataset_upload")
    job.line("finding prefetch_depth 0 2 %d" % BATCH)
    job.line("steps 0 %d" % STEPS)
    job.finish()


main()
