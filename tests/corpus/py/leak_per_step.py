#!/usr/bin/env python3
"""A leak: every step keeps one more 1 MiB device buffer (the classic
`history.append(output)` of a tensor still on the device). No framework
names; momentum state made in the first round; one input buffer per round.
No markers."""
import vtc

job = vtc.Job("leak_per_step", "dlsym", __doc__)
SIZES = (4 * vtc.MIB, 2 * vtc.MIB, 128 * vtc.KIB)
IN_BYTES, MID, KEPT = 768 * vtc.KIB, 2 * vtc.MIB, 1 * vtc.MIB
ROUNDS = 10


def main():
    job.start(markers_default=False)
    job.open_devices(1)
    params = []
    for n in SIZES:
        p = job.mem_alloc(0, n, "weights")
        job.zero(0, p, n)
        params.append(p)
    state, history = [], []
    for r in range(ROUNDS):
        job.step(r)
        x = job.mem_alloc(0, IN_BYTES, "prefetch")
        job.htod(0, x, IN_BYTES)
        mids = [job.mem_alloc(0, MID, "activations") for _ in SIZES]
        out = job.mem_alloc(0, KEPT, "activations")
        history.append(out)  # never freed
        deltas = []
        for n, m in zip(reversed(SIZES), reversed(mids)):
            deltas.append(job.mem_alloc(0, n, "gradients"))
            job.mem_free(0, m)
        if not state:
            state = [job.mem_alloc(0, n, "optimizer") for n in SIZES]
        for d in deltas:
            job.mem_free(0, d)
        job.mem_free(0, x)
    job.line("no_finding whole_dataset_upload")
    job.line("finding prefetch_depth 0 1 %d" % IN_BYTES)
    job.line("steps 0 %d" % ROUNDS)
    job.line("leak 0 %d" % KEPT)
    job.finish()


main()
