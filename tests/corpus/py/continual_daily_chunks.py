#!/usr/bin/env python3
"""Continual (online) training of a CTR model on daily chunks: a trainer that
every 30 steps receives the next day's features and labels from its feature
store, puts them on the device whole, evaluates on them first
("test-then-train", the prequential protocol of Avalanche's / River's
streaming evaluation), then trains on them, mixing in rows from a rehearsal
buffer kept on the device (Avalanche `ReplayPlugin` with a reservoir
`ExperienceBalancedBuffer`, here held as device tensors); per-tensor
cudaMalloc (PYTORCH_NO_CUDA_MEMORY_CACHING=1).

What is modelled (sources read: avalanche/training/templates/base_sgd.py
`_before_training_exp`, `training_epoch`; avalanche/training/plugins/
replay.py `ReplayPlugin.before_training_exp` / `after_training_exp`;
avalanche/training/storage_policy.py `ReservoirSamplingBuffer.update`;
torch/utils/data TensorDataset over device tensors (a batch is an index
gather, no copy from the host); torch/nn/modules/module.py `_apply`;
torch/optim/adam.py `_multi_tensor_adam` (state at the first step)):
  - `model.to(device)`: a DCN-v2-shaped model (dense embedding of 64
    features, 3 cross layers, 3 MLP layers, a logit);
  - the rehearsal buffer (16,384 rows x 64 features, and its labels)
    `torch.empty(..., device=...)` before the first chunk, filled from each
    chunk on the device by `index_copy_` (no upload);
  - per day: `x = torch.from_numpy(X_day).to(device)`,
    `y = torch.from_numpy(y_day).to(device)` (the previous day's tensors are
    released only when the new ones are bound: both days live at once for a
    moment), a no-grad evaluation over the whole day in 16,384-row slices,
    30 steps of 4,096 rows (3,072 gathered from the day by a `randperm`
    index made on the device, 1,024 from the buffer, concatenated), then
    the reservoir update.
Markers on, driver by dlsym.

Truth: each day's x and y are dataset, each uploaded whole once: TEN
whole_dataset_upload findings (5 days: 200,000, 180,000, 240,000, 200,000
and 160,000 rows x 256 B, and 4 B labels per row). The rehearsal buffer is
dataset (filled on the device, no finding). Parameters weights, `.grad`s
gradients (kept, zeroed in place), Adam state optimizer, gathered batches,
indices, forward and backward tensors activations. No prefetch (nothing
uploaded per step); 150 steps. Coincidences: days 1 and 4 are the same
size (51,200,000 B x, 800,000 B y); the rehearsal buffer's features
(16,384 x 64 float32 = 4 MiB) are the size of the 1024 x 1024 MLP weight
and of a training batch's cross-layer output (4,096 x 256 float32)."""
import vtc

job = vtc.Job("continual_daily_chunks", "dlsym", __doc__)
F, B, FROM_DAY, FROM_BUF, BUF, SLICE = 64, 4096, 3072, 1024, 16384, 16384
DAYS = (200000, 180000, 240000, 200000, 160000)
STEPS_PER_DAY = 30


def sizes():
    out = [F * 256 * 4, 256 * 4]  # dense projection
    for _ in range(3):  # cross layers: W, b
        out += [256 * 256 * 4, 256 * 4]
    for a, b in ((256, 1024), (1024, 1024), (1024, 256)):  # MLP
        out += [a * b * 4, b * 4]
    out += [512 * 4, 4]  # logit over [cross, deep]
    return out


class Model:
    def __init__(self):
        self.sizes = sizes()
        self.params = [job.upload(0, n, "weights") for n in self.sizes]
        self.grads = None
        self.state = None

    def forward(self, rows, train):
        hs = [job.mem_alloc(0, rows * 256 * 4, "activations")]
        for _ in range(3):
            hs.append(job.mem_alloc(0, rows * 256 * 4, "activations"))
        for w in (1024, 1024, 256):
            hs.append(job.mem_alloc(0, rows * w * 4, "activations"))
        out = job.mem_alloc(0, rows * 4, "activations")
        if not train:
            job.mem_free(0, *hs)
            hs = []
        return out, hs

    def backward(self, rows, saved):
        if self.grads is None:
            self.grads = [job.mem_alloc(0, n, "gradients") for n in reversed(self.sizes)]
        else:
            for g, n in zip(self.grads, reversed(self.sizes)):
                job.zero(0, g, n)  # zero_grad(set_to_none=False)
        g = job.mem_alloc(0, rows * 256 * 4, "activations")
        for w in (1024, 1024):
            g2 = job.mem_alloc(0, rows * w * 4, "activations")
            job.mem_free(0, g)
            g = g2
        job.mem_free(0, g, *saved)

    def adam(self):
        if self.state is None:
            self.state = []
            for n in self.sizes:
                for _ in range(2):
                    s = job.mem_alloc(0, n, "optimizer")
                    job.zero(0, s, n)
                    self.state.append(s)
        tmp = [job.mem_alloc(0, n, "activations") for n in self.sizes]
        job.mem_free(0, *tmp)


def main():
    job.start(markers_default=True)
    job.open_devices(1)
    model = Model()
    buf_x = job.mem_alloc(0, BUF * F * 4, "dataset")  # the rehearsal buffer
    buf_y = job.mem_alloc(0, BUF * 4, "dataset")
    x = y = None
    step = 0
    for rows in DAYS:
        nx = job.upload(0, rows * F * 4, "dataset")
        ny = job.upload(0, rows * 4, "dataset")
        if x is not None:
            job.mem_free(0, x, y)
        x, y = nx, ny
        for start in range(0, rows, SLICE):  # test-then-train evaluation
            n = min(SLICE, rows - start)
            out, _ = model.forward(n, train=False)
            correct = job.mem_alloc(0, n, "activations")
            job.mem_free(0, out)
            job.dtoh(0, correct, 8)
            job.mem_free(0, correct)
        for _ in range(STEPS_PER_DAY):
            job.step(step)
            perm = job.mem_alloc(0, rows * 8, "activations")  # randperm(device=...)
            idx = job.mem_alloc(0, FROM_BUF * 8, "activations")  # randint into the buffer
            parts = [job.mem_alloc(0, FROM_DAY * F * 4, "activations"),
                     job.mem_alloc(0, FROM_DAY * 4, "activations"),
                     job.mem_alloc(0, FROM_BUF * F * 4, "activations"),
                     job.mem_alloc(0, FROM_BUF * 4, "activations")]
            bx = job.mem_alloc(0, B * F * 4, "activations")  # torch.cat
            by = job.mem_alloc(0, B * 4, "activations")
            job.mem_free(0, perm, idx, *parts)
            out, saved = model.forward(B, train=True)
            loss = job.mem_alloc(0, 4, "activations")
            model.backward(B, saved + [out])
            model.adam()
            job.dtoh(0, loss, 4)
            job.mem_free(0, loss, bx, by)
            step += 1
        # reservoir update: chosen rows copied into the buffer on the device
        sel = job.mem_alloc(0, BUF * 8, "activations")
        job.dtod(0, buf_x, x, BUF * F * 4)
        job.dtod(0, buf_y, y, BUF * 4)
        job.mem_free(0, sel)
    job.mem_free(0, x, y, buf_x, buf_y, *model.grads, *model.state, *model.params)
    for rows in DAYS:
        job.line("finding whole_dataset_upload 0 %d" % (rows * F * 4))
        job.line("finding whole_dataset_upload 0 %d" % (rows * 4))
    job.line("no_finding prefetch_depth")
    job.line("steps 0 %d" % step)
    job.finish()


main()
