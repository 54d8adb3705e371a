#!/usr/bin/env python3
"""PaddlePaddle dygraph training of a ResNet-18 (100 classes, 224 x 224
images, batch 32) under the default auto-growth allocator
(FLAGS_allocator_strategy=auto_growth, FLAGS_auto_growth_chunk_size_in_mb=0),
fed by `paddle.io.DataLoader(..., use_buffer_reader=True)`, Adam with a
cosine learning-rate schedule; 2 epochs of 14 steps, each followed by a
`paddle.no_grad()` evaluation of 4 batches of 64; `empty_cache()` at the
end.

What is modelled (sources read: paddle/fluid/memory/allocation/
auto_growth_best_fit_allocator.cc `AllocateImpl` (size aligned to 256 B,
`free_blocks_.lower_bound({size, nullptr})`: the smallest free block that
fits, lowest address among equals; the block is split with the remainder
kept FREE AT THE FRONT and the allocation taken from the END; no fit: a new
chunk of max(size, chunk_size_) from the underlying allocator), `FreeImpl`
(merge with a free previous and next block of the same chunk, chunks kept),
`FreeIdleChunks` (a chunk whose one block is free is released: what
`paddle.device.cuda.empty_cache()` reaches); aligned_allocator.cc
(`AlignedAllocator::AllocateImpl` asks its underlying allocator for
size + alignment, so each chunk is 256 B larger than its first request and
starts with a free 256-B block); paddle/fluid/operators/reader/
buffered_reader.cc (`BufferedReader`, buffer size 2 on a GPU place:
`ReadTillBufferFullAsync` fills both slots at `Start`, `ReadAsync` copies a
batch into new GPU tensors (`mutable_data`) from pinned memory,
`ReadNextImpl` moves the slot's tensors out to the caller and refills the
PREVIOUS position, not the current one); parameters and BatchNorm
mean / variance made by their initializers on the device (no upload);
paddle/optimizer/adam.py (`_add_moments_pows`: moment1 / moment2 on the
device at the first `step`, the beta-pow accumulators on the CPU);
`clear_grad()` with set_to_zero=True (gradients made by the first backward
and kept, zeroed in place); the scheduler's learning rate a new 0-d
tensor filled on the device each step. Order chosen where the reader's
thread races the loop: the loop's previous batch is released (the name
rebound) before the reader thread allocates the next one, so two batches
are on the device at once: the step's and the buffered one.) Markers on
(one per step), driver by cuGetProcAddress (libcudart).

Truth: chunks settled at the end: the one kind a chunk held, else pool
with part lines (a small tensor lands in another chunk's free 256-B head,
a freed batch's block is reused by activations). Parameters and BN
statistics weights; kept gradients gradients; Adam moments optimizer;
image and label batches prefetch (depth 2, training and evaluation);
activations, their gradients, the loss and the evaluation outputs
activations; the learning-rate tensor other. No dataset. 28 steps.
Coincidences: a label batch (32 int64, 256 B) is the size of a 64-channel
BN vector; the final fc's gradient and moments are the fc weight's size;
an evaluation image batch is two training image batches (38,535,168 B)."""
import vtc

job = vtc.Job("paddle_autogrowth_buffered", "getproc", __doc__)
ALIGN = 256
BATCH, EVAL_BATCH, CLASSES = 32, 64, 100
EPOCHS, STEPS_PER_EPOCH, EVAL_STEPS = 2, 14, 4


