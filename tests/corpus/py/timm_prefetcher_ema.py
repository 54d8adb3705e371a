#!/usr/bin/env python3
"""timm `train.py --channels-last --model-ema --opt sgd --momentum 0.9`
on a small ResNet (ResNet-18-shaped, 600 classes, 160 x 160 crops, batch
64), the default CUDA prefetcher (`use_prefetcher=True`), under
PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync (one cuMemAllocAsync per
tensor, cuMemFreeAsync when it dies).

What is modelled (sources read: timm/data/loader.py `create_loader`
(`fast_collate`: uint8 NCHW images, int64 targets, no normalisation on the
host) and `PrefetchLoader.__iter__` (for each host batch, on a side
stream: `next_input.to(device, non_blocking=True)`, `next_target.to(...)`,
then `next_input.to(img_dtype).sub_(mean).div_(std)`: a float32 copy made
from the uint8 upload, which dies when the name is rebound; the batch
uploaded at iteration n is yielded at iteration n+1, so the next batch is
already on the device while the current one is trained on; `mean` / `std`
made once as (1, 3, 1, 1) device tensors); timm/utils/model_ema.py
`ModelEmaV2` (`deepcopy(model)` after `model.cuda()`: every parameter and
buffer copied on the device; `update`: `ema_v.copy_(decay * e + (1 -
decay) * m)` per state_dict entry, three temporaries each);
torch/optim/sgd.py `_single_tensor_sgd` (`momentum_buffer = torch.clone(
grad).detach()` at the first step, updated in place after);
torch/nn/modules/module.py `zero_grad` (set_to_none=True);
train.py `train_one_epoch` (`input = input.contiguous(memory_format=
torch.channels_last)` in the loop: a layout copy of each batch) and
`validate` run on the EMA model after each epoch):
  - the model built on the host and moved with `model.cuda()`: every
    parameter and BatchNorm buffer uploaded; `model.to(memory_format=
    torch.channels_last)` rewrites each 4-D conv weight as a new tensor
    (the NCHW one freed);
  - ModelEmaV2 deep-copies the model on the device;
  - 2 epochs of 10 steps: the prefetcher's upload of the next batch, the
    step's channels-last copy, forward (saved activations), backward
    (`.grad`s made by the first backward of each step, freed by
    zero_grad), SGD, EMA update;
  - after each epoch, 3 validation batches through a second
    PrefetchLoader on the EMA model (no_grad).
No markers (timm calls none), driver by cuGetProcAddress (libcudart).

Truth: parameters, BatchNorm running stats (and `num_batches_tracked`),
their EMA copies, and the normalisation constants weights; `.grad`s
gradients; momentum buffers optimizer; uint8 uploads, their float32
copies and the targets prefetch (depth 2: while step n runs, batch n and
batch n + 1 are both on the device; the float copy of a batch is the same
batch; the training loop's `target` name keeps the previous batch's 512 B
target alive until the next batch is handed over, which is not counted as
a third batch); the channels-last copy of the batch, forward and backward tensors
and EMA temporaries activations. No dataset; 20 steps. Coincidences: a
uint8 batch (64 x 3 x 160 x 160 = 4,915,200 B) is exactly the fc weight
(600 x 2048 float32); a momentum buffer, a grad and an EMA copy are each
their parameter's size; the channels-last copy is the float batch's size
(19,660,800 B); a target upload (64 int64 = 512 B) is one 128-channel
BatchNorm vector."""
import vtc

job = vtc.Job("timm_prefetcher_ema", "getproc", __doc__)
B, HW, NCLS, FEAT = 64, 160, 600, 2048
EPOCHS, STEPS_PER_EPOCH, VAL_BATCHES = 2, 10, 3
U8_BATCH, F32_BATCH, TARGET = B * 3 * HW * HW, B * 3 * HW * HW * 4, B * 8


def empty(n, cat):
    return job.mem_alloc_async(0, n, cat)


def free(*ptrs):
    for p in ptrs:
        job.mem_free_async(0, p)


def to_device(n, cat):
    p = empty(n, cat)
    job.htod(0, p, n)
    return p


def state_dict_sizes():
    """(bytes, is_conv_weight, is_param) in module order: a ResNet-18 body
    with a 2048-wide last stage and a 600-class head."""
    out = []

    def conv(cin, cout, k):
        out.append((cin * cout * k * k * 4, True, True))

    def bn(c):
        out.extend([(c * 4, False, True), (c * 4, False, True),      # weight, bias
                    (c * 4, False, False), (c * 4, False, False),    # running mean, var
                    (8, False, False)])                               # num_batches_tracked
    conv(3, 64, 7)
    bn(64)
    cin = 64
    for cout in (64, 128, 256, FEAT):
        for blk in range(2):
            conv(cin if blk == 0 else cout, cout, 3)
            bn(cout)
            conv(cout, cout, 3)
            bn(cout)
            if blk == 0 and cin != cout:
                conv(cin, cout, 1)
                bn(cout)
        cin = cout
    out.append((NCLS * FEAT * 4, False, True))  # fc weight
    out.append((NCLS * 4, False, True))         # fc bias
    return out


