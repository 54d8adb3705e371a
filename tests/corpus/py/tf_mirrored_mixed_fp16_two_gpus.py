#!/usr/bin/env python3
"""Keras 2 `model.fit` under `tf.distribute.MirroredStrategy` on two GPUs
from one process, `mixed_precision.set_global_policy("mixed_float16")`,
a small CIFAR-10 CNN (three 3 x 3 convolutions, global average pooling,
Dense(10) and a float32 softmax), Adam wrapped by the dynamic
`LossScaleOptimizer` that `compile` adds under the mixed policy, memory
growth on both GPUs (a BFC allocator per device, regions growing). The
input is a TFRecord pipeline on the host (`TFRecordDataset`, `map(parse)`,
`batch(256)`, `prefetch`), distributed by `fit` through
`experimental_distribute_dataset`: each replica's half of the batch
(128 images) copied to its GPU by the `MultiDeviceIterator`, which keeps
one more element buffered on each device (the dataset repeated, so the
iterator lives across the two epochs of 25 steps).

What is modelled (sources: tensorflow/python/distribute/
mirrored_strategy.py (`_create_mirrored_variable`: the initial value made
on the first device, each other replica's variable initialised from it
by a copy), input_lib.py / v1 input_lib `_SingleWorkerDatasetIterator`
-> `MultiDeviceIterator(dataset, devices, max_buffer_size=1,
prefetch_buffer_size=1)` (data/ops/multi_device_iterator_ops.py: per
device a host-side buffer and a device-side `prefetch` of one element),
cross_device_ops.py `NcclAllReduce` (gradients packed into one tensor per
device (`num_packs=1`: concat, all-reduce, split)); NCCL's own buffers
taken with cudaMalloc at the communicator's first collective; keras
mixed_precision/autocast_variable.py (`AutoCastVariable`: an fp16 cast of
each float32 variable on every read inside the model),
loss_scale_optimizer.py (`_DynamicLossScaleState`: `current_loss_scale`
(float32) and `good_steps` (int64) variables made under the scope;
`get_scaled_loss`, `get_unscaled_gradients` (a new tensor per gradient),
`_is_all_finite`, `update`), optimizers/optimizer_v2/adam.py
(`_create_slots`: m and v per variable per replica at the first
`apply_gradients`, `iterations` int64), engine/training.py (`fit`,
`train_step`, the compiled loss / accuracy metrics' `total` and `count`
variables), tsl BFCAllocator with `allow_growth` (vtc.BFC)). No
markers, driver by dlsym (TensorFlow dlsyms each symbol).

Truth, on EACH of the two devices: variables (kernels and biases)
weights, the second replica's filled from the first by peer copies;
Adam's m / v and `iterations` optimizer; the loss-scale variables and the
metric variables other; the per-replica image and label batches copied
in by the iterator prefetch (depth 2: the step's element and the one the
device-side prefetch holds); the packed, reduced and split gradients and
the unscaled gradients gradients; fp16 variable casts, forward / backward
tensors and Adam temporaries activations; NCCL's buffer (cudaMalloc,
outside BFC) other. BFC regions settled at the end: the one kind each
held, or pool with part lines. No dataset. 50 steps on each device.
Coincidences: a replica's label batch (128 int64, 1,024 B, prefetch) is
conv3's bias (256 floats, weights), its Adam slots and its gradients;
each replica's tensors are the other's sizes, and both replicas' batch
chunks are filled by host copies while the weights of the second are
filled by copies from the first."""
import vtc

job = vtc.Job("tf_mirrored_mixed_fp16_two_gpus", "dlsym", __doc__)
F32, F16, I64 = 4, 2, 8
DEVS, GLOBAL_BATCH, EPOCHS, STEPS_PER_EPOCH = 2, 256, 2, 25
RB = GLOBAL_BATCH // DEVS
HW, CLASSES = 32, 10
NCCL_BUF = 4 * vtc.MIB
# (kernel bytes, bias bytes, output channels, spatial size of the output)
LAYERS = [(3 * 3 * 3 * 64 * F32, 64 * F32, 64, 32),
          (3 * 3 * 64 * 128 * F32, 128 * F32, 128, 32),
          (3 * 3 * 128 * 256 * F32, 256 * F32, 256, 16),
          (256 * CLASSES * F32, CLASSES * F32, CLASSES, 1)]
VAR_SIZES = [n for k, b, _c, _s in LAYERS for n in (k, b)]


class Replica:
    def __init__(self, d, bfc):
        self.d = d
        self.bfc = bfc
        self.vars = []
        self.slots = None
        self.iterations = None
        self.buffered = []

    def alloc(self, n, cat):
        return self.bfc.alloc(n, cat)

    def free(self, *ptrs):
        self.bfc.free(*ptrs)


def build(reps):
    """Variables under strategy.scope(): made on GPU:0, copied to GPU:1."""
    for n in VAR_SIZES:
        p0 = reps[0].alloc(n, "weights")                   # glorot_uniform / zeros on GPU:0
        p1 = reps[1].alloc(n, "weights")
        job.peer(1, p1, 0, p0, n)                          # identity(value_list[0])
        reps[0].vars.append(p0)
        reps[1].vars.append(p1)
    extra = []
    for n in (F32, I64):                                   # current_loss_scale, good_steps
        p0 = reps[0].alloc(n, "other")
        p1 = reps[1].alloc(n, "other")
        job.peer(1, p1, 0, p0, n)
        extra.append((p0, p1))
    for _ in range(4):                                     # loss / accuracy: total, count
        extra.append(tuple(r.alloc(F32, "other") for r in reps))
    return extra


