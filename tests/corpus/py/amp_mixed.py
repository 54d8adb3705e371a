#!/usr/bin/env python3
"""Mixed precision with fp32 master weights (the apex O2 / Megatron layout,
with torch's GradScaler): fp32 parameters made on the device are the
masters; the working model is a half() copy (Module.half -> _apply: an fp16
tensor per parameter, cast on the device: half the master's bytes, no
upload). Each step: the fp16 batch (one on the device), fp16 activations
(one the size of an fp16 weight), fp16 grads, fp32 grads for the masters
(cast on the device), GradScaler.scale -> _lazy_init_scale_growth_tracker
(the 4-byte _scale and _growth_tracker, first step), unscale_ (a 4-byte
found_inf per step), step (Adam exp_avg/exp_avg_sq in fp32 on the masters,
first step), update. Markers on."""
import vtc

job = vtc.Job("amp_mixed", "getproc", __doc__)
MASTER = (8 * vtc.MIB, 8 * vtc.MIB, 4 * vtc.MIB, 256 * vtc.KIB)
BATCH, STEPS = 2 * vtc.MIB, 6


def _apply(tensors, fn):
    return [fn(p, n) for p, n in tensors]


def half(master):
    def cast(p, n):
        h = job.mem_alloc(0, n // 2, "weights")
        job.dtod(0, h, p, n // 2)
        return h
    return _apply(master, cast)


class GradScaler:
    def __init__(self):
        self._scale = None

    def _lazy_init_scale_growth_tracker(self):
        self._scale = job.mem_alloc(0, 4, "other")
        self._growth_tracker = job.mem_alloc(0, 4, "other")

    def scale(self):
        if self._scale is None:
            self._lazy_init_scale_growth_tracker()

    def unscale_(self):
        return job.mem_alloc(0, 4, "other")  # found_inf

    def step(self, opt, grads):
        found_inf = self.unscale_()
        opt.step(grads)
        return found_inf

    def update(self, found_inf):
        job.mem_free(0, found_inf)


class Adam:
    def __init__(self, master):
        self.master = master
        self.state = []

    def step(self, grads):
        if not self.state:
            for _p, n in self.master:
                self.state += [job.mem_alloc(0, n, "optimizer"), job.mem_alloc(0, n, "optimizer")]


def main():
    job.start(markers_default=True)
    job.open_devices(1)
    master = []
    for n in MASTER:
        p = job.mem_alloc(0, n, "weights")
        job.zero(0, p, n)
        master.append((p, n))
    model16 = half(master)
    opt, scaler = Adam(master), GradScaler()
    for s in range(STEPS):
        job.step(s)
        x = job.mem_alloc(0, BATCH, "prefetch")
        job.htod(0, x, BATCH)
        acts = [job.mem_alloc(0, 4 * vtc.MIB, "activations") for _ in MASTER]
        scaler.scale()
        g16 = []
        for (_p, n), a in zip(reversed(master), reversed(acts)):
            g16.append(job.mem_alloc(0, n // 2, "gradients"))
            job.mem_free(0, a)
        g32 = []
        for (_p, n), g in zip(reversed(master), g16):
            g32.append(job.mem_alloc(0, n, "gradients"))
            job.mem_free(0, g)
        found_inf = scaler.step(opt, g32)
        scaler.update(found_inf)
        for g in g32:
            job.mem_free(0, g)
        job.mem_free(0, x)
    assert model16
    job.line("no_finding whole_dataset_upload")
    job.line("finding prefetch_depth 0 1 %d" % BATCH)
    job.line("steps 0 %d" % STEPS)
    job.finish()


main()
