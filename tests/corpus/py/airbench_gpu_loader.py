#!/usr/bin/env python3
"""CIFAR-10 speed-run training as airbench94.py does it: the whole
training set and the whole test set live on the GPU, augmentation and
batching are done there, no DataLoader. `CifarLoader('cifar10',
train=True, batch_size=512, aug=dict(translate=2))` (flip off, batch 512:
the run's knobs, chosen to keep the job under 2 GiB) and
`CifarLoader('cifar10', train=False, batch_size=2000)`; 4 epochs of 97
steps, each followed by a validation pass, then the tta_level=2
evaluation. Modelled with PYTORCH_NO_CUDA_MEMORY_CACHING=1 (one
cudaMalloc / cudaFree per tensor).

What is modelled (source read: KellerJordan/cifar10-airbench
airbench94.py: `CifarLoader.__init__` (`torch.load(data_path,
map_location=gpu)` of the saved `torch.tensor(dset.data)` uint8 images and
int64 labels: each storage uploaded whole; `(images.half() /
255).permute(0, 3, 1, 2).to(memory_format=channels_last)`: a half copy
and its quotient (already channels-last: no third copy), the uint8 tensor
dropped when the name is rebound); `self.normalize =
T.Normalize(CIFAR_MEAN, CIFAR_STD)` with CPU constants (torchvision's
`normalize`: `tensor.clone()`, mean and std `as_tensor(..., device=...)`
uploaded at each call, `(std == 0).any()` read back, `sub_` / `div_` in
place); `__iter__` (at the loader's first epoch the normalised copy kept
in `proc_images['norm']` and, with translate, the reflect-padded copy in
`proc_images['pad']`; per epoch `batch_crop` (`randint` shifts, an
`empty` output, per shift two comparisons, their `&`, the masked images
gathered then written), `randperm` / `arange(device=...)`, per step
`images[idxs]` and `labels[idxs]` gathered on the device); `make_net`
(`net.half().cuda()`: one upload per fp16 parameter and buffer, then
`.to(memory_format=channels_last)` (every 4-D conv weight copied), then
`mod.float()` of each BatchNorm (fp32 copies of weight, bias and running
statistics, the fp16 ones freed)); `init_whitening_conv` on
`normalize(images[:5000])` (`get_patches`: unfold views reshaped into a
copy, `.float()`; covariance; `eigh`; flips; `cat` written into the
weight in place); the loop (`outputs = model(inputs)`, loss,
`zero_grad(set_to_none=True)` AFTER the forward, so the previous step's
`.grad`s live through it, `backward`, `step`); torch/optim/sgd.py
(nesterov, foreach: `momentum_buffer` = `clone(grad)` at the first step,
weight-decayed and nesterov gradients as new lists); BatchNorm weights and
the whitening weight frozen, the whitening bias trained for 3 epochs;
`LookaheadState` from epoch 3 (`{k: v.clone() for k, v in
net.state_dict().items()}` at the first 5th step, `lerp_` and `copy_` in
place after); validation (per batch outputs, a loss and an accuracy
scalar kept until `torch.stack`); `infer_mirror_translate` (flips, a
reflect pad, two translated views, `stack`, `mean`, one `cat` of all
logits)). Markers on (one per step), driver by cuGetProcAddress
(libcudart).

Truth: the uploaded uint8 images and int64 labels of both splits dataset,
four whole_dataset_upload findings (153,600,000 / 400,000 / 30,720,000 /
80,000 B); the half, quotient, normalised and padded copies, each
epoch's cropped copy and the normalised test set of the final evaluation
dataset too (made on the device from the uploads, no finding);
parameters, BN buffers and lookahead copies weights; momentum buffers
optimizer; `.grad`s gradients; gathered batches, crop masks and gathers,
patches, forward, backward and optimizer temporaries, validation and TTA
outputs activations; mean / std uploads, `randint` shifts, `randperm` and
`arange` indices other. No prefetch (nothing is uploaded per step):
no_finding prefetch_depth. 388 steps. Coincidences: each epoch's
`randperm` (50,000 int64) is the training labels' size (400,000 B) and
the test `arange` the test labels' (80,000 B): `other` beside `dataset`;
the normalised 5,000-image slice made for the whitening init
(activations) is the size of the uploaded uint8 test images
(30,720,000 B, dataset); the cropped copy is the size of the quotient and
of the normalised copy."""
import random

