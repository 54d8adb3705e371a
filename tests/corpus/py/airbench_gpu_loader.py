#!/usr/bin/env python3
"""CIFAR-10 speed-run training in the airbench style: the whole training
set and the whole test set live on the GPU, augmentation and batching are
done there, no DataLoader. `CifarLoader(train=True, batch_size=1024,
aug=dict(translate=2), drop_last=True)` and `CifarLoader(train=False,
batch_size=2000)`; 3 epochs of 48 steps, then a test-time-augmented
evaluation. Modelled with PYTORCH_NO_CUDA_MEMORY_CACHING=1 (one
cudaMalloc / cudaFree per tensor).

What is modelled (sources read: airbench's `CifarLoader.__init__`
(`torch.load(data_path, map_location=gpu)` of the saved
`torch.tensor(dset.data)` uint8 images and int64 labels: each storage
uploaded whole; `(images.half() / 255).permute(0, 3, 1, 2)` with
channels-last strides: a half copy and its quotient, the uint8 tensor
dropped when the name is rebound), `__iter__` (at epoch 0 `normalize`
(`(x - mean) / std`: a temporary and the kept 'norm' copy) and the
reflect-padded copy kept in `proc_images['pad']`; per epoch `batch_crop`
(`randint` shifts, an `empty` output, per shift a boolean mask and the
masked images gathered then written), `randperm(device=...)`, per step
`images[idxs]` and `labels[idxs]` gathered on the device); `make_net`
(`nn.Sequential(...).cuda()`: one upload per parameter and buffer, then
`.to(memory_format=channels_last)` (4-D conv weights copied), then
`half()` of every non-BatchNorm module (fp16 copies, fp32 freed));
`init_whitening_conv` (patches of the first 5,000 training images
unfolded on the device, covariance, `eigh`, weights written in place);
`LookaheadState` (`{k: v.clone() for k, v in net.state_dict().items()}`,
lerp every 5 steps); torch/optim/sgd.py nesterov (`momentum_buffer` =
`clone(grad)` at the first step, foreach temporaries), `zero_grad()`
freeing the `.grad`s; `evaluate` with `tta_level=1` (each batch and its
`flip(-1)` through the net)). The mean and std constants are fp16 tensors
built with `torch.tensor(..., device=...)` (6 B each). Markers on (one per
step), driver by cuGetProcAddress (libcudart).

Truth: the uploaded uint8 images and int64 labels of both splits dataset,
four whole_dataset_upload findings (153,600,000 / 400,000 / 30,720,000 /
80,000 B); the half, quotient, normalised and padded copies and each
epoch's cropped copy dataset too (made on the device from the uploads, no
finding); parameters, BN buffers and lookahead copies weights; momentum
buffers optimizer; `.grad`s gradients; gathered batches, crop masks and
gathers, patches, forward and optimizer temporaries activations; mean /
std constants, `randint` shifts, `randperm` and `arange` indices other.
No prefetch (nothing is uploaded per step): no_finding prefetch_depth.
144 steps. Coincidences: each epoch's `randperm` (50,000 int64) is the
training labels' size (400,000 B) and the test `arange` the test labels'
(80,000 B): `other` beside `dataset`; the cropped copy is the size of the
quotient and of the normalised copy; a flipped test batch is a gathered
test batch (12,288,000 B)."""
import random

import vtc

job = vtc.Job("airbench_gpu_loader", "getproc", __doc__)
N_TRAIN, N_TEST, HW, PAD = 50000, 10000, 32, 2
BATCH, TEST_BATCH, EPOCHS = 1024, 2000, 3
STEPS_PER_EPOCH = N_TRAIN // BATCH                      # drop_last
# (name, weight numel, output channels)
CONVS = [("whiten", 24 * 3 * 2 * 2, 24), ("b1c1", 64 * 24 * 9, 64), ("b1c2", 64 * 64 * 9, 64),
         ("b2c1", 256 * 64 * 9, 256), ("b2c2", 256 * 256 * 9, 256),
         ("b3c1", 256 * 256 * 9, 256), ("b3c2", 256 * 256 * 9, 256)]
HEAD = 10 * 256                                         # Linear(256, 10, bias=False)


def alloc(n, cat):
    return job.mem_alloc(0, n, cat)


def free(*ptrs):
    job.mem_free(0, *ptrs)


