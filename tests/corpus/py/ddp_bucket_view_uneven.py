#!/usr/bin/env python3
"""A GPT-shaped language model (6 blocks, hidden 512, vocabulary 8,192,
context 256) trained with DistributedDataParallel(gradient_as_bucket_view=
True) on 2 GPUs, one rank per thread standing in for its process, with
`torch.optim.Adam(fused=True)`, under PYTORCH_NO_CUDA_MEMORY_CACHING=1
(one cudaMalloc per tensor). Rank 1's data loading is slower (its shard
sits on a slower disk), so its steps are longer and rank 0 waits for it in
every all-reduce.

What is modelled (sources read: torch/nn/parallel/distributed.py
(`_sync_module_states`: rank 0's parameters and buffers broadcast to
rank 1, received into its existing tensors; `_build_params_for_reducer`,
`_compute_bucket_assignment_by_size` with `bucket_size_limits =
[_DEFAULT_FIRST_BUCKET_BYTES (1 MiB), bucket_cap_mb (25 MiB)]` over the
parameters in REVERSE order, a bucket closed once it reaches its limit);
torch/csrc/distributed/c10d/reducer.cpp (`initialize_buckets`: one flat
`bucket.gradients` tensor per bucket, zeroed; with
`gradient_as_bucket_view` each `param.grad` is a VIEW into it (no tensor
of its own); `mark_variable_ready` -> the bucket's all-reduce launched when
its last gradient is ready, through NCCL (its channel buffers made at the
first collective; the ring's transfers are peer copies)); torch/optim/
adam.py `_init_group` with fused=True (`exp_avg`, `exp_avg_sq` zeros_like
and `step` a 0-d float32 tensor ON THE DEVICE for each parameter, at the
first step) and `_fused_adam` (no temporaries); `optimizer.zero_grad()`
(set_to_none=True: each `.grad` view dropped, so the next backward's
AccumulateGrad makes a new gradient tensor, which the Reducer's
`mark_variable_ready_dense` copies into the bucket view before rebinding
`.grad` to the view: the transient tensor freed); the training loop
(`for x, y in loader: x, y = x.to(rank, non_blocking=True),
y.to(...)`: the names rebound to the host batch first, so the old device
batch dies before the next upload), token embedding + blocks + tied
head; the loss read back every step). 10 steps per rank; no markers,
driver by dlsym (a PyTorch build on CUDA 10.2, whose libcudart resolves
the driver with dlsym).

Truth, per device: parameters weights (rank 1's allocated and filled
by rank 0's broadcast, peer copies); the four flat bucket tensors
(4,200,448 / 29,421,568 / 26,273,792 / 33,067,008 B, reverse parameter
order, the last holding the token embedding's) and the transient gradient
tensors gradients; Adam exp_avg / exp_avg_sq and the per-parameter device
`step` tensors optimizer; NCCL buffers other; tokens and targets uploaded
per step prefetch (depth 1); activations, logits and the loss
activations. No dataset. 10 steps on each device. Coincidences: each
transient gradient is its parameter's size (and exp_avg's, exp_avg_sq's);
the tokens and targets (4 x 256 int64, 8,192 B each) equal a block's c_fc
bias; the 4-byte `step` tensors equal the loss; rank 1 waits three times
longer for each batch."""
import threading
import time

import vtc

job = vtc.Job("ddp_bucket_view_uneven", "dlsym", __doc__)
MIB = vtc.MIB
BLOCKS, HID, VOCAB, CTX, BATCH, STEPS = 6, 512, 8192, 256, 4, 10
NCCL_BUF = 4 * MIB
LOAD_S = (0.004, 0.012)       # per-step data wait of rank 0 and rank 1
lock = threading.Lock()
barrier = threading.Barrier(2)


def named_params():
    p = [VOCAB * HID * 4, CTX * HID * 4]                          # wte (tied head), wpe
    for _ in range(BLOCKS):
        p += [HID * 4, HID * 4,                                    # ln_1
              HID * 3 * HID * 4, 3 * HID * 4,                      # c_attn
              HID * HID * 4, HID * 4,                              # attn c_proj
              HID * 4, HID * 4,                                    # ln_2
              HID * 4 * HID * 4, 4 * HID * 4,                      # c_fc
              4 * HID * HID * 4, HID * 4]                          # mlp c_proj
    p += [HID * 4, HID * 4]                                        # ln_f
    return p


PARAMS = named_params()


def assign_buckets():
    limits = [1 * MIB, 25 * MIB]
    buckets, cur, size = [], [], 0
    for i in reversed(range(len(PARAMS))):
        cur.append(i)
        size += PARAMS[i]
        if size >= limits[min(len(buckets), 1)]:
            buckets.append(cur)
            cur, size = [], 0
    if cur:
        buckets.append(cur)
    return buckets


BUCKETS = assign_buckets()


def alloc(dev, n, cat):
    with lock:
        return job.mem_alloc(dev, n, cat)


def free(dev, *ptrs):
    with lock:
        job.mem_free(dev, *ptrs)