def rs(n):
    return max(ALIGN, (n + ALIGN - 1) // ALIGN * ALIGN)


class AutoGrowthBestFitAllocator:
    def __init__(self, dev):
        self.dev = dev
        self.chunks = []            # [ptr, size, kinds, alloc record]
        self.blocks = {}            # ptr -> [size, free, chunk]
        self.kind = {}              # block in use -> kind

    def allocate(self, nbytes, cat):
        size = rs(nbytes)
        best = None
        for p, (bsize, free, _c) in self.blocks.items():
            if free and bsize >= size and (best is None or (bsize, p) < best):
                best = (bsize, p)
        if best is None:
            raw = size + ALIGN                           # AlignedAllocator
            ptr = job.mem_alloc(self.dev, raw, "pool")
            chunk = [ptr, raw, set(), job.records[-1]]
            self.chunks.append(chunk)
            self.blocks[ptr] = [raw, True, chunk]
            best = (raw, ptr)
        bsize, p = best
        chunk = self.blocks[p][2]
        remaining = bsize - size
        if remaining:
            self.blocks[p][0] = remaining                # free remainder at the front
            p += remaining
        self.blocks[p] = [size, False, chunk]
        chunk[2].add(cat)
        job.part(self.dev, p, size, cat)
        self.kind[p] = cat
        return p

    def free(self, *ptrs):
        for p in ptrs:
            job.part_free(self.dev, p)
            del self.kind[p]
            self.blocks[p][1] = True
            vtc.coalesce(self.blocks, p)

    def free_idle_chunks(self):
        keep = []
        for chunk in self.chunks:
            b = self.blocks.get(chunk[0])
            if b and b[1] and b[0] == chunk[1]:
                del self.blocks[chunk[0]]
                job.mem_free(self.dev, chunk[0])
            else:
                keep.append(chunk)
        self.chunks = keep

    def settle(self, chunks):
        for chunk in chunks:
            kinds = chunk[2]
            job.set_category(chunk[3], next(iter(kinds)) if len(kinds) == 1 else "pool")


alloc = None


def resnet18_params():
    """(weight bytes, bn channels) per conv, then fc; in creation order."""
    convs = [(64 * 3 * 7 * 7, 64)]
    cin = 64
    for cout, stride in ((64, 1), (128, 2), (256, 2), (512, 2)):
        for blk in range(2):
            convs.append((cout * (cin if blk == 0 else cout) * 9, cout))
            convs.append((cout * cout * 9, cout))
            if blk == 0 and (stride != 1 or cin != cout):
                convs.append((cout * cin, cout))        # downsample 1x1
        cin = cout
    return convs


class ResNet18:
    def __init__(self):
        self.params, self.buffers = [], []
        for numel, ch in resnet18_params():
            self.params.append((alloc.allocate(numel * 4, "weights"), numel * 4))  # KaimingNormal
            for _ in ("weight", "bias"):
                self.params.append((alloc.allocate(ch * 4, "weights"), ch * 4))
            for _ in ("_mean", "_variance"):
                self.buffers.append(alloc.allocate(ch * 4, "weights"))
        self.params.append((alloc.allocate(512 * CLASSES * 4, "weights"), 512 * CLASSES * 4))
        self.params.append((alloc.allocate(CLASSES * 4, "weights"), CLASSES * 4))

    ACT = [64 * 112 * 112] * 3 + [64 * 56 * 56] * 12 + [128 * 28 * 28] * 12 + \
        [256 * 14 * 14] * 12 + [512 * 7 * 7] * 12 + [512]

    def forward(self, b, train):
        saved = []
        for n in self.ACT:
            t = alloc.allocate(b * n * 4, "activations")
            if train:
                saved.append(t)
            else:
                if saved:
                    alloc.free(saved.pop())
                saved.append(t)
        logits = alloc.allocate(b * CLASSES * 4, "activations")
        return logits, saved


class BufferedReader:
    """buffer_size 2, GPU place; batches are (image, label)."""

    def __init__(self, batch, nbatches):
        self.batch, self.left = batch, nbatches
        self.slots = [None, None]
        self.position = []
        self.prev = None
        for i in range(2):                              # ReadTillBufferFullAsync
            self.read_async(i)

    def read_async(self, i):
        if self.left == 0:
            return
        self.left -= 1
        img = alloc.allocate(self.batch * 3 * 224 * 224 * 4, "prefetch")   # mutable_data
        lab = alloc.allocate(self.batch * 8, "prefetch")
        job.htod(0, img, self.batch * 3 * 224 * 224 * 4)                    # from pinned memory
        job.htod(0, lab, self.batch * 8)
        self.slots[i] = (img, lab)
        self.position.append(i)

    def read_next(self):
        if not self.position:
            return None
        i = self.position.pop(0)
        out, self.slots[i] = self.slots[i], None
        return i, out

    def __iter__(self):
        held = None
        while True:
            got = self.read_next()
            if held is not None:
                alloc.free(*held)                       # the loop rebinds img, label
            if got is None:
                return
            i, held = got
            if self.prev is not None:
                self.read_async(self.prev)              # refill the previous position
            self.prev = i
            yield held


class Adam:
    def __init__(self, params):
        self.params = params
        self.moments = None
        self.lr = None

    def step(self):
        if self.lr is not None:
            alloc.free(self.lr)
        self.lr = alloc.allocate(4, "other")            # _create_global_learning_rate
        if self.moments is None:                        # _add_moments_pows
            self.moments = []
            for p, n in self.params:
                for _ in ("moment1", "moment2"):
                    m = alloc.allocate(n, "optimizer")
                    job.zero(0, m, n)
                    self.moments.append(m)


def train_step(model, opt, grads, batch):
    img, lab = batch
    logits, saved = model.forward(BATCH, True)
    loss_vec = alloc.allocate(BATCH * 4, "activations")  # cross_entropy
    loss = alloc.allocate(4, "activations")              # mean
    alloc.free(loss_vec)
    dlogits = alloc.allocate(BATCH * CLASSES * 4, "activations")
    alloc.free(logits)
    if not grads:                                        # first backward
        for p, n in reversed(model.params):
            grads.append(alloc.allocate(n, "gradients"))
    dact = None
    for t in reversed(saved):                           # backward through the saved outputs
        g = alloc.allocate(job_size[t], "activations")
        alloc.free(t)
        if dact is not None:
            alloc.free(dact)
        dact = g
    alloc.free(dact, dlogits)
    opt.step()
    job.dtoh(0, loss, 4)
    alloc.free(loss)
    for g in grads:                                     # clear_grad(set_to_zero=True)
        job.zero(0, g, 1)


job_size = {}


def evaluate(model):
    reader = BufferedReader(EVAL_BATCH, EVAL_STEPS)
    for img, lab in reader:
        logits, saved = model.forward(EVAL_BATCH, False)
        alloc.free(*saved)
        pred = alloc.allocate(EVAL_BATCH * 8, "activations")    # argmax
        correct = alloc.allocate(EVAL_BATCH * 8, "activations")
        alloc.free(logits)
        job.dtoh(0, correct, 8)
        alloc.free(pred, correct)


def main():
    global alloc
    job.start(markers_default=True)
    job.open_devices(1)
    alloc = AutoGrowthBestFitAllocator(0)
    orig = alloc.allocate

    def sized(nbytes, cat):
        p = orig(nbytes, cat)
        job_size[p] = nbytes
        return p
    alloc.allocate = sized
    model = ResNet18()
    opt = Adam(model.params)
    grads = []
    s = 0
    for _epoch in range(EPOCHS):
        for batch in BufferedReader(BATCH, STEPS_PER_EPOCH):
            job.step(s)
            train_step(model, opt, grads, batch)
            s += 1
        evaluate(model)
    alloc.free(*grads, *opt.moments, opt.lr, *[p for p, _n in model.params], *model.buffers)
    chunks = list(alloc.chunks)
    alloc.free_idle_chunks()                            # paddle.device.cuda.empty_cache()
    alloc.settle(chunks)
    job.line("no_finding whole_dataset_upload")
    job.line("finding prefetch_depth 0 2 %d" % (BATCH * 3 * 224 * 224 * 4 + BATCH * 8))
    job.line("steps 0 %d" % s)
    job.finish()


main()
