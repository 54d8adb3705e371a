#!/usr/bin/env python3
"""A plain training loop with no framework names at all: plain SGD (no
momentum: no optimizer state), gradients made and dropped every step, two
input buffers alternating (the next batch uploaded while this one is used),
parameters made on the device. Markers on."""
import vtc

job = vtc.Job("sgd_plain", "getproc", __doc__)
SIZES = (3 * vtc.MIB, 3 * vtc.MIB, 1 * vtc.MIB, 16 * vtc.KIB)
IN_BYTES, MID = 1 * vtc.MIB, 3 * vtc.MIB
ROUNDS = 8


def make_params():
    out = []
    for n in SIZES:
        p = job.mem_alloc(0, n, "weights")
        job.zero(0, p, n)
        out.append(p)
    return out


def one_round(inputs, r):
    nxt = None
    if r + 1 < ROUNDS:
        nxt = job.mem_alloc(0, IN_BYTES, "prefetch")
        job.htod(0, nxt, IN_BYTES)
    mids = [job.mem_alloc(0, MID, "activations") for _ in SIZES]
    deltas = []
    for n, m in zip(reversed(SIZES), reversed(mids)):
        deltas.append(job.mem_alloc(0, n, "gradients"))
        job.mem_free(0, m)
    for d in deltas:
        job.mem_free(0, d)
    job.mem_free(0, inputs)
    return nxt


def main():
    job.start(markers_default=True)
    job.open_devices(1)
    params = make_params()
    cur = job.mem_alloc(0, IN_BYTES, "prefetch")
    job.htod(0, cur, IN_BYTES)
    for r in range(ROUNDS):
        job.step(r)
        cur = one_round(cur, r)
    for p in params:
        job.mem_free(0, p)
    job.line("no_finding whole_dataset_upload")
    job.line("finding prefetch_depth 0 2 %d" % IN_BYTES)
    job.line("steps 0 %d" % ROUNDS)
    job.finish()


main()
