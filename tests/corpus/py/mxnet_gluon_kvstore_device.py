#!/usr/bin/env python3
"""MXNet 1.x Gluon data-parallel training on 2 GPUs from ONE thread:
`example/gluon/image_classification.py --model resnet18_v1 --dataset
cifar10 --gpus 0,1 --batch-size 512 --kvstore device` (SGD momentum,
weight decay), one epoch of 98 batches from `mx.io.ImageRecordIter`
(`round_batch`: the last batch padded), under the default naive pooled
storage manager (MXNET_GPU_MEM_POOL_TYPE=Naive).

What is modelled (sources read: src/storage/pooled_storage_manager.h
`GPUPooledStorageManager` (one per device; `RoundAllocSize`: a multiple
of the 4,096-B page, above 2 MiB a multiple of 2 MiB; `Alloc` takes the
LAST freed pointer of exactly that rounded size or cudaMallocs a new one;
`Free` only pushes the pointer back; `ReleaseAll` at the manager's
destruction cudaFrees every pooled pointer); python/mxnet/gluon/
parameter.py (`initialize(ctx=[gpu(0), gpu(1)])` -> `_init_impl`: the
initializer fills a CPU array, `copyto` each context (one upload per
device), `_init_grad`: a zeroed gradient array per device, kept,
grad_req 'write'; BatchNorm running statistics with grad_req 'null');
gluon/trainer.py (`_init_kvstore`: 'device' with update_on_kvstore,
`kvstore.init(i, param.list_data()[0])`; `step` -> push every gradient
list, pull every weight list), src/kvstore/kvstore_local.h (`InitImpl`:
the kvstore's own weight copy on pinned host memory, made at the first
`step` by `_init_kvstore`; `PushImpl`: the
first push of a key copies that weight to the merge buffer's device
(`local.Copy(merged.ctx())`, an upload), then the updater (SGD
`create_state`: a momentum array on that device, `sgd_mom_update` in
place); `PullImpl` -> `Broadcast`), src/kvstore/comm.h (`CommDevice`:
`InitMergeBuffer` at the first Reduce sorts the keys by size, largest
first, and gives each a `merged` array on the device with the fewest
elements so far (ties to device 0, the unordered_map's last visited);
`Reduce`: the first device's gradient copied into `merged`, one
`copy_buf` per other source on the merge device, made at the key's first
Reduce, filled by a peer or local copy, `ElementwiseSum` into `merged`;
`Broadcast`: the updated weight copied into `merged`, then from there to
each device);
gluon/utils.py `split_and_load` (the batch sliced on the host, each half
uploaded to its device)). No markers, driver by dlsym.

Truth: per device, each pooled allocation settled by what it held:
weights (parameter replicas, BN statistics, the kvstore's weight copies),
gradients (gradient arrays, merge and copy buffers: a merge buffer also
relays the updated weight in `Broadcast`, recorded as the gradient sum it
is made for), optimizer (momentum),
prefetch (data and label halves), activations (forward and backward
tensors, loss, metric temporaries), else pool with part lines (the naive
pool hands a freed block to the next request of its rounded size,
whatever it is for: an activation's block becomes a merge buffer at the
first step, a label's 4 KiB page a loss vector's). No dataset (every
weight uploaded from the host is a parameter); prefetch depth 1 on both
devices (one half-batch each, uploaded synchronously); 98 steps on each
device. Coincidences: layer 4's 1x1 downsample weight (512 x 256 float32) and a
layer-4 activation of a 256-image half batch are one size (524,288 B), so
that key's merge and copy buffers, made at the first push, take the
activation blocks freed by step 0's backward; a data half (256 x 3 x 32 x
32 float32, 3,145,728 B), a layer-1 activation (4,194,304 B) and a
layer-3 3x3 weight (2,359,296 B) share the 4 MiB pool size; every tensor
of 4 KiB or less (BN vectors, labels, the loss) shares the 4,096-B one."""
import vtc

job = vtc.Job("mxnet_gluon_kvstore_device", "dlsym", __doc__)
DEVS, BATCH, CLASSES, STEPS = 2, 512, 10, 98
HALF = BATCH // DEVS
PAGE, LARGE = 4096, 2 * vtc.MIB


def round_size(n):
    size = (n + PAGE - 1) // PAGE * PAGE
    if size > LARGE:
        size = (size + LARGE - 1) // LARGE * LARGE
    return size