import vtc

job = vtc.Job("airbench_gpu_loader", "getproc", __doc__)
N_TRAIN, N_TEST, HW, PAD = 50000, 10000, 32, 2
BATCH, TEST_BATCH, EPOCHS = 512, 2000, 4
EMA_START, EMA_EVERY, WHITEN_BIAS_EPOCHS = 3, 5, 3
IMG = 3 * HW * HW                                       # elements per image


def alloc(n, cat):
    return job.mem_alloc(0, n, cat)


def free(*ptrs):
    job.mem_free(0, *ptrs)


def normalize(x_elems, out_cat):
    """torchvision normalize(tensor): clone, mean / std to the device,
    (std == 0).any() read back, sub_ / div_ in place."""
    out = alloc(x_elems * 2, out_cat)                   # tensor.clone()
    mean = job.upload(0, 6, "other")                    # as_tensor(mean, half, device)
    std = job.upload(0, 6, "other")
    eq = alloc(3, "other")
    anyv = alloc(1, "other")
    job.dtoh(0, anyv, 1)
    free(eq, anyv)
    free(mean, std)
    return out


class CifarLoader:
    def __init__(self, n, batch, train, translate=0):
        self.n, self.batch, self.train, self.translate = n, batch, train, translate
        self.epoch = 0
        self.proc = {}
        self.held = None
        images = job.upload(0, n * HW * HW * 3, "dataset")   # torch.load(map_location=gpu)
        self.labels = job.upload(0, n * 8, "dataset")
        half = alloc(n * IMG * 2, "dataset")            # .half()
        self.images = alloc(n * IMG * 2, "dataset")     # / 255
        free(half, images)

    def __len__(self):
        return self.n // self.batch if self.train else (self.n + self.batch - 1) // self.batch

    def batch_crop(self, rng):
        shifts = alloc(self.n * 2 * 8, "other")         # randint(-r, r+1, (n, 2))
        out = alloc(self.n * IMG * 2, "dataset")        # torch.empty
        counts = [0] * 25
        for _ in range(self.n):
            counts[rng.randrange(25)] += 1
        for k in range(25):                             # for sy: for sx:
            eq0 = alloc(self.n, "activations")          # shifts[:, 0] == sy
            eq1 = alloc(self.n, "activations")
            mask = alloc(self.n, "activations")         # &
            free(eq0, eq1)
            crop = alloc(counts[k] * IMG * 2, "activations")   # images[mask, :, ...]
            free(crop, mask)                            # images_out[mask] = ...
        free(shifts)
        return out

    def __iter__(self):
        rng = random.Random(self.epoch)
        if self.epoch == 0:
            self.proc["norm"] = normalize(self.n * IMG, "dataset")
            if self.translate:
                self.proc["pad"] = alloc(self.n * 3 * (HW + 2 * PAD) ** 2 * 2, "dataset")
        cropped = self.batch_crop(rng) if self.translate else None
        self.epoch += 1
        indices = alloc(self.n * 8, "other")            # randperm / arange(device=...)
        for i in range(len(self)):
            b = min(self.batch, self.n - i * self.batch)
            x = alloc(b * IMG * 2, "activations")       # images[idxs]
            y = alloc(b * 8, "activations")             # labels[idxs]
            if self.held:
                free(*self.held)                        # the loop rebinds inputs, labels
            self.held = (x, y)
            yield x, y, b
        free(indices)
        if cropped is not None:
            free(cropped)

    def drop_held(self):
        if self.held:
            free(*self.held)
        self.held = None