class CifarLoader:
    def __init__(self, n, batch, train):
        self.n, self.batch, self.train = n, batch, train
        self.epoch = 0
        self.proc = {}
        self.images, self.labels = self.torch_load(n)
        self.images = self.to_half_channels_last(self.images, n)
        self.mean = job.upload(0, 6, "other")           # torch.tensor(CIFAR_MEAN, device=...)
        self.std = job.upload(0, 6, "other")

    def torch_load(self, n):
        """torch.load(map_location=gpu): _cuda_deserialize, one upload per storage."""
        images = job.upload(0, n * HW * HW * 3, "dataset")
        labels = job.upload(0, n * 8, "dataset")
        return images, labels

    def to_half_channels_last(self, u8, n):
        half = alloc(n * 3 * HW * HW * 2, "dataset")    # .half()
        quot = alloc(n * 3 * HW * HW * 2, "dataset")    # / 255
        free(half, u8)                                  # permute: a view with NHWC strides
        return quot

    def normalize(self, x):
        diff = alloc(self.n * 3 * HW * HW * 2, "dataset")
        out = alloc(self.n * 3 * HW * HW * 2, "dataset")
        free(diff)
        return out

    def batch_crop(self, padded, rng):
        shifts = alloc(self.n * 2 * 8, "other")         # randint(-r, r+1, (n, 2))
        out = alloc(self.n * 3 * HW * HW * 2, "dataset")  # torch.empty
        counts = [0] * 25
        for _ in range(self.n):
            counts[rng.randrange(25)] += 1
        for k in range(25):                              # for sy, for sx
            eq0 = alloc(self.n, "activations")          # shifts[:, 0] == sy
            eq1 = alloc(self.n, "activations")
            mask = alloc(self.n, "activations")         # &
            free(eq0, eq1)
            sel = alloc(counts[k] * 3 * (HW + 2 * PAD) * (HW + 2 * PAD) * 2, "activations")
            crop = alloc(counts[k] * 3 * HW * HW * 2, "activations")
            free(sel)                                   # images_out[mask] = crop
            free(crop, mask)
        free(shifts)
        return out

    def __iter__(self):
        rng = random.Random(self.epoch)
        if self.epoch == 0:
            self.proc["norm"] = self.normalize(self.images)
            if self.train:
                self.proc["pad"] = alloc(self.n * 3 * (HW + 2 * PAD) ** 2 * 2, "dataset")  # F.pad reflect
        images = self.batch_crop(self.proc["pad"], rng) if self.train else None
        self.epoch += 1
        if self.train:
            indices = alloc(self.n * 8, "other")        # randperm(n, device=...)
            nb = self.n // self.batch
        else:
            indices = alloc(self.n * 8, "other")        # arange(n, device=...)
            nb = (self.n + self.batch - 1) // self.batch
        for i in range(nb):
            b = min(self.batch, self.n - i * self.batch)
            x = alloc(b * 3 * HW * HW * 2, "activations")   # images[idxs]
            y = alloc(b * 8, "activations")                 # labels[idxs]
            yield x, y, b
            free(x, y)
        free(indices)
        if images is not None:
            free(images)


def make_net():
    """.cuda() uploads fp32 parameters and BN buffers in module order, then
    channels_last copies of the 4-D conv weights, then half() of the convs
    (BatchNorm kept float)."""
    convs, bns = [], []
    for name, numel, ch in CONVS:
        w = job.upload(0, numel * 4, "weights")
        b = job.upload(0, ch * 4, "weights") if name == "whiten" else None
        convs.append([w, numel, b, ch])
        if name != "whiten":
            bn = [job.upload(0, ch * 4, "weights") for _ in range(4)]   # weight, bias, mean, var
            bn.append(job.upload(0, 8, "weights"))                      # num_batches_tracked
            bns.append((bn, ch))
    head = job.upload(0, HEAD * 4, "weights")
    for c in convs:                                      # to(memory_format=channels_last)
        cl = alloc(c[1] * 4, "weights")
        free(c[0])
        c[0] = cl
    for c in convs:                                      # mod.half()
        h = alloc(c[1] * 2, "weights")
        free(c[0])
        c[0] = h
        if c[2] is not None:
            hb = alloc(c[3] * 2, "weights")
            free(c[2])
            c[2] = hb
    hh = alloc(HEAD * 2, "weights")
    free(head)
    return convs, bns, hh


def param_list(net):
    convs, bns, head = net
    out = []
    for w, numel, b, ch in convs:
        out.append((w, numel * 2))
        if b is not None:
            out.append((b, ch * 2))
    for bn, ch in bns:
        out.append((bn[0], ch * 4))
        out.append((bn[1], ch * 4))
    out.append((head, HEAD * 2))
    return out


