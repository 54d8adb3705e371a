#!/usr/bin/env python3
"""An image classifier (a ResNet-18-shaped CNN at 128 x 128, batch 64,
SGD with momentum and weight decay) trained for 3 short epochs of 4 steps
with a validation pass after each, and the common epoch-end idiom
`gc.collect(); torch.cuda.empty_cache()`, under PyTorch's default
CUDACachingAllocator.

What is modelled (sources read: c10/cuda/CUDACachingAllocator.cpp
(`round_size` to 512 B; `get_allocation_size`: <= 1 MiB from 2 MiB
segments, < 10 MiB from 20 MiB segments, larger rounded up to 2 MiB in a
segment of their own; `get_free_block` best fit within the same pool;
`should_split`: small-pool remainder >= 512 B, large-pool remainder
> 1 MiB; `free_block` merges free neighbours; `emptyCache` ->
`release_cached_blocks` -> `release_blocks`: every segment that is one
whole free block is cudaFree'd, segments with a live block stay);
torch/nn/modules/module.py `Module.to` -> `_apply` (a block and an upload
per parameter and BN buffer); torch/optim/sgd.py `_init_group` /
`_multi_tensor_sgd` (`momentum_buffer = torch.clone(grad).detach()` at
the first step, foreach weight decay `_foreach_add(grads, params,
alpha=wd)`: a new tensor per parameter, freed after the update); the
training loop's `images.cuda(non_blocking=True)` / `target.cuda(...)`
(pinned DataLoader batches, copied when the loop asks for them);
AccumulateGrad `.grad` made by each backward after
`zero_grad(set_to_none=True)`; `model.eval()` + `torch.no_grad()`
validation of 2 batches of 128 (outputs freed layer by layer, logits
and the argmax read back)). Markers on (one per optimizer step), driver by
cuGetProcAddress (libcudart).

Truth (per segment, settled when it is freed or at the end: the one kind
it held, or pool with part lines): parameters and BN running stats
weights; momentum buffers optimizer; `.grad`s gradients; training and
validation batches prefetch (depth 1: each is copied when the loop asks
for it, and freed before the next is); forward / backward tensors and
the weight-decayed gradient copies activations. No dataset, no
whole_dataset_upload. 12 optimizer steps. Every epoch's activation,
gradient and batch segments are released by empty_cache and made again
in the next epoch (same sizes, often the same addresses): each is a new
allocation scored on its own. Coincidences: a validation batch's stage-k activation is the size of a
training batch's stage k-1 one (16, 8, 4 MiB); a training image batch
(12 MiB) gets a segment of its own like the stem activations; momentum
buffers and weight-decayed copies are their parameters' sizes; the fc
weight (2,048,000 B) is within 2.4 % of a training layer4 activation
(2 MiB)."""
import vtc

job = vtc.Job("torch_empty_cache_epochs", "getproc", __doc__)
MIB = vtc.MIB
SMALL, SMALL_SEG, LARGE_SEG, MIN_LARGE, ROUND_LARGE = MIB, 2 * MIB, 20 * MIB, 10 * MIB, 2 * MIB
EPOCHS, STEPS_PER_EPOCH, VAL_BATCHES = 3, 4, 2
BATCH, VAL_BATCH, RES = 64, 128, 128


class Segment:
    def __init__(self, ptr, size, small, rec):
        self.ptr, self.size, self.small, self.rec = ptr, size, small, rec
        self.kinds = set()
        self.blocks = [[ptr, size, None]]      # [address, size, kind or None when free]


