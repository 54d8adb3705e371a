#!/usr/bin/env python3
"""A DLRM trained with TorchRec on 2 GPUs: four embedding tables sharded
ROW-WISE across both ranks (`ShardingType.ROW_WISE`, compute kernel
FUSED: fbgemm's `SplitTableBatchedEmbeddingBagsCodegen` with
EXACT_ROWWISE_ADAGRAD applied inside the backward), the dense arches
under DDP, warm-started from a distributed checkpoint, then 24 steps of
a plain loop (`batch = batch.to(device)`, forward, `backward`,
`optimizer.step()`). The two ranks are driven from ONE thread in lockstep
(the trace order is fixed); PYTORCH_NO_CUDA_MEMORY_CACHING=1 (one
cudaMalloc / cudaFree per tensor).

What is modelled (sources: torchrec/distributed/model_parallel.py
`DistributedModelParallel` (meta-device model, `init_parameters`:
`to_empty(device)` + `reset_parameters`, so the dense parameters are made
on the device; `DefaultDataParallelWrapper`: DDP with
`gradient_as_bucket_view=True`, `broadcast_buffers=False`,
`static_graph=True`); torchrec/distributed/sharding/rw_sharding.py
(`RwSparseFeaturesDist`: `_feature_block_sizes_tensor` uploaded once,
`bucketize_kjt_before_all2all` -> fbgemm `block_bucketize_sparse_features`
(new lengths and indices per rank), `KJTAllToAll`: the splits exchanged
first, then lengths and values into receive tensors sized by what arrives;
`RwPooledEmbeddingDist` -> `PooledEmbeddingsReduceScatter`); fbgemm_gpu
split_table_batched_embeddings_ops_training.py (`__init__`:
`rows_per_table`, `bounds_check_warning`, `D_offsets`, `hash_size_cumsum`
made by `torch.tensor(..., device=...)`, `_apply_split`: ONE flat
`weights_dev` for all local shards and, for EXACT_ROWWISE_ADAGRAD, ONE
`momentum1_dev` of one float per local row, both `torch.zeros` on the
device, with their `*_placements` / `*_offsets` tensors; the fused
backward: linear indices, radix sort, unique rows, `grad_output` read,
weights and momentum1 updated in place, no dense gradient);
torch/distributed/checkpoint `load` (each rank's local shards read into
CPU tensors and `copy_`'d into the device tensors: one copy per table
shard at its offset in `weights_dev` and in `momentum1_dev`, one per
dense parameter and Adagrad `sum`); torch/optim/adagrad.py (`sum` =
`full_like(p)` in the constructor, foreach step: `std` new per
parameter); DDP's Reducer (buckets reverse order, the first capped at
1 MiB, made at construction and again by the rebuild at the second
forward; `_sync_module_states` broadcast from rank 0 through a flat
coalesced copy); NCCL's buffer made at the first collective).
Markers on (one per step), driver by cuGetProcAddress (libcudart).

Truth per rank: `weights_dev` (78,342,144 B) weights -- filled from the
checkpoint by four copies at offsets, NOT a dataset: no
whole_dataset_upload; `momentum1_dev` (2,448,192 B) and the Adagrad sums
optimizer (also restored from the checkpoint); dense parameters weights;
DDP buckets gradients (the `.grad`s are views into them); the broadcast's
flat copy weights; TBE index / offset / placement tensors, block sizes,
splits, NCCL buffer other; per-step dense features, KJT values and
lengths, and labels prefetch (depth 1: the loop rebinds `batch` before
the next copy; values vary in size each step); bucketized and received
KJTs, pooled embeddings and their reduce-scatter, MLP and interaction
tensors, the TBE backward workspace, Adagrad's `std` activations. 24 steps
on each rank. Coincidences: the two 512 x 256 kernels (bottom and over
arch) are one size (524,288 B), as their Adagrad sums; the over arch's
output and the label batch are both 8,192 B (activations vs prefetch);
the bucketized and the received lengths are 65,536 B; a 256-wide MLP
activation (2,097,152 B) is the size of the pooled embeddings before the
reduce-scatter."""
import random

import vtc