def fetch(rep):
    """MultiDeviceIterator: the host element copied into the device prefetch buffer."""
    x = rep.alloc(RB * HW * HW * 3 * F32, "prefetch")
    job.htod(rep.d, x, RB * HW * HW * 3 * F32)
    y = rep.alloc(RB * I64, "prefetch")
    job.htod(rep.d, y, RB * I64)
    rep.buffered.append((x, y))


def forward_backward(rep):
    """train_step on one replica up to the per-replica gradients."""
    a = rep.alloc
    saved = []
    xin = rep.buffered.pop(0)
    x16 = a(RB * HW * HW * 3 * F16, "activations")         # the input cast to the policy
    saved.append(x16)
    casts = []
    for kb, bb, c, s in LAYERS:
        casts += [a(kb // 2, "activations"), a(bb // 2, "activations")]   # AutoCastVariable reads
        if s > 1:
            conv = a(RB * s * s * c * F16, "activations")
            relu = a(RB * s * s * c * F16, "activations")
            rep.free(conv)
            saved.append(relu)
            if c == 128:
                pool = a(RB * 16 * 16 * c * F16, "activations")  # MaxPooling2D
                saved.append(pool)
        else:
            gap = a(RB * 256 * F16, "activations")          # GlobalAveragePooling2D
            logits = a(RB * c * F16, "activations")
            probs = a(RB * c * F32, "activations")          # Activation("softmax", dtype=float32)
            saved += [gap, logits, probs]
    loss = a(F32, "activations")
    scaled = a(F32, "activations")                          # get_scaled_loss
    g = a(RB * CLASSES * F32, "activations")
    grads = []
    for kb, bb, c, s in reversed(LAYERS):
        g16k, g16b = a(kb // 2, "activations"), a(bb // 2, "activations")
        gk, gb = a(kb, "gradients"), a(bb, "gradients")      # through the cast: float32
        rep.free(g16k, g16b)
        grads = [gk, gb] + grads
        gi = a(RB * max(s, 1) * max(s, 1) * 256 * F16, "activations")
        rep.free(g)
        g = gi
    rep.free(g, loss, scaled, *saved, *casts)
    metric = [a(F32, "activations") for _ in range(2)]     # update_state temporaries
    rep.free(*metric)
    return grads, xin


def all_reduce(reps, grads, nccl):
    """NcclAllReduce with one pack: concat, all-reduce, split."""
    total = sum(VAR_SIZES)
    packed = [r.alloc(total, "gradients") for r in reps]    # concat
    reduced = [r.alloc(total, "gradients") for r in reps]   # the all-reduce output
    for d in range(DEVS):                                   # the ring through NCCL's buffers
        other = 1 - d
        job.peer(other, nccl[other], d, packed[d], min(NCCL_BUF, total))
    out = []
    for d, r in enumerate(reps):
        r.free(packed[d], *grads[d])
        split = [r.alloc(n, "gradients") for n in VAR_SIZES]
        r.free(reduced[d])
        out.append(split)
    return out


def apply(rep, grads):
    """LossScaleOptimizer: unscale, check, Adam.apply_gradients."""
    a = rep.alloc
    unscaled = [a(n, "gradients") for n in VAR_SIZES]       # grad * (1 / loss_scale)
    rep.free(*grads)
    finite = [a(4, "activations") for _ in VAR_SIZES]       # is_finite reductions
    allf = a(4, "activations")
    rep.free(*finite, allf)
    if rep.slots is None:
        rep.iterations = a(I64, "optimizer")
        rep.slots = [a(n, "optimizer") for n in VAR_SIZES for _ in (0, 1)]
    tmp = [a(n, "activations") for n in VAR_SIZES]          # ResourceApplyAdam's lr_t etc.
    rep.free(*tmp, *unscaled)


def main():
    job.start(markers_default=False)
    job.open_devices(DEVS)
    bfcs = [vtc.BFC(job, d) for d in range(DEVS)]
    reps = [Replica(d, bfcs[d]) for d in range(DEVS)]
    extra = build(reps)
    nccl = None
    steps = 0
    for r in reps:                                          # the iterator: first element in
        fetch(r)
    for epoch in range(EPOCHS):
        for s in range(STEPS_PER_EPOCH):
            for r in reps:                                  # the device prefetch refills
                fetch(r)
            grads, inputs = [], []
            for r in reps:
                g, xin = forward_backward(r)
                grads.append(g)
                inputs.append(xin)
            if nccl is None:
                nccl = []
                for d in range(DEVS):
                    nccl.append(job.mem_alloc(d, NCCL_BUF, "other"))
            reduced = all_reduce(reps, grads, nccl)
            for d, r in enumerate(reps):
                apply(r, reduced[d])
                r.free(*inputs[d])
            steps += 1
    for d, r in enumerate(reps):
        r.free(*[p for xy in r.buffered for p in xy])       # the iterator's last element
        r.free(*r.vars, *r.slots, r.iterations, *[e[d] for e in extra])
        bfcs[d].settle()
    for d in range(DEVS):
        bfcs[d].release()
        job.mem_free(d, nccl[d])
    job.line("no_finding whole_dataset_upload")
    for d in range(DEVS):
        job.line("finding prefetch_depth %d 2 %d" % (d, RB * HW * HW * 3 * F32 + RB * I64))
    for d in range(DEVS):
        job.line("steps %d %d" % (d, steps))
    job.finish()


main()