class CachingAllocator:
    def __init__(self, dev):
        self.dev = dev
        self.segments = []
        self.where = {}                        # block address -> segment

    def _segment_size(self, size):
        if size <= SMALL:
            return SMALL_SEG
        if size < MIN_LARGE:
            return LARGE_SEG
        return -(-size // ROUND_LARGE) * ROUND_LARGE

    def malloc(self, nbytes, kind):
        size = max(512, -(-nbytes // 512) * 512)
        small = size <= SMALL
        fits = [(b[1], b[0], seg, i) for seg in self.segments if seg.small == small
                for i, b in enumerate(seg.blocks) if b[2] is None and b[1] >= size]
        if fits:
            _, _, seg, i = min(fits, key=lambda f: (f[0], f[1]))
        else:
            seg_size = self._segment_size(size)
            ptr = job.mem_alloc(self.dev, seg_size, "pool")
            seg = Segment(ptr, seg_size, small, job.records[-1])
            self.segments.append(seg)
            i = 0
        addr, bsize, _ = seg.blocks[i]
        rest = bsize - size
        if rest >= 512 if small else rest > SMALL:
            seg.blocks[i:i + 1] = [[addr, size, kind], [addr + size, rest, None]]
        else:
            seg.blocks[i][2] = kind
        seg.kinds.add(kind)
        self.where[addr] = seg
        job.part(self.dev, addr, seg.blocks[i][1], kind)
        return addr

    def free(self, *addrs):
        for addr in addrs:
            seg = self.where.pop(addr)
            job.part_free(self.dev, addr)
            i = next(k for k, b in enumerate(seg.blocks) if b[0] == addr)
            seg.blocks[i][2] = None
            if i + 1 < len(seg.blocks) and seg.blocks[i + 1][2] is None:
                seg.blocks[i][1] += seg.blocks.pop(i + 1)[1]
            if i > 0 and seg.blocks[i - 1][2] is None:
                seg.blocks[i - 1][1] += seg.blocks.pop(i)[1]

    def _settle(self, seg):
        job.set_category(seg.rec, next(iter(seg.kinds)) if len(seg.kinds) == 1 else "pool")

    def empty_cache(self):
        """release_cached_blocks: only segments that are one free block go."""
        keep = []
        for seg in self.segments:
            if len(seg.blocks) == 1 and seg.blocks[0][2] is None:
                self._settle(seg)
                job.mem_free(self.dev, seg.ptr)
            else:
                keep.append(seg)
        self.segments = keep

    def release_all(self):
        for seg in self.segments:
            self._settle(seg)
        job.mem_free(self.dev, *[s.ptr for s in self.segments])
        self.segments = []


cache = CachingAllocator(0)
alloc, free = cache.malloc, cache.free


def resnet18_params():
    """(bytes of each parameter, bytes of each BN buffer) in module order."""
    params, buffers = [64 * 3 * 7 * 7 * 4], []

    def bn(c):
        params.extend([c * 4, c * 4])
        buffers.extend([c * 4, c * 4, 8])      # running_mean, running_var, num_batches_tracked

    bn(64)
    cin = 64
    for cout in (64, 128, 256, 512):
        for block in range(2):
            params.append(cout * (cin if block == 0 else cout) * 9 * 4)
            bn(cout)
            params.append(cout * cout * 9 * 4)
            bn(cout)
            if block == 0 and cout != cin:
                params.append(cout * cin * 4)  # downsample 1x1
                bn(cout)
        cin = cout
    params.extend([1000 * 512 * 4, 1000 * 4])
    return params, buffers


PARAMS, BUFFERS = resnet18_params()


def activation_sizes(n):
    """conv/bn/relu outputs per stage for a batch of n at 128 x 128."""
    sizes = [n * 64 * 64 * 64 * 4] * 3 + [n * 64 * 32 * 32 * 4]      # stem + maxpool
    for c, hw in ((64, 32), (128, 16), (256, 8), (512, 4)):
        sizes += [n * c * hw * hw * 4] * 6
    return sizes + [n * 512 * 4, n * 1000 * 4]


def module_to():
    blocks = []
    for n in PARAMS + BUFFERS:
        p = alloc(n, "weights")
        job.htod(0, p, n)
        blocks.append(p)
    return blocks


def upload_batch(n):
    images = alloc(n * 3 * RES * RES * 4, "prefetch")
    job.htod(0, images, n * 3 * RES * RES * 4, stream=0)
    target = alloc(n * 8, "prefetch")
    job.htod(0, target, n * 8, stream=0)
    return images, target


def train_step(momentum):
    images, target = upload_batch(BATCH)
    saved = [alloc(n, "activations") for n in activation_sizes(BATCH)]
    loss = alloc(4, "activations")
    grad_out = alloc(BATCH * 1000 * 4, "activations")
    grads = []
    for i, n in enumerate(reversed(PARAMS)):                    # backward
        grads.append(alloc(n, "gradients"))
        if saved and i % 2 == 1:
            free(saved.pop())
    free(grad_out, *saved)
    grads.reverse()
    if momentum is None:                                        # clone(grad) at step 1
        momentum = [alloc(n, "optimizer") for n in PARAMS]
        for m, g, n in zip(momentum, grads, PARAMS):
            job.dtod(0, m, g, n)
    decayed = [alloc(n, "activations") for n in PARAMS]         # _foreach_add(grads, params)
    free(*decayed)
    job.dtoh(0, loss, 4)                                        # loss.item() for the meter
    free(loss, images, target, *grads)                          # zero_grad(set_to_none=True)
    return momentum


def validate():
    for _ in range(VAL_BATCHES):
        images, target = upload_batch(VAL_BATCH)
        prev = None
        for n in activation_sizes(VAL_BATCH):                   # no_grad: freed as it goes
            out = alloc(n, "activations")
            if prev is not None:
                free(prev)
            prev = out
        pred = alloc(VAL_BATCH * 8, "activations")              # argmax
        job.dtoh(0, pred, VAL_BATCH * 8)
        free(prev, pred, images, target)


def main():
    job.start(markers_default=True)
    job.open_devices(1)
    weights = module_to()
    momentum = None
    step = 0
    for _epoch in range(EPOCHS):
        for _ in range(STEPS_PER_EPOCH):
            job.step(step)
            momentum = train_step(momentum)
            step += 1
        validate()
        cache.empty_cache()                                     # gc.collect(); empty_cache()
    free(*momentum, *weights)
    cache.release_all()
    job.line("no_finding whole_dataset_upload")
    job.line("finding prefetch_depth 0 1 %d" % (BATCH * 3 * RES * RES * 4 + BATCH * 8))
    job.line("steps 0 %d" % step)
    job.finish()


main()