job = vtc.Job("torchrec_sharded_embedding", "getproc", __doc__)
WORLD, B, D, DENSE_IN, STEPS = 2, 2048, 32, 13, 24
TABLES = [("t_item", 800000, (16, 24)), ("t_user", 400000, (1, 1)),
          ("t_cat", 20000, (2, 4)), ("t_geo", 4096, (1, 1))]     # name, rows, ids per sample
F = len(TABLES)
LOCAL_ROWS = [(rows + WORLD - 1) // WORLD for _n, rows, _p in TABLES]
WEIGHTS_DEV = sum(LOCAL_ROWS) * D * 4
MOMENTUM1_DEV = sum(LOCAL_ROWS) * 4
NCCL_BUF = 4 * vtc.MIB
# dense params in module order: bottom 13-512-256-32, over 42-512-256-1
DENSE = [DENSE_IN * 512 * 4, 512 * 4, 512 * 256 * 4, 256 * 4, 256 * D * 4, D * 4,
         42 * 512 * 4, 512 * 4, 512 * 256 * 4, 256 * 4, 256 * 4, 4]
FIRST_BUCKET = 1 << 20


def bucket_sizes():
    """DDP's _compute_bucket_assignment_by_size over the reversed params."""
    sizes, cur, cap = [], 0, FIRST_BUCKET
    for n in reversed(DENSE):
        cur += n
        if cur >= cap:
            sizes.append(cur)
            cur, cap = 0, 25 << 20
    if cur:
        sizes.append(cur)
    return sizes


_sizes = {}


def alloc(r, n, cat):
    p = job.mem_alloc(r, n, cat)
    _sizes[p] = n
    return p


def free(r, *ptrs):
    job.mem_free(r, *ptrs)


class TBE:
    """SplitTableBatchedEmbeddingBagsCodegen for the local row-wise shards."""

    def __init__(self, r):
        self.r = r
        self.consts = [job.upload(r, F * 8, "other"),          # rows_per_table
                       job.upload(r, 8, "other"),              # bounds_check_warning
                       job.upload(r, (F + 1) * 4, "other"),    # D_offsets
                       job.upload(r, (F + 1) * 8, "other")]    # hash_size_cumsum
        self.weights = alloc(r, WEIGHTS_DEV, "weights")        # _apply_split: weights_dev
        job.zero(r, self.weights, WEIGHTS_DEV)
        self.consts += [job.upload(r, F * 4, "other"),         # weights_placements
                        job.upload(r, F * 8, "other")]         # weights_offsets
        self.momentum1 = alloc(r, MOMENTUM1_DEV, "optimizer")  # momentum1_dev
        job.zero(r, self.momentum1, MOMENTUM1_DEV)
        self.consts += [job.upload(r, F * 4, "other"),         # momentum1_placements
                        job.upload(r, F * 8, "other")]         # momentum1_offsets

    def load_shards(self):
        """DCP load: each local table shard copied at its offset."""
        off_w = off_m = 0
        for rows in LOCAL_ROWS:
            job.htod(self.r, self.weights + off_w, rows * D * 4)
            job.htod(self.r, self.momentum1 + off_m, rows * 4)
            off_w += rows * D * 4
            off_m += rows * 4

    def forward(self, n_ids):
        offsets = alloc(self.r, (WORLD * F * B + 1) * 4, "activations")
        out = alloc(self.r, WORLD * B * F * D * 4, "activations")
        free(self.r, offsets)
        return out

    def backward_fused(self, grad_out, n_ids):
        """Rowwise adagrad inside the backward: no dense gradient."""
        ws = [alloc(self.r, n_ids * 8, "activations") for _ in range(4)]  # linear, sorted, infos
        uniq = alloc(self.r, n_ids * 8, "activations")
        free(self.r, *ws, uniq, grad_out)


class Rank:
    def __init__(self, r):
        self.r = r
        self.tbe = TBE(r)
        self.block_sizes = job.upload(r, F * 4, "other")       # _feature_block_sizes_tensor
        self.dense = []
        for n in DENSE:                                        # to_empty + reset_parameters
            p = alloc(r, n, "weights")
            job.zero(r, p, n)
            self.dense.append(p)
        self.sums = []
        for n in DENSE:                                        # Adagrad: full_like(p)
            p = alloc(r, n, "optimizer")
            job.zero(r, p, n)
            self.sums.append(p)
        self.buckets = []
        self.batch = []


def sync_module_states(ranks, nccl):
    """DDP _sync_module_states: flat coalesced broadcast from rank 0."""
    total = sum(DENSE)
    flats = [alloc(r.r, total, "weights") for r in ranks]
    off = 0
    for p, n in zip(ranks[0].dense, DENSE):
        job.dtod(0, flats[0] + off, p, n)
        off += n
    job.peer(1, nccl[1], 0, flats[0], min(total, NCCL_BUF))
    job.dtod(1, flats[1], nccl[1], min(total, NCCL_BUF))
    off = 0
    for p, n in zip(ranks[1].dense, DENSE):
        job.dtod(1, p, flats[1] + off, n)
        off += n
    for r in ranks:
        free(r.r, flats[r.r])


def make_buckets(rank):
    old = rank.buckets
    rank.buckets = []
    for n in bucket_sizes():
        p = alloc(rank.r, n, "gradients")
        job.zero(rank.r, p, n)
        rank.buckets.append(p)
    free(rank.r, *old)


def ids_per_rank(rng):
    per_feature = [int(B * rng.uniform(*pool)) if pool[0] != pool[1] else B
                   for _n, _rows, pool in TABLES]
    return sum(per_feature)


def input_dist(ranks, rng, n_values):
    """bucketize_kjt_before_all2all + KJTAllToAll (splits, then tensors)."""
    share = [[int(n_values[s] * rng.uniform(0.45, 0.55)) for _ in range(WORLD)] for s in range(WORLD)]
    for s in range(WORLD):
        share[s][1] = n_values[s] - share[s][0]
    bucketed = []
    for r in ranks:
        lens = alloc(r.r, WORLD * F * B * 4, "activations")
        idx = alloc(r.r, n_values[r.r] * 8, "activations")
        splits = job.upload(r.r, WORLD * 2 * 8, "other")
        bucketed.append((lens, idx, splits))
    recv = []
    for r in ranks:
        rsplits = alloc(r.r, WORLD * 2 * 8, "other")
        for s in range(WORLD):
            src = bucketed[s][2]
            if s == r.r:
                job.dtod(r.r, rsplits + 16 * s, src + 16 * r.r, 16)
            else:
                job.peer(r.r, rsplits + 16 * s, s, src + 16 * r.r, 16)
        job.dtoh(r.r, rsplits, WORLD * 2 * 8)                 # .tolist()
        n_in = sum(share[s][r.r] for s in range(WORLD))
        rlens = alloc(r.r, WORLD * F * B * 4, "activations")
        rvals = alloc(r.r, n_in * 8, "activations")
        off = 0
        for s in range(WORLD):
            n = share[s][r.r] * 8
            src = bucketed[s][1] + (0 if r.r == 0 else share[s][0] * 8)
            if s == r.r:
                job.dtod(r.r, rvals + off, src, n)
            else:
                job.peer(r.r, rvals + off, s, src, n)
            off += n
        recv.append((rlens, rvals, rsplits, n_in))
    for r in ranks:
        free(r.r, *bucketed[r.r])
    return recv


def dense_forward(r):
    sizes = [B * 512 * 4, B * 256 * 4, B * D * 4,                    # bottom arch
             B * (F + 1) * D * 4, B * (F + 1) * (F + 1) * 4, B * 42 * 4,  # interaction
             B * 512 * 4, B * 256 * 4, B * 4]                        # over arch
    return [alloc(r, n, "activations") for n in sizes]


def train_step(ranks, rng, nccl, step):
    n_values = []
    for r in ranks:                                            # batch = batch.to(device)
        free(r.r, *r.batch)
        n = ids_per_rank(rng)
        n_values.append(n)
        r.batch = [job.upload(r.r, B * DENSE_IN * 4, "prefetch"),
                   job.upload(r.r, n * 8, "prefetch"),         # KJT values
                   job.upload(r.r, F * B * 4, "prefetch"),     # KJT lengths
                   job.upload(r.r, B * 4, "prefetch")]         # labels
    if step == 1:
        for r in ranks:                                        # Reducer rebuild_buckets
            make_buckets(r)
    recv = input_dist(ranks, rng, n_values)
    pooled_full = [r.tbe.forward(recv[r.r][3]) for r in ranks]
    pooled = []
    for r in ranks:                                            # reduce-scatter
        out = alloc(r.r, B * F * D * 4, "activations")
        other = 1 - r.r
        job.peer(r.r, nccl[r.r], other, pooled_full[other] + r.r * B * F * D * 4, B * F * D * 4)
        job.dtod(r.r, out, nccl[r.r], B * F * D * 4)
        pooled.append(out)
    for r in ranks:
        free(r.r, pooled_full[r.r])
    acts = [dense_forward(r.r) for r in ranks]
    losses = [alloc(r.r, 4, "activations") for r in ranks]
    grads_emb = []
    for r in ranks:                                            # loss.backward()
        g = alloc(r.r, B * 4, "activations")
        for a in reversed(acts[r.r]):
            g2 = alloc(r.r, _sizes[a], "activations")
            free(r.r, g, a)
            g = g2
        free(r.r, g)
        gp = alloc(r.r, B * F * D * 4, "activations")          # grad of the pooled output
        grads_emb.append(gp)
    gathered = []
    for r in ranks:                                            # all-gather (reduce-scatter's backward)
        full = alloc(r.r, WORLD * B * F * D * 4, "activations")
        job.dtod(r.r, full + r.r * B * F * D * 4, grads_emb[r.r], B * F * D * 4)
        other = 1 - r.r
        job.peer(r.r, full + other * B * F * D * 4, other, grads_emb[other], B * F * D * 4)
        gathered.append(full)
    for r in ranks:                                            # the pooled grads, dropped
        free(r.r, grads_emb[r.r])
    grads_emb = gathered
    for r in ranks:
        free(r.r, pooled[r.r])
        r.tbe.backward_fused(grads_emb[r.r], recv[r.r][3])
        rl, rv, rs, _n = recv[r.r]
        free(r.r, rl, rv, rs)
    for r in ranks:                                            # bucket all-reduce
        other = 1 - r.r
        for b, n in zip(ranks[other].buckets, bucket_sizes()):
            job.peer(r.r, nccl[r.r], other, b, min(n, NCCL_BUF))
    for r in ranks:                                            # Adagrad foreach step
        std = [alloc(r.r, n, "activations") for n in DENSE]
        free(r.r, *std)
    if step % 8 == 0:
        job.dtoh(0, losses[0], 4)
    for r in ranks:
        free(r.r, losses[r.r])


def main():
    job.start(markers_default=True)
    job.open_devices(WORLD)
    ranks = [Rank(r) for r in range(WORLD)]                    # DMP: shard + init_parameters
    nccl = [alloc(r, NCCL_BUF, "other") for r in range(WORLD)]  # first collective
    sync_module_states(ranks, nccl)
    for r in ranks:                                            # DDP Reducer
        make_buckets(r)
    for r in ranks:                                            # dcp.load(state_dict)
        r.tbe.load_shards()
        for p, s, n in zip(r.dense, r.sums, DENSE):
            job.htod(r.r, p, n)
            job.htod(r.r, s, n)
    rng = random.Random(12)
    first = None
    for step in range(STEPS):
        job.step(step)
        train_step(ranks, rng, nccl, step)
        if first is None:
            first = B * DENSE_IN * 4 + F * B * 4 + B * 4
    for r in ranks:
        free(r.r, *r.batch, *r.buckets, *r.sums, *r.dense, r.block_sizes,
             r.tbe.weights, r.tbe.momentum1, *r.tbe.consts, nccl[r.r])
    job.line("no_finding whole_dataset_upload")
    for r in range(WORLD):
        job.line("finding prefetch_depth %d 1 %d" % (r, first))
    for r in range(WORLD):
        job.line("steps %d %d" % (r, STEPS))
    job.finish()


main()