class PooledStorage:
    """GPUPooledStorageManager for one device."""

    def __init__(self, dev):
        self.dev = dev
        self.pool = {}          # rounded size -> [ptr] (LIFO)
        self.allocs = {}        # ptr -> [rounded, kinds, rec]
        self.live = {}          # ptr -> rounded

    def alloc(self, n, cat):
        size = round_size(n)
        free = self.pool.get(size)
        if free:
            p = free.pop()
        else:
            p = job.mem_alloc(self.dev, size, "pool")
            self.allocs[p] = [size, set(), job.records[-1]]
        self.allocs[p][1].add(cat)
        self.live[p] = size
        job.part(self.dev, p, n, cat)
        return p

    def free(self, *ptrs):
        for p in ptrs:
            job.part_free(self.dev, p)
            self.pool.setdefault(self.live.pop(p), []).append(p)

    def settle(self):
        for size, kinds, rec in self.allocs.values():
            job.set_category(rec, next(iter(kinds)) if len(kinds) == 1 else "pool")

    def release_all(self):
        for size in sorted(self.pool):
            job.mem_free(self.dev, *self.pool[size])
        self.pool = {}


storage = []


def resnet18_v1():
    """Gluon model-zoo resnet18_v1 parameters in collect_params order:
    (bytes, trainable)."""
    params = [(64 * 3 * 7 * 7 * 4, True)]
    params += [(64 * 4, True), (64 * 4, True), (64 * 4, False), (64 * 4, False)]
    cin = 64
    for cout, stride in ((64, 1), (128, 2), (256, 2), (512, 2)):
        for blk in range(2):
            c1 = cin if blk == 0 else cout
            for w in (cout * c1 * 9, cout * cout * 9):
                params += [(w * 4, True), (cout * 4, True), (cout * 4, True),
                           (cout * 4, False), (cout * 4, False)]
            if blk == 0 and stride != 1:
                params += [(cout * cin * 4, True), (cout * 4, True), (cout * 4, True),
                           (cout * 4, False), (cout * 4, False)]
        cin = cout
    params += [(CLASSES * 512 * 4, True), (CLASSES * 4, True)]
    return params


class Parameter:
    def __init__(self, key, nbytes, trainable):
        self.key, self.n, self.trainable = key, nbytes, trainable
        self.data, self.grad = [], []

    def init_impl(self):
        for d in range(DEVS):                           # data.copyto(ctx)
            p = storage[d].alloc(self.n, "weights")
            job.htod(d, p, self.n)
            self.data.append(p)
        if self.trainable:                              # _init_grad
            for d in range(DEVS):
                g = storage[d].alloc(self.n, "gradients")
                job.zero(d, g, self.n)
                self.grad.append(g)


class KVStoreDevice:
    """kvstore 'device', update_on_kvstore: KVStoreLocal over CommDevice."""

    def __init__(self, params):
        self.params = [p for p in params if p.trainable]
        self.merged = {}
        self.copy_buf = {}
        self.local = {}         # key -> (dev, ptr) once on a device
        self.mom = {}
        self.inited = False

    def init(self):
        """Trainer._init_kvstore at the first step: kvstore.init(i,
        param.list_data()[0]) keeps a copy on pinned host memory."""
        for p in self.params:
            job.dtoh(0, p.data[0], p.n)
        self.inited = True

    def init_merge_buffer(self):
        """Keys by size, largest first, each on the device with the fewest
        elements so far; on a tie the last device the unordered_map visits
        wins (libstdc++ visits the last inserted first: device 0 last)."""
        load = [0] * DEVS
        for p in sorted(self.params, key=lambda q: -q.n):
            dev = min(d for d in range(DEVS) if load[d] == min(load))
            self.merged[p.key] = (dev, storage[dev].alloc(p.n, "gradients"))
            load[dev] += p.n // 4

    def copy_from_to(self, dst_dev, dst, src_dev, src, n):
        if src_dev == dst_dev:
            job.dtod(dst_dev, dst, src, n)
        else:
            job.peer(dst_dev, dst, src_dev, src, n)

    def push(self, p):
        """PushImpl: CommDevice::Reduce, then the updater on the merge
        device (the weight copied there at the first push)."""
        if not self.merged:
            self.init_merge_buffer()
        dev, merged = self.merged[p.key]
        self.copy_from_to(dev, merged, 0, p.grad[0], p.n)       # src[0] into merged
        if p.key not in self.copy_buf:                          # one per other source
            self.copy_buf[p.key] = [storage[dev].alloc(p.n, "gradients") for _ in range(DEVS - 1)]
        for src, buf in zip(range(1, DEVS), self.copy_buf[p.key]):
            self.copy_from_to(dev, buf, src, p.grad[src], p.n)
        if p.key not in self.local:                     # local.Copy(merged.ctx())
            w = storage[dev].alloc(p.n, "weights")
            job.htod(dev, w, p.n)
            self.local[p.key] = (dev, w)
            m = storage[dev].alloc(p.n, "optimizer")    # SGD.create_state
            job.zero(dev, m, p.n)
            self.mom[p.key] = m

    def pull(self, p):
        """PullImpl -> CommDevice::Broadcast: the weight into the merge
        buffer, then from there to every device's parameter."""
        dev, w = self.local[p.key]
        _mdev, merged = self.merged[p.key]
        job.dtod(dev, merged, w, p.n)
        for d in range(DEVS):
            self.copy_from_to(d, p.data[d], dev, merged, p.n)