CONVS = [(24 * 3 * 2 * 2, 24)] + [(64 * 24 * 9, 64), (64 * 64 * 9, 64), (256 * 64 * 9, 256),
                                  (256 * 256 * 9, 256), (256 * 256 * 9, 256), (256 * 256 * 9, 256)]
HEAD = 10 * 256


class Net:
    """make_net(): net.half().cuda(), channels_last, BatchNorm .float()."""

    def __init__(self):
        self.conv = []                                  # [ptr, bytes]
        self.bn = []                                    # [[w, b, mean, var, nbt], ch]
        for i, (numel, ch) in enumerate(CONVS):
            if i == 0:                                  # the whitening conv: weight, bias
                self.conv.append([job.upload(0, numel * 2, "weights"), numel * 2])
                self.whiten_bias = job.upload(0, 24 * 2, "weights")
                continue
            self.conv.append([job.upload(0, numel * 2, "weights"), numel * 2])
            bn = [job.upload(0, ch * 2, "weights") for _ in range(4)]
            bn.append(job.upload(0, 8, "weights"))      # num_batches_tracked (int64)
            self.bn.append([bn, ch])
        self.head = job.upload(0, HEAD * 2, "weights")
        for c in self.conv:                             # .to(memory_format=channels_last)
            cl = alloc(c[1], "weights")
            free(c[0])
            c[0] = cl
        for bn, ch in self.bn:                          # mod.float()
            for k in range(4):
                f = alloc(ch * 4, "weights")
                free(bn[k])
                bn[k] = f

    def trainable(self, epoch):
        """(ptr, bytes) with requires_grad, in named_parameters order."""
        out = [] if epoch >= WHITEN_BIAS_EPOCHS else [(self.whiten_bias, 48)]
        for i, (p, n) in enumerate(self.conv):
            if i:
                out.append((p, n))
                bn, ch = self.bn[i - 1]
                out.append((bn[1], ch * 4))             # norm bias (weight frozen)
        out.append((self.head, HEAD * 2))
        return out

    def state(self):
        out = [(self.conv[0][0], self.conv[0][1]), (self.whiten_bias, 48)]
        for i, (p, n) in enumerate(self.conv[1:]):
            bn, ch = self.bn[i]
            out.append((p, n))
            out += [(bn[k], ch * 4) for k in range(4)] + [(bn[4], 8)]
        return out + [(self.head, HEAD * 2)]

    def forward(self, b, train):
        """Saved outputs per image, fp16 channels-last: whiten conv + GELU,
        then per group conv1, max-pool (+ int64 indices), BN (+ fp32 save
        stats), GELU, conv2, BN, GELU; MaxPool2d(3); Linear; Mul."""
        sizes = [24 * 31 * 31 * 2, 24 * 31 * 31 * 2]
        for ch, hw_in, hw in ((64, 31, 15), (256, 15, 7), (256, 7, 3)):
            sizes += [ch * hw_in * hw_in * 2, ch * hw * hw * 2, ch * hw * hw * 8,
                      ch * hw * hw * 2, ch * hw * hw * 2, ch * hw * hw * 2, ch * hw * hw * 2,
                      ch * hw * hw * 2]
        sizes += [256 * 2, 256 * 8, 10 * 2]
        saved = []
        for n in sizes:
            t = alloc(b * n, "activations")
            if train:
                saved.append(t)
            else:
                if saved:
                    free(saved.pop())
                saved.append(t)
        out = alloc(b * 10 * 2, "activations")          # Mul(scaling_factor)
        if not train:
            free(*saved)
            return out, []
        return out, saved


