#!/usr/bin/env python3
"""ResNet-50 trained with DistributedDataParallel in ONE process on one GPU
(`torchrun --nproc_per_node 1`), mixed precision (autocast fp16 +
GradScaler) and channels-last memory format, as pytorch/examples
imagenet/main.py's loop with the memory-format tutorial's two lines added
(`model = model.to(memory_format=torch.channels_last)`, `images =
images.contiguous(memory_format=torch.channels_last)`): batch 32 at
160 x 160, SGD with momentum 0.9 and weight decay, 10 steps, under the
default CUDACachingAllocator.

What is modelled (sources: c10/cuda/CUDACachingAllocator.cpp (sizes
rounded to 512 B; <= 1 MiB from 2 MiB segments, < 10 MiB from 20 MiB
segments, larger rounded to 2 MiB in a segment of their own; best fit in
the same pool; a small-pool remainder >= 512 B or a large-pool remainder
> 1 MiB split off; freed blocks merged with free neighbours and cached,
segments never given back here); torch/nn/modules/module.py `_apply`
(`model.cuda()`: per leaf module its parameters then its buffers, each a
new block filled by an upload; `.to(memory_format=channels_last)`: each
4-D weight copied on the device into a new block and the old one freed
(`param.data = param_applied`), the others returned as they are);
torch/nn/parallel/distributed.py (`_sync_module_states` ->
`_broadcast_coalesced`: one flat copy of the parameters and buffers,
freed after; the Reducer's buckets in reverse parameter order, the first
capped at 1 MiB, then 25 MiB, made at construction and again by
`_rebuild_buckets` at the second forward, `gradient_as_bucket_view=False`:
each `.grad` copied into its bucket and back after the all-reduce; with
one rank NCCL's all-reduce needs no peer buffer and none is modelled);
torch/amp/autocast_mode.py (each conv / linear weight cast to fp16 once
per forward, kept by the backward that saved it; conv outputs fp16, BN
statistics fp32, the loss in fp32); torch/amp/grad_scaler.py (`_scale`
and `_growth_tracker` made on the device at the first `scale`; per step
`unscale_`: `inv_scale`, `found_inf`, read back by `_maybe_opt_step`,
dropped by `update`); torch/optim/sgd.py `_multi_tensor_sgd` (foreach
weight decay: a new tensor per parameter, freed after the step;
`momentum_buffer` = clone of it at the first step); AccumulateGrad (the
fp16 weight gradient cast back to an fp32 `.grad`); DataLoader
`pin_memory=True` batches `.cuda(non_blocking=True)`; `zero_grad()`
(set_to_none) after the forward, so the previous step's `.grad`s live
through the next forward). Markers on (one per step), driver by
cuGetProcAddress (libcudart).

Truth, per segment (settled at the end: the one kind it held, or pool
with part lines): parameters and BN buffers weights (the uploaded NCHW
weights freed by the channels-last conversion too, and the broadcast's
flat copy); `.grad`s and DDP buckets gradients; momentum buffers
optimizer; GradScaler's scalars other; images and targets as uploaded
prefetch (depth 1; the NCHW upload is freed right after its
channels-last copy); the channels-last copy, fp16 casts of inputs and
weights, conv / BN / pool outputs and their gradients, fp16 weight
gradients, weight-decayed copies, loss and logits activations. No
dataset, no whole_dataset_upload. 10 optimizer steps. Coincidences: the
channels-last copy of a batch is its upload's size (9,830,400 B) and
lands in the same 20 MiB segment; a momentum buffer, a weight-decayed copy
and a `.grad` are each their parameter's size; the stem's conv and BN
outputs, the max-pool indices (int64) and layer 1's 256-channel outputs
are one size (26,214,400 B, each a segment of its own)."""
import vtc

job = vtc.Job("ddp_amp_channels_last", "getproc", __doc__)
MIB = vtc.MIB
BATCH, RES, CLASSES, STEPS = 32, 160, 1000, 10
FIRST_BUCKET, BUCKET_CAP = MIB, 25 * MIB


cache = vtc.Caching(job, 0)
alloc, free = cache.malloc, cache.free