# forward tensors kept for backward, floats per image (32 x 32 input)
ACT = [16384] * 3 + [4096] + [4096] * 12 + [2048] * 14 + [1024] * 14 + [512] * 14 + [512]


def hybrid_forward(d):
    st = storage[d]
    saved = [st.alloc(HALF * n * 4, "activations") for n in ACT]
    logits = st.alloc(HALF * CLASSES * 4, "activations")
    lsm = st.alloc(HALF * CLASSES * 4, "activations")   # log_softmax
    loss = st.alloc(HALF * 4, "activations")            # pick, neg
    return saved, [logits, lsm, loss], logits


def backward(d, saved, head):
    st = storage[d]
    g = st.alloc(HALF * CLASSES * 4, "activations")
    st.free(head[1], head[2])
    for t in reversed(saved):
        gt = st.alloc(job_sizes[t], "activations")
        st.free(t)
        st.free(g)
        g = gt
    st.free(g)


job_sizes = {}


def main():
    job.start(markers_default=False)
    job.open_devices(DEVS)
    for d in range(DEVS):
        storage.append(PooledStorage(d))
        orig = storage[d].alloc

        def sized(n, cat, _orig=orig):
            p = _orig(n, cat)
            job_sizes[p] = n
            return p
        storage[d].alloc = sized
    params = [Parameter(i, n, t) for i, (n, t) in enumerate(resnet18_v1())]
    for p in params:                                    # net.initialize(ctx=ctx)
        p.init_impl()
    kv = KVStoreDevice(params)                          # Trainer(kvstore='device')
    for s in range(STEPS):
        batch = []
        for d in range(DEVS):                           # split_and_load
            x = storage[d].alloc(HALF * 3 * 32 * 32 * 4, "prefetch")
            y = storage[d].alloc(HALF * 4, "prefetch")
            job.htod(d, x, HALF * 3 * 32 * 32 * 4)
            job.htod(d, y, HALF * 4)
            batch.append((x, y))
        outs = []
        for d in range(DEVS):                           # with autograd.record()
            outs.append(hybrid_forward(d))
        for d in range(DEVS):                           # autograd.backward(Ls)
            saved, head, _logits = outs[d]
            backward(d, saved, head)
        if not kv.inited:                               # trainer.step
            kv.init()
        for p in kv.params:
            kv.push(p)
        for p in kv.params:
            kv.pull(p)
        for d in range(DEVS):                           # metric.update
            st = storage[d]
            logits = outs[d][2]
            pred = st.alloc(HALF * 4, "activations")    # argmax
            job.dtoh(d, pred, HALF * 4)
            st.free(pred, logits, *batch[d])
    for p in params:                                    # the net and trainer dropped
        for d in range(DEVS):
            storage[d].free(p.data[d])
            if p.trainable:
                storage[d].free(p.grad[d])
    for key, (dev, w) in kv.local.items():
        storage[dev].free(w, kv.mom[key], kv.merged[key][1], *kv.copy_buf[key])
    for st in storage:
        st.settle()
        st.release_all()                                # ~GPUPooledStorageManager
    job.line("no_finding whole_dataset_upload")
    for d in range(DEVS):
        job.line("finding prefetch_depth %d 1 %d" % (d, HALF * 3 * 32 * 32 * 4 + HALF * 4))
    for d in range(DEVS):
        job.line("steps %d %d" % (d, STEPS))
    job.finish()


main()
