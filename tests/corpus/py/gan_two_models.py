#!/usr/bin/env python3
"""A GAN: two models, two Adam optimizers (state made at each one's first
step: the discriminator's first, then the generator's). Per iteration: noise
made on the device (no upload), one real batch uploaded, a discriminator
update (its grads), then a generator update (its grads). "steps" counts
iterations: each optimizer steps once per iteration. No framework names;
markers on."""
import vtc

job = vtc.Job("gan_two_models", "dlsym", __doc__)
GEN = (4 * vtc.MIB, 4 * vtc.MIB, 3 * vtc.MIB)
DIS = (3 * vtc.MIB, 2 * vtc.MIB, 16 * vtc.KIB)
REAL, NOISE, ACT = 3 * vtc.MIB, 64 * vtc.KIB, 2 * vtc.MIB
ITERS = 6


def make(sizes):
    out = []
    for n in sizes:
        p = job.mem_alloc(0, n, "weights")
        job.zero(0, p, n)
        out.append(p)
    return out


def update(sizes, state):
    grads = [job.mem_alloc(0, n, "gradients") for n in reversed(sizes)]
    if not state:
        for n in sizes:
            state += [job.mem_alloc(0, n, "optimizer"), job.mem_alloc(0, n, "optimizer")]
    for g in grads:
        job.mem_free(0, g)


def main():
    job.start(markers_default=True)
    job.open_devices(1)
    gen, dis = make(GEN), make(DIS)
    gstate, dstate = [], []
    for it in range(ITERS):
        job.step(it)
        z = job.mem_alloc(0, NOISE, "activations")
        job.zero(0, z, NOISE)
        real = job.mem_alloc(0, REAL, "prefetch")
        job.htod(0, real, REAL)
        fake = job.mem_alloc(0, REAL, "activations")  # G(z): the size of a real batch
        da = [job.mem_alloc(0, ACT, "activations") for _ in DIS]
        for a in da:
            job.mem_free(0, a)
        update(DIS, dstate)
        job.mem_free(0, real)
        ga = [job.mem_alloc(0, ACT, "activations") for _ in GEN]
        for a in reversed(ga):
            job.mem_free(0, a)
        update(GEN, gstate)
        job.mem_free(0, fake)
        job.mem_free(0, z)
    job.line("no_finding whole_dataset_upload")
    job.line("finding prefetch_depth 0 1 %d" % REAL)
    job.line("steps 0 %d" % ITERS)
    job.finish()


main()