def init_whitening_conv(net, train_images):
    n = 5000 * 31 * 31
    patches = alloc(n * 12 * 2, "activations")          # unfold.unfold.transpose.reshape
    flat = alloc(n * 12 * 4, "activations")             # .float()
    free(patches)
    cov = alloc(12 * 12 * 4, "activations")             # patches_flat.T @ patches_flat
    covn = alloc(12 * 12 * 4, "activations")            # / n
    free(cov)
    evals = alloc(12 * 4, "activations")                # eigh
    evecs = alloc(12 * 12 * 4, "activations")
    evals_f = alloc(12 * 4, "activations")              # flip(0)
    evecs_t = alloc(12 * 12 * 4, "activations")         # .T.reshape(...)
    evecs_f = alloc(12 * 12 * 4, "activations")         # .flip(0)
    free(evals, evecs, evecs_t, covn, flat)
    plus = alloc(12 * 4, "activations")                 # eigenvalues + eps
    root = alloc(12 * 4, "activations")                 # sqrt
    scaled = alloc(12 * 12 * 4, "activations")          # eigenvectors / sqrt(...)
    neg = alloc(12 * 12 * 4, "activations")
    both = alloc(24 * 12 * 4, "activations")            # torch.cat
    job.dtod(0, net.conv[0][0], both, 24 * 12 * 2)      # weight.data[:] = ...
    free(plus, root, neg, scaled, both, evals_f, evecs_f, train_images)


class SGD:
    """foreach nesterov SGD with weight decay."""

    def __init__(self):
        self.bufs = {}

    def step(self, params, grads):
        wd = [alloc(n, "activations") for _p, n in params]     # _foreach_add(grads, params)
        new = [(p, n) for p, n in params if p not in self.bufs]
        for (p, n), g in zip(params, wd):
            if p not in self.bufs:                      # clone(grad)
                self.bufs[p] = alloc(n, "optimizer")
                job.dtod(0, self.bufs[p], g, n)
        nest = [alloc(n, "activations") for _p, n in params]   # _foreach_add(grads, bufs)
        free(*wd, *nest)
        return new


class LookaheadState:
    def __init__(self, state):
        self.ema = []
        for p, n in state:                              # v.clone()
            c = alloc(n, "weights")
            job.dtod(0, c, p, n)
            self.ema.append(c)

    def update(self, state):
        for (p, n), e in zip(state, self.ema):          # lerp_, copy_
            if n != 8:
                job.dtod(0, p, e, n)


def loss_fn(b):
    per = alloc(b * 4, "activations")                   # cross_entropy(reduction='none')
    lsm = alloc(b * 10 * 4, "activations")
    total = alloc(4, "activations")                     # .sum()
    return total, [per, lsm]