def resnet50():
    """Leaf modules in `_apply` order: ("conv", cin, cout, k, out_hw, in_hw)
    or ("bn", c, out_hw) or ("fc", fin, fout)."""
    mods, hw = [("conv", 3, 64, 7, RES // 2, RES), ("bn", 64, RES // 2)], RES // 4
    cin = 64
    for width, blocks, stride in ((64, 3, 1), (128, 4, 2), (256, 6, 2), (512, 3, 2)):
        for b in range(blocks):
            out_hw = hw // stride if b == 0 else hw
            mods += [("conv", cin, width, 1, hw, hw), ("bn", width, hw),
                     ("conv", width, width, 3, out_hw, hw), ("bn", width, out_hw),
                     ("conv", width, 4 * width, 1, out_hw, out_hw), ("bn", 4 * width, out_hw)]
            if b == 0:
                mods += [("conv", cin, 4 * width, 1, out_hw, hw), ("bn", 4 * width, out_hw)]
            hw, cin = out_hw, 4 * width
    mods.append(("fc", 2048, CLASSES))
    return mods


MODS = resnet50()


def tensors_of(m):
    """(parameters, buffers) bytes of a leaf module."""
    if m[0] == "conv":
        return [m[2] * m[1] * m[3] * m[3] * 4], []
    if m[0] == "bn":
        return [m[1] * 4, m[1] * 4], [m[1] * 4, m[1] * 4, 8]
    return [m[2] * m[1] * 4, m[2] * 4], []


class Model:
    def __init__(self):
        self.params, self.buffers = [], []                  # [ptr, bytes, module index]
        for i, m in enumerate(MODS):                        # model.cuda()
            ps, bs = tensors_of(m)
            for n in ps:
                p = alloc(n, "weights")
                job.htod(0, p, n)
                self.params.append([p, n, i])
            for n in bs:
                p = alloc(n, "weights")
                job.htod(0, p, n)
                self.buffers.append([p, n, i])

    def to_channels_last(self):
        for entry in self.params:
            if MODS[entry[2]][0] == "conv":                 # 4-D: a new NHWC copy
                new = alloc(entry[1], "weights")
                job.dtod(0, new, entry[0], entry[1])
                free(entry[0])
                entry[0] = new


def bucket_sizes(params):
    sizes, cur, cap = [], 0, FIRST_BUCKET
    for _p, n, _i in reversed(params):
        cur += n
        if cur >= cap:
            sizes.append(cur)
            cur, cap = 0, BUCKET_CAP
    if cur:
        sizes.append(cur)
    return sizes


class DDP:
    def __init__(self, model):
        self.model = model
        tensors = model.params + model.buffers              # _sync_module_states
        flat = alloc(sum(n for _p, n, _i in tensors), "weights")
        off = 0
        for p, n, _i in tensors:
            job.dtod(0, flat + off, p, n)
            off += n
        free(flat)
        self.buckets = []
        self.initialize_buckets()
        self.rebuilt = False
        self.grads_seen = False

    def initialize_buckets(self):
        old = self.buckets
        self.buckets = [alloc(n, "gradients") for n in bucket_sizes(self.model.params)]
        free(*old)

    def pre_forward(self):
        if not self.rebuilt and self.grads_seen:
            self.initialize_buckets()                      # _rebuild_buckets
            self.rebuilt = True

    def all_reduce_and_copy_back(self, grads):
        order = list(reversed(self.model.params))
        k = 0
        for b, n in zip(self.buckets, bucket_sizes(self.model.params)):
            off = 0
            while off < n:
                p, pn, _i = order[k]
                job.dtod(0, b + off, grads[p], pn)          # copy_grad_to_bucket
                job.dtod(0, grads[p], b + off, pn)          # finalize: back into .grad
                off += pn
                k += 1
        self.grads_seen = True


class GradScaler:
    def __init__(self):
        self.scale_t = None
        self.per_step = []

    def scale(self, loss):
        if self.scale_t is None:                            # _lazy_init_scale_growth_tracker
            self.scale_t = alloc(4, "other")
            self.tracker = alloc(4, "other")
            job.zero(0, self.scale_t, 4)
            job.zero(0, self.tracker, 4)
        return alloc(4, "activations")                      # loss * _scale

    def unscale_(self):
        d = alloc(8, "other")                               # _scale.double()
        r = alloc(8, "other")                               # .reciprocal()
        inv = alloc(4, "other")                             # .float()
        free(d, r)
        found_inf = alloc(4, "other")
        job.zero(0, found_inf, 4)
        self.per_step = [inv, found_inf]
        job.dtoh(0, found_inf, 4)                           # _maybe_opt_step: .item()

    def update(self):
        free(*self.per_step)                                # _per_optimizer_states reset
        self.per_step = []


class SGD:
    def __init__(self, model):
        self.model = model
        self.momentum = None

    def step(self):
        decayed = [alloc(n, "activations") for _p, n, _i in self.model.params]
        if self.momentum is None:
            self.momentum = []
            for d, (_p, n, _i) in zip(decayed, self.model.params):
                m = alloc(n, "optimizer")                   # clone(grad).detach()
                job.dtod(0, m, d, n)
                self.momentum.append(m)
        free(*decayed)


def forward(model, x_cl):
    """Autocast forward; returns the saved tensors per module and logits."""
    saved = []
    x16 = alloc(BATCH * 3 * RES * RES * 2, "activations")   # input cast to fp16
    saved.append([x16])
    c = 3
    for i, m in enumerate(MODS):
        if m[0] == "conv":
            w16 = alloc(m[2] * m[1] * m[3] * m[3] * 2, "activations")
            out = alloc(BATCH * m[2] * m[4] * m[4] * 2, "activations")
            saved.append([w16, out])
            c = m[2]
        elif m[0] == "bn":
            out = alloc(BATCH * m[1] * m[2] * m[2] * 2, "activations")
            stats = [alloc(m[1] * 4, "activations") for _ in range(2)]
            saved[-1] += [out] + stats
            if i == 1:                                      # maxpool: output + indices
                hw = RES // 4
                saved[-1] += [alloc(BATCH * c * hw * hw * 2, "activations"),
                              alloc(BATCH * c * hw * hw * 8, "activations")]
        else:
            pooled = alloc(BATCH * m[1] * 2, "activations")
            w16 = alloc(m[2] * m[1] * 2, "activations")
            logits = alloc(BATCH * m[2] * 2, "activations")
            saved.append([pooled, w16])
    f32 = alloc(BATCH * CLASSES * 4, "activations")         # cross_entropy in fp32
    lsm = alloc(BATCH * CLASSES * 4, "activations")
    loss = alloc(4, "activations")
    saved.append([f32, lsm])
    return saved, logits, loss


def backward(model, saved):
    """Reverse module order: activation grads, fp16 weight grads cast to
    fp32 `.grad`s (new blocks); the saved tensors freed unit by unit."""
    grads = {}
    by_module = {}
    for p, n, i in model.params:
        by_module.setdefault(i, []).append((p, n))
    g = alloc(BATCH * CLASSES * 4, "activations")
    free(*saved.pop())
    for i in reversed(range(len(MODS))):
        m = MODS[i]
        if m[0] == "bn":
            for p, n in by_module[i]:
                grads[p] = alloc(n, "gradients")
            continue
        if m[0] == "conv":
            gw16 = alloc(m[2] * m[1] * m[3] * m[3] * 2, "activations")
            gin = alloc(BATCH * m[1] * m[5] * m[5] * 2, "activations") if i else None
        else:
            gw16 = alloc(m[2] * m[1] * 2, "activations")
            gin = alloc(BATCH * m[1] * 2, "activations")
        for p, n in by_module[i]:
            grads[p] = alloc(n, "gradients")                # AccumulateGrad of the fp32 cast
        free(gw16, g, *saved.pop())
        g = gin
    free(*saved.pop())
    return grads


def main():
    job.start(markers_default=True)
    job.open_devices(1)
    model = Model()
    model.to_channels_last()
    ddp = DDP(model)
    scaler, opt = GradScaler(), SGD(model)
    img_bytes, tgt_bytes = BATCH * 3 * RES * RES * 4, BATCH * 8
    pinned = [job.pinned(img_bytes), job.pinned(tgt_bytes)]  # CachingHostAllocator blocks
    batch, out, grads = [], [], {}
    for step in range(STEPS):
        free(*batch, *out)                                  # names rebound to the CPU batch
        images = alloc(img_bytes, "prefetch")
        job.htod(0, images, img_bytes, src=pinned[0], stream=0)
        target = alloc(tgt_bytes, "prefetch")
        job.htod(0, target, tgt_bytes, src=pinned[1], stream=0)
        x_cl = alloc(img_bytes, "activations")              # contiguous(channels_last)
        job.dtod(0, x_cl, images, img_bytes)
        free(images)
        batch = [x_cl, target]
        job.step(step)
        ddp.pre_forward()
        saved, logits, loss = forward(model, x_cl)
        free(*grads.values())                               # optimizer.zero_grad()
        scaled = scaler.scale(loss)
        grads = backward(model, saved)
        ddp.all_reduce_and_copy_back(grads)
        free(scaled)
        scaler.unscale_()
        opt.step()
        scaler.update()
        job.dtoh(0, loss, 4)                                # losses.update(loss.item())
        out = [logits, loss]
    free(*batch, *out, *grads.values(), *opt.momentum, *ddp.buckets,
         scaler.scale_t, scaler.tracker,
         *[p for p, _n, _i in model.params], *[p for p, _n, _i in model.buffers])
    cache.settle_and_release()
    job.line("no_finding whole_dataset_upload")
    job.line("finding prefetch_depth 0 1 %d" % (img_bytes + tgt_bytes))
    job.line("steps 0 %d" % STEPS)
    job.finish()


main()