def init_whitening_conv(train_images):
    patches = alloc(5000 * 31 * 31 * 12 * 2, "activations")    # unfold(2, 2, 1) ...
    flat = alloc(5000 * 31 * 31 * 12 * 4, "activations")       # .float()
    free(patches)
    cov = alloc(12 * 12 * 4, "activations")
    free(flat)
    evals = alloc(12 * 4, "activations")
    evecs = alloc(12 * 12 * 4, "activations")
    w = alloc(24 * 12 * 4, "activations")                       # cat(V/sqrt, -V/sqrt)
    free(cov, evals, evecs, w)                                  # weight.data[:] = w


ACT = [  # per-step forward outputs kept for backward (fp16, channels-last)
    24 * 31 * 31, 64 * 31 * 31, 64 * 15 * 15, 64 * 15 * 15,
    256 * 15 * 15, 256 * 7 * 7, 256 * 7 * 7, 256 * 3 * 3, 256 * 3 * 3, 256]


def forward(b, train):
    acts = [alloc(b * n * 2, "activations") for n in ACT]
    logits = alloc(b * 10 * 2, "activations")
    if not train:
        free(*acts)
        return logits, []
    return logits, acts


def train_step(x, y, b, params, opt):
    logits, acts = forward(b, True)
    loss = alloc(4, "activations")
    dlogits = alloc(b * 10 * 2, "activations")
    free(logits)
    grads = []
    for p, n in reversed(params):                       # AccumulateGrad
        grads.append(alloc(n, "gradients"))
    free(dlogits, *acts)
    opt.step(params, grads)
    job.dtoh(0, loss, 4)
    free(loss)
    free(*grads)                                        # zero_grad(set_to_none=True)


class NesterovSGD:
    def __init__(self):
        self.bufs = None

    def step(self, params, grads):
        if self.bufs is None:
            self.bufs = [alloc(n, "optimizer") for _p, n in params]   # clone(grad)
            for (p, n), buf in zip(params, self.bufs):
                job.dtod(0, buf, buf, n)
        wd = [alloc(n, "activations") for _p, n in params]            # _foreach_add(grads, params, alpha=wd)
        nest = [alloc(n, "activations") for _p, n in params]          # _foreach_add(grad, buf, alpha=momentum)
        free(*wd, *nest)


class LookaheadState:
    def __init__(self, state):
        self.ema = []
        for p, n in state:
            c = alloc(n, "weights")
            job.dtod(0, c, p, n)
            self.ema.append(c)

    def update(self, state):
        for (p, n), e in zip(state, self.ema):
            job.dtod(0, p, e, n)


def evaluate(test, net_params):
    for x, y, b in test:
        out1, _ = forward(b, False)
        flipped = alloc(b * 3 * HW * HW * 2, "activations")   # inputs.flip(-1)
        out2, _ = forward(b, False)
        free(flipped)
        avg = alloc(b * 10 * 2, "activations")
        free(out1, out2)
        correct = alloc(b, "activations")
        job.dtoh(0, correct, 1)
        free(avg, correct)


def main():
    job.start(markers_default=True)
    job.open_devices(1)
    test = CifarLoader(N_TEST, TEST_BATCH, train=False)
    train = CifarLoader(N_TRAIN, BATCH, train=True)
    net = make_net()
    params = param_list(net)
    init_whitening_conv(train.images)
    state = params + [(bn[2], ch * 4) for bn, ch in net[1]] + [(bn[3], ch * 4) for bn, ch in net[1]]
    lookahead = LookaheadState(state)
    opt = NesterovSGD()
    s = 0
    for _epoch in range(EPOCHS):
        for x, y, b in train:
            job.step(s)
            train_step(x, y, b, params, opt)
            s += 1
            if s % 5 == 0:
                lookahead.update(state)
    evaluate(test, params)
    free(*lookahead.ema, *opt.bufs)
    for w, _n, b, _c in net[0]:
        free(w)
        if b is not None:
            free(b)
    for bn, _ch in net[1]:
        free(*bn)
    free(net[2])
    for loader in (train, test):
        free(*loader.proc.values(), loader.images, loader.labels, loader.mean, loader.std)
    job.line("finding whole_dataset_upload 0 %d" % (N_TEST * HW * HW * 3))
    job.line("finding whole_dataset_upload 0 %d" % (N_TEST * 8))
    job.line("finding whole_dataset_upload 0 %d" % (N_TRAIN * HW * HW * 3))
    job.line("finding whole_dataset_upload 0 %d" % (N_TRAIN * 8))
    job.line("no_finding prefetch_depth")
    job.line("steps 0 %d" % s)
    job.finish()


main()