def validate(net, test):
    kept = []
    for x, y, b in test:
        out, _ = net.forward(b, False)
        loss, tmp = loss_fn(b)
        lmean = alloc(4, "activations")                 # .float().mean()
        am = alloc(b * 8, "activations")                # argmax(1)
        eq = alloc(b, "activations")
        eqf = alloc(b * 4, "activations")
        amean = alloc(4, "activations")
        free(*tmp, loss, am, eq, eqf, out)
        kept += [lmean, amean]
    test.drop_held()
    for _ in range(2):                                  # torch.stack(...).mean().item()
        st = alloc(len(kept) // 2 * 4, "activations")
        m = alloc(4, "activations")
        job.dtoh(0, m, 4)
        free(st, m)
    free(*kept)


def infer_mirror(net, b, x):
    a, _ = net.forward(b, False)
    flipped = alloc(b * IMG * 2, "activations")         # inputs.flip(-1)
    c, _ = net.forward(b, False)
    free(flipped)
    ha = alloc(b * 10 * 2, "activations")
    hc = alloc(b * 10 * 2, "activations")
    s = alloc(b * 10 * 2, "activations")
    free(a, c, ha, hc)
    return s


def tta_evaluate(net, test):
    images = normalize(N_TEST * IMG, "dataset")         # test_loader.normalize(test_loader.images)
    outs = []
    for i in range(N_TEST // TEST_BATCH):               # test_images.split(2000)
        b = TEST_BATCH
        logits = infer_mirror(net, b, images)
        padded = alloc(b * 3 * (HW + 2) ** 2 * 2, "activations")   # F.pad(inputs, 1, 'reflect')
        trans = [infer_mirror(net, b, padded) for _ in range(2)]
        free(padded)
        st = alloc(2 * b * 10 * 2, "activations")       # torch.stack
        mean = alloc(b * 10 * 2, "activations")
        free(st, *trans)
        h1 = alloc(b * 10 * 2, "activations")
        h2 = alloc(b * 10 * 2, "activations")
        out = alloc(b * 10 * 2, "activations")
        free(h1, h2, mean, logits)
        outs.append(out)
    cat = alloc(N_TEST * 10 * 2, "activations")         # torch.cat
    free(*outs)
    am = alloc(N_TEST * 8, "activations")
    eq = alloc(N_TEST, "activations")
    eqf = alloc(N_TEST * 4, "activations")
    m = alloc(4, "activations")
    job.dtoh(0, m, 4)
    free(am, eq, eqf, m, cat, images)


def main():
    job.start(markers_default=True)
    job.open_devices(1)
    train = CifarLoader(N_TRAIN, BATCH, train=True, translate=PAD)
    test = CifarLoader(N_TEST, TEST_BATCH, train=False)
    net = Net()
    opt = SGD()
    init_whitening_conv(net, normalize(5000 * IMG, "activations"))
    lookahead = None
    s = 0
    grads = []
    for epoch in range(EPOCHS):
        params = net.trainable(epoch)
        prev = None
        for x, y, b in train:
            job.step(s)
            out, saved = net.forward(b, True)           # outputs = model(inputs)
            if prev:
                free(prev[0])
            loss, tmp = loss_fn(b)                      # loss = loss_fn(outputs, labels).sum()
            if prev:
                free(prev[1])
            free(*grads)                                # zero_grad(set_to_none=True)
            dout = alloc(b * 10 * 2, "activations")     # loss.backward()
            grads = [alloc(n, "gradients") for _p, n in reversed(params)]
            free(dout, *tmp, *saved)
            opt.step(params, grads[::-1])
            s += 1
            if epoch >= EMA_START and s % EMA_EVERY == 0:
                if lookahead is None:
                    lookahead = LookaheadState(net.state())
                else:
                    lookahead.update(net.state())
            prev = (out, loss)
        if lookahead is not None:
            lookahead.update(net.state())
        out, loss = prev                                # train_acc, train_loss of the last batch
        am = alloc(BATCH * 8, "activations")
        eq = alloc(BATCH, "activations")
        eqf = alloc(BATCH * 4, "activations")
        m = alloc(4, "activations")
        job.dtoh(0, m, 4)
        job.dtoh(0, loss, 4)
        free(am, eq, eqf, m, out, loss)
        train.drop_held()
        validate(net, test)
    tta_evaluate(net, test)
    free(*grads)
    free(*(lookahead.ema if lookahead else []), *opt.bufs.values())
    free(net.whiten_bias, *[c[0] for c in net.conv], net.head)
    for bn, _ch in net.bn:
        free(*bn)
    for loader in (train, test):
        free(*loader.proc.values(), loader.images, loader.labels)
    job.line("finding whole_dataset_upload 0 %d" % (N_TRAIN * HW * HW * 3))
    job.line("finding whole_dataset_upload 0 %d" % (N_TRAIN * 8))
    job.line("finding whole_dataset_upload 0 %d" % (N_TEST * HW * HW * 3))
    job.line("finding whole_dataset_upload 0 %d" % (N_TEST * 8))
    job.line("no_finding prefetch_depth")
    job.line("steps 0 %d" % s)
    job.finish()


main()