class Model:
    def __init__(self):
        self.entries = state_dict_sizes()
        self.sizes = [n for n, _c, _p in self.entries]
        self.tensors = [to_device(n, "weights") for n in self.sizes]  # model.cuda()
        for i, (n, is_conv, _p) in enumerate(self.entries):  # to(channels_last)
            if is_conv:
                new = empty(n, "weights")
                job.dtod(0, new, self.tensors[i], n)
                free(self.tensors[i])
                self.tensors[i] = new
        self.param_idx = [i for i, (_n, _c, p) in enumerate(self.entries) if p]
        self.grads = None

    def forward(self, rows, train):
        saved = []
        h = empty(rows * 64 * 80 * 80 * 4, "activations")     # stem conv
        h2 = empty(rows * 64 * 80 * 80 * 4, "activations")    # bn + relu
        h3 = empty(rows * 64 * 40 * 40 * 4, "activations")    # maxpool
        if train:
            saved += [h, h2]
        else:  # no_grad: nothing saved for a backward
            free(h, h2)
        h = h3
        res = 40
        for c, stride in ((64, 1), (128, 2), (256, 2), (FEAT, 2)):
            res //= stride
            for _blk in range(2):
                a = empty(rows * c * res * res * 4, "activations")
                b = empty(rows * c * res * res * 4, "activations")
                o = empty(rows * c * res * res * 4, "activations")
                if train:
                    saved += [h, a, b]
                else:
                    free(h, a, b)
                h = o
        pooled = empty(rows * FEAT * 4, "activations")
        logits = empty(rows * NCLS * 4, "activations")
        if train:
            saved += [h, pooled]
        else:
            free(h, pooled)
        return logits, saved

    def backward(self, saved):
        if self.grads is None:
            self.grads = {}
        for i in reversed(self.param_idx):  # AccumulateGrad, last layer first
            self.grads[i] = empty(self.sizes[i], "gradients")
            if self.sizes[i] >= 256 * 1024:
                g = empty(B * 256 * 10 * 10 * 4, "activations")
                free(g)
        free(*saved)

    def zero_grad(self):
        free(*self.grads.values())
        self.grads = None


class SGDMomentum:
    def __init__(self, model):
        self.model, self.buf = model, None

    def step(self):
        if self.buf is None:  # torch.clone(grad).detach()
            self.buf = {}
            for i in self.model.param_idx:
                n = self.model.sizes[i]
                b = empty(n, "optimizer")
                job.dtod(0, b, self.model.grads[i], n)
                self.buf[i] = b
        # buf.mul_(momentum).add_(grad); param.add_(buf, alpha=-lr): in place


class ModelEmaV2:
    def __init__(self, model):
        self.copies = []  # deepcopy(model)
        for p, n in zip(model.tensors, model.sizes):
            c = empty(n, "weights")
            job.dtod(0, c, p, n)
            self.copies.append(c)

    def update(self, model):
        for e, m, n in zip(self.copies, model.tensors, model.sizes):
            a = empty(n, "activations")  # decay * e
            b = empty(n, "activations")  # (1 - decay) * m
            c = empty(n, "activations")  # a + b
            free(a, b)
            job.dtod(0, e, c, n)         # ema_v.copy_(...)
            free(c)


class PrefetchLoader:
    def __init__(self, nbatches):
        self.n = nbatches
        self.mean = to_device(3 * 4, "weights")
        self.std = to_device(3 * 4, "weights")

    def __iter__(self):
        first = True
        inp = tgt = None
        for _ in range(self.n):
            u8 = to_device(U8_BATCH, "prefetch")       # next_input.to(device)
            nt = to_device(TARGET, "prefetch")         # next_target.to(device)
            nf = empty(F32_BATCH, "prefetch")          # .to(float32).sub_().div_()
            free(u8)
            if not first:
                yield inp, tgt
            else:
                first = False
            if inp is not None:
                free(inp)  # `input = next_input`: the loop rebound its own name
            inp, tgt = nf, nt
        yield inp, tgt
        free(inp)

    def close(self):
        free(self.mean, self.std)


def main():
    job.start(markers_default=False)
    job.open_devices(1)
    model = Model()
    ema = ModelEmaV2(model)
    opt = SGDMomentum(model)
    step = 0
    for _epoch in range(EPOCHS):
        loader = PrefetchLoader(STEPS_PER_EPOCH)
        cl = prev_tgt = None
        for inp, tgt in loader:
            job.step(step)
            if cl is not None:
                free(cl, prev_tgt)  # the loop's previous input and target
            prev_tgt = tgt
            cl = empty(F32_BATCH, "activations")  # input.contiguous(channels_last)
            job.dtod(0, cl, inp, F32_BATCH)
            logits, saved = model.forward(B, train=True)
            loss = empty(4, "activations")
            free(logits)
            model.backward(saved)
            opt.step()
            ema.update(model)
            job.dtoh(0, loss, 4)  # losses_m.update(loss.item())
            free(loss)
            model.zero_grad()
            step += 1
        free(cl, prev_tgt)
        loader.close()
        vloader = PrefetchLoader(VAL_BATCHES)  # validate(model_ema, loader_eval)
        vcl = vprev = None
        for vin, vt in vloader:
            if vcl is not None:
                free(vcl, vprev)
            vprev = vt
            vcl = empty(F32_BATCH, "activations")
            job.dtod(0, vcl, vin, F32_BATCH)
            vlogits, _ = model.forward(B, train=False)
            top = empty(B * 5 * 8, "activations")  # accuracy(topk=(1, 5))
            job.dtoh(0, top, B * 5 * 8)
            free(vlogits, top)
        free(vcl, vprev)
        vloader.close()
    free(*opt.buf.values(), *ema.copies, *model.tensors)
    job.line("no_finding whole_dataset_upload")
    job.line("finding prefetch_depth 0 2 %d" % (F32_BATCH + TARGET))
    job.line("steps 0 %d" % step)
    job.finish()


main()
