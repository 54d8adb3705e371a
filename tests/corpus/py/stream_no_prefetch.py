#!/usr/bin/env python3
"""Streaming input with no device prefetch: every round allocates its input
on the device, uploads it, uses it and frees it before the next (one batch
on the device at a time). The input is 2 MiB, the size of one of the
weights. Adam-like state (two per weight) made in the first round. No
framework names; markers on."""
import vtc

job = vtc.Job("stream_no_prefetch", "dlsym", __doc__)
SIZES = (2 * vtc.MIB, 2 * vtc.MIB, 4 * vtc.MIB, 64 * vtc.KIB)
IN_BYTES, MID = 2 * vtc.MIB, 3 * vtc.MIB
ROUNDS = 8


def main():
    job.start(markers_default=True)
    job.open_devices(1)
    params = []
    for n in SIZES:
        p = job.mem_alloc(0, n, "weights")
        job.zero(0, p, n)
        params.append(p)
    state = []
    for r in range(ROUNDS):
        job.step(r)
        x = job.mem_alloc(0, IN_BYTES, "prefetch")
        job.htod(0, x, IN_BYTES)
        mids = [job.mem_alloc(0, MID, "activations") for _ in SIZES]
        deltas = []
        for n, m in zip(reversed(SIZES), reversed(mids)):
            deltas.append(job.mem_alloc(0, n, "gradients"))
            job.mem_free(0, m)
        job.mem_free(0, x)
        if not state:
            for n in SIZES:
                state += [job.mem_alloc(0, n, "optimizer"), job.mem_alloc(0, n, "optimizer")]
        for d in deltas:
            job.mem_free(0, d)
    job.line("no_finding whole_dataset_upload")
    job.line("finding prefetch_depth 0 1 %d" % IN_BYTES)
    job.line("steps 0 %d" % ROUNDS)
    job.finish()


main()
