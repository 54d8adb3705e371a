#!/usr/bin/env python3
"""PyTorch with the whole dataset moved to the GPU before the model exists
(PYTORCH_NO_CUDA_MEMORY_CACHING=1: one cudaMalloc per tensor). A common
small-data recipe: x, y = to_device(torch.from_numpy(X)), ... ->
Tensor.cuda() (one allocation and one upload each), then
TensorDataset(x, y) (torch/utils/data/dataset.py: keeps the two tensors, no
copy). Only then is the model built and restored: Net().cuda() (Module.cuda
-> _apply(convert): allocation + upload of the random initial parameters),
torch.load(path, map_location="cuda") (torch/serialization.py
_cuda_deserialize -> storage.cuda(): each saved tensor uploaded into a NEW
allocation), model.load_state_dict(sd) (_load_from_state_dict ->
param.copy_: device to device), `del sd` (the restored copies freed). Each
epoch torch.randperm(n, device="cuda") makes the permutation on the device;
each step takes idx = perm[i:i+B] (a view, no allocation) and gathers
x[idx], y[idx] (index_select kernels: new tensors, no host copy and no
device-to-device memcpy). Adam (torch/optim/adam.py _init_group:
exp_avg/exp_avg_sq zeros_like in the first step), zero_grad(set_to_none=True).
Markers on, driver by cuGetProcAddress.

Truth: x (40 MiB) and y (160 KiB) dataset, whole_dataset_upload for both
(the data is on the device whole, uploaded once, before any weight); the
parameters and the checkpoint's transient copies weights (the copies are the
restored parameters, alive only until load_state_dict has copied them);
.grads gradients; Adam state optimizer; the permutation, the gathered
batches and the forward's tensors activations (a batch sliced or gathered
on the device is activations, the corpus convention); no prefetch (nothing
is uploaded per step); 3 epochs x 6 steps = 18 steps. The gathered x batch
is exactly the size of the first layer's weight (2 MiB)."""
import vtc

job = vtc.Job("tensordataset_gather", "getproc", __doc__)
MIB, KIB = vtc.MIB, vtc.KIB
X_BYTES, Y_BYTES = 40 * MIB, 160 * KIB
ROWS = 10240                      # 4 KiB a sample
PARAMS = (2 * MIB, 4 * KIB, 6 * MIB, 6 * KIB, 768 * KIB, 1 * KIB)
BATCH_ROWS = 512                  # x batch 2 MiB (= PARAMS[0]), y batch 8 KiB
EPOCHS, STEPS_PER_EPOCH = 3, 6


def to_device(nbytes):
    """Tensor.cuda(): a new device tensor filled from the host."""
    t = job.mem_alloc(0, nbytes, "dataset")
    job.htod(0, t, nbytes)
    return t


class TensorDataset:
    def __init__(self, *tensors):
        self.tensors = tensors


def convert(nbytes):
    p = job.mem_alloc(0, nbytes, "weights")
    job.htod(0, p, nbytes)
    return p


class Net:
    def __init__(self):
        self.params = []

    def _apply(self, fn):
        self.params = [fn(n) for n in PARAMS]
        return self

    def cuda(self):
        return self._apply(convert)

    def _load_from_state_dict(self, param, src, nbytes):
        job.dtod(0, param, src, nbytes)  # param.copy_(input_param)

    def load_state_dict(self, sd):
        for p, (src, n) in zip(self.params, sd):
            self._load_from_state_dict(p, src, n)

    def forward(self, xb):
        return [job.mem_alloc(0, n, "activations") for n in (1 * MIB, 1 * MIB, 64 * KIB)]


def _cuda_deserialize(nbytes):
    t = job.mem_alloc(0, nbytes, "weights")
    job.htod(0, t, nbytes)
    return t


def load(path):
    """torch.load(path, map_location="cuda")."""
    return [(_cuda_deserialize(n), n) for n in PARAMS]


class Adam:
    def __init__(self, params):
        self.params = params
        self.state = []

    def _init_group(self):
        for n in PARAMS:
            for _ in ("exp_avg", "exp_avg_sq"):
                s = job.mem_alloc(0, n, "optimizer")
                job.zero(0, s, n)
                self.state.append(s)

    def step(self):
        if not self.state:
            self._init_group()


def randperm(n):
    return job.mem_alloc(0, n * 8, "activations")  # int64 on the device


def index_select(nbytes):
    return job.mem_alloc(0, nbytes, "activations")


def train_epoch(ds, model, opt, step0):
    x, y = ds.tensors
    perm = randperm(ROWS)
    for i in range(STEPS_PER_EPOCH):
        job.step(step0 + i)
        xb = index_select(BATCH_ROWS * (X_BYTES // ROWS))  # x[idx]
        yb = index_select(BATCH_ROWS * (Y_BYTES // ROWS))  # y[idx]
        acts = model.forward(xb)
        loss = job.mem_alloc(0, 4, "activations")
        grads = [job.mem_alloc(0, n, "gradients") for n in reversed(PARAMS)]
        for a in reversed(acts):
            job.mem_free(0, a)
        opt.step()
        for g in grads:  # zero_grad(set_to_none=True)
            job.mem_free(0, g)
        for t in (loss, yb, xb):
            job.mem_free(0, t)
    job.mem_free(0, perm)


def main():
    job.start(markers_default=True)
    job.open_devices(1)
    x = to_device(X_BYTES)
    y = to_device(Y_BYTES)
    ds = TensorDataset(x, y)
    model = Net().cuda()
    sd = load("checkpoint.pt")
    model.load_state_dict(sd)
    for t, _ in sd:  # del sd
        job.mem_free(0, t)
    opt = Adam(model.params)
    for e in range(EPOCHS):
        train_epoch(ds, model, opt, e * STEPS_PER_EPOCH)
    for t in opt.state + model.params + [y, x]:
        job.mem_free(0, t)
    job.line("finding whole_dataset_upload 0 %d" % X_BYTES)
    job.line("finding whole_dataset_upload 0 %d" % Y_BYTES)
    job.line("no_finding prefetch_depth")
    job.line("steps 0 %d" % (EPOCHS * STEPS_PER_EPOCH))
    job.finish()


main()