def upload(dev, n, cat):
    p = alloc(dev, n, cat)
    with lock:
        job.htod(dev, p, n)
    return p


class Rank:
    def __init__(self, rank):
        self.rank = rank
        self.params = [upload(rank, n, "weights") if rank == 0 else alloc(rank, n, "weights")
                       for n in PARAMS]                           # model.to(rank)
        self.nccl = None
        self.state = None
        self.steps = 0

    def broadcast(self, peer_params):
        """_sync_module_states: rank 1 receives rank 0's tensors."""
        self._nccl_init()
        barrier.wait()
        if self.rank == 1:
            for dst, src, n in zip(self.params, peer_params, PARAMS):
                with lock:
                    job.peer(1, dst, 0, src, n)
        barrier.wait()

    def _nccl_init(self):
        if self.nccl is None:
            self.nccl = alloc(self.rank, NCCL_BUF, "other")

    def make_buckets(self):
        self.buckets = []
        for b in BUCKETS:
            n = sum(PARAMS[i] for i in b)
            p = alloc(self.rank, n, "gradients")
            with lock:
                job.zero(self.rank, p, n)
            self.buckets.append((p, n))

    def allreduce(self, peer, k):
        barrier.wait()                                            # both ranks' bucket k ready
        p, n = self.buckets[k]
        src = peer.buckets[k][0]
        for off in range(0, n, NCCL_BUF):                         # ring through the channel buffer
            m = min(NCCL_BUF, n - off)
            with lock:
                job.peer(self.rank, self.nccl, 1 - self.rank, src + off, m)
                job.dtod(self.rank, p + off, self.nccl, m)
        barrier.wait()

    def step(self, peer):
        time.sleep(LOAD_S[self.rank])                             # DataLoader worker
        x = upload(self.rank, BATCH * CTX * 8, "prefetch")
        y = upload(self.rank, BATCH * CTX * 8, "prefetch")
        act = BATCH * CTX * HID * 4
        saved = [alloc(self.rank, act, "activations"), alloc(self.rank, act, "activations")]
        for _ in range(BLOCKS):
            saved += [alloc(self.rank, act, "activations"),       # ln_1
                      alloc(self.rank, 3 * act, "activations"),   # qkv
                      alloc(self.rank, BATCH * 8 * CTX * CTX * 4, "activations"),  # att
                      alloc(self.rank, act, "activations"),       # y
                      alloc(self.rank, act, "activations"),       # residual
                      alloc(self.rank, act, "activations"),       # ln_2
                      alloc(self.rank, 4 * act, "activations"),   # c_fc
                      alloc(self.rank, 4 * act, "activations"),   # gelu
                      alloc(self.rank, act, "activations")]       # residual
        logits = alloc(self.rank, BATCH * CTX * VOCAB * 4, "activations")
        loss = alloc(self.rank, 4, "activations")
        free(self.rank, *saved[-9:])
        del saved[-9:]
        for k, bucket in enumerate(BUCKETS):                      # backward, bucket by bucket
            base, off = self.buckets[k][0], 0
            for i in bucket:
                # AccumulateGrad makes .grad (set_to_none left it None); the
                # Reducer copies it into the bucket view and rebinds .grad
                g = alloc(self.rank, PARAMS[i], "gradients")
                with lock:
                    job.dtod(self.rank, base + off, g, PARAMS[i])
                free(self.rank, g)
                off += PARAMS[i]
            if saved:
                free(self.rank, *saved[-9:])
                del saved[-9:]
            self.allreduce(peer, k)
        free(self.rank, logits, *saved)
        if self.state is None:                                    # fused _init_group
            self.state = []
            for n in PARAMS:
                for m in (n, n, 4):                               # exp_avg, exp_avg_sq, step
                    s = alloc(self.rank, m, "optimizer")
                    with lock:
                        job.zero(self.rank, s, m)
                    self.state.append(s)
        with lock:
            job.dtoh(self.rank, loss, 4)                          # loss.item()
        free(self.rank, loss, x, y)
        self.steps += 1

    def close(self):
        free(self.rank, *self.state, *[p for p, _ in self.buckets], self.nccl, *self.params)


def run(rank, ranks):
    with lock:
        job.use(rank)
    r = Rank(rank)
    ranks[rank] = r
    barrier.wait()
    r.broadcast(ranks[0].params)
    r.make_buckets()
    barrier.wait()
    peer = ranks[1 - rank]
    for _ in range(STEPS):
        r.step(peer)
    barrier.wait()
    r.close()


def main():
    job.start(markers_default=False)
    job.open_devices(2)
    ranks = [None, None]
    threads = [threading.Thread(target=run, args=(d, ranks)) for d in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    job.line("no_finding whole_dataset_upload")
    for d in range(2):
        job.line("finding prefetch_depth %d 1 %d" % (d, 2 * BATCH * CTX * 8))
        job.line("steps %d %d" % (d, ranks[d].steps))
    job.finish()


main()
