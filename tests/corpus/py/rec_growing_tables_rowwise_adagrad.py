#!/usr/bin/env python3
"""An online recommender whose embedding tables grow while it trains: a
user `nn.Embedding(sparse=True)` and an item-history
`nn.EmbeddingBag(mode="mean", sparse=True)` (64 floats a row) feeding a
141-512-256-1 MLP with 13 dense features; new user and item ids seen by
the loader's id map (kept on the host) get rows appended every few steps
by `torch.cat` of the table with freshly initialised rows (a bigger
table, the old one freed, the Parameter re-registered with the
optimizer), and the tables' row-wise Adagrad keeps one float per row,
grown with them by `torch.cat` with zeros; the MLP uses `torch.optim.Adam`.
Batch 2,048, 40 steps, PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync
(one cuMemAllocAsync / cuMemFreeAsync per tensor).

What is modelled (sources: torch/nn/modules/sparse.py `Embedding` /
`EmbeddingBag` (`sparse=True`); aten native/EmbeddingBag.cpp /
cuda/EmbeddingBag.cu (`_embedding_bag` returns the output with
`offset2bag`, `bag_size` and `max_indices` kept for the backward;
`_embedding_bag_sparse_backward`: `grad[offset2bag]` scaled by the bag
sizes, a sparse COO gradient of indices 1 x nnz and values nnz x 64);
aten native/Embedding.cpp `embedding_sparse_backward` (the indices
reshaped to 1 x B, the values a copy of the gradient);
`Tensor.coalesce`; transformers modeling_utils.py
`_get_resized_embeddings` (a new, bigger embedding on the same device,
the old rows copied in, the old weight dropped) as the pattern for
growing a table, done here with `torch.cat([weight.data, new_rows])`
and `torch.empty(n, 64, device=...).uniform_()`; the row-wise Adagrad of
fbgemm's EXACT_ROWWISE_ADAGRAD written in Python (`state_sum.index_add_`
of the rows' mean squared gradient, `state_sum[idx].sqrt_().add_(eps)`,
`weight.index_add_(0, idx, -lr * values / std)`); c10/cuda/
CUDAMallocAsyncAllocator.cpp (each tensor a `cudaMallocAsync` on the
current stream, `cudaFreeAsync` when it dies); torch/optim/adam.py
`_multi_tensor_adam` (`exp_avg` / `exp_avg_sq` at the first step, a
`_foreach_sqrt` temporary per parameter); `optimizer.zero_grad()`
(set_to_none)). Markers on (one per step), driver by cuGetProcAddress.

Truth: both tables (every grown copy) and the freshly initialised rows
appended to them, and the MLP parameters weights (the MLP uploaded by
`model.to`, the tables made on the device); the row-wise `state_sum`
vectors (every grown copy) and the zeros appended to them, and Adam's
states optimizer; the sparse tables' gradients (indices and values) and
the MLP's `.grad`s gradients; user ids, item ids, item offsets, dense
features and labels uploaded per step prefetch (depth 1; the item ids of
varying length); lookups, MLP tensors, embedding-bag bookkeeping,
coalesced gradients, Adagrad and Adam temporaries activations. No
dataset. 40 steps. Coincidences: the item table's `state_sum` after its
seventh growth (131,072 rows, 524,288 B, optimizer) is the 512 x 256
Linear weight (weights), its `.grad` and Adam states; the user ids and
the item offsets (2,048 int64, 16,384 B, prefetch) are each step's
`bag_size` and `max_indices` (activations); the labels (2,048 floats,
8,192 B, prefetch) are the per-element loss and the logits' gradient
(activations)."""
import random

import vtc

job = vtc.Job("rec_growing_tables_rowwise_adagrad", "getproc", __doc__)
F32, I64 = 4, 8
D, DENSE, B, STEPS = 64, 13, 2048, 40
MLP = [2 * D + DENSE, 512, 256, 1]
USERS0, USER_GROW, USER_EVERY = 150000, 4000, 3
ITEMS0, ITEM_GROW, ITEM_EVERY = 96072, 5000, 4


def alloc(n, cat="activations"):
    return job.mem_alloc_async(0, n, cat)


def free(*ptrs):
    for p in ptrs:
        job.mem_free_async(0, p)


def upload(n, cat):
    p = alloc(n, cat)
    job.htod(0, p, n)
    return p


class GrowingTable:
    def __init__(self, rows):
        self.rows = rows
        self.weight = alloc(rows * D * F32, "weights")      # torch.empty(...).uniform_()
        self.state = alloc(rows * F32, "optimizer")         # state_sum = zeros(rows)
        self.grad = []

    def grow(self, n):
        """new rows appended: cat of the weight and of the Adagrad sums."""
        fresh = alloc(n * D * F32, "weights")               # torch.empty(n, 64).uniform_()
        bigger = alloc((self.rows + n) * D * F32, "weights")   # torch.cat([weight.data, fresh])
        free(fresh, self.weight)
        self.weight = bigger
        zeros = alloc(n * F32, "optimizer")                 # torch.zeros(n)
        grown = alloc((self.rows + n) * F32, "optimizer")   # torch.cat([state_sum, zeros])
        free(zeros, self.state)
        self.state = grown
        self.rows += n

    def adagrad(self, nnz):
        """Row-wise Adagrad on the sparse gradient."""
        u = max(1, nnz * 3 // 4)                            # unique rows after coalesce
        ci, cv = alloc(u * I64), alloc(u * D * F32)         # coalesce()
        sq = alloc(u * D * F32)                             # values.pow(2)
        mean = alloc(u * F32)                               # .mean(1)
        free(sq)
        std = alloc(u * F32)                                # state_sum[idx].sqrt_().add_(eps)
        upd = alloc(u * D * F32)                            # values / std[:, None]
        neg = alloc(u * D * F32)                            # * -lr
        free(upd, neg, std, mean, ci, cv)


def main():
    job.start(markers_default=True)
    job.open_devices(1)
    rng = random.Random(31)
    mlp_sizes = []
    for a, b in zip(MLP, MLP[1:]):
        mlp_sizes += [a * b * F32, b * F32]
    users = GrowingTable(USERS0)
    items = GrowingTable(ITEMS0)
    mlp = [upload(n, "weights") for n in mlp_sizes]         # model.to(device)
    adam = None
    first = None
    for step in range(STEPS):
        job.step(step)
        if step and step % USER_EVERY == 0:
            users.grow(USER_GROW)
        if step and step % ITEM_EVERY == 0:
            items.grow(ITEM_GROW)
        nnz = B * rng.randrange(3, 9)                       # item histories, 3 to 8 items
        uid = upload(B * I64, "prefetch")
        iid = upload(nnz * I64, "prefetch")
        ioff = upload(B * I64, "prefetch")
        dense = upload(B * DENSE * F32, "prefetch")
        label = upload(B * F32, "prefetch")
        if first is None:
            first = B * I64 + nnz * I64 + B * I64 + B * DENSE * F32 + B * F32
        # forward
        ue = alloc(B * D * F32)                             # embedding(uid)
        ie = alloc(B * D * F32)                             # embedding_bag(iid, ioff, mean)
        o2b = alloc(nnz * I64)                              # offset2bag
        bsz = alloc(B * I64)                                # bag_size
        mxi = alloc(B * I64)                                # max_indices
        cat = alloc(B * MLP[0] * F32)
        saved = [o2b, bsz, mxi, cat]
        for width in MLP[1:]:
            h = alloc(B * width * F32)
            if width != 1:
                saved += [h, alloc(B * width * F32)]        # relu
            else:
                saved.append(h)
        loss_t = alloc(B * F32)                             # bce with logits, per element
        loss = alloc(F32)
        free(ue, ie, loss_t)
        # backward
        g = alloc(B * F32)
        grads = [None] * len(mlp_sizes)
        for i in reversed(range(len(MLP) - 1)):
            grads[2 * i + 1] = alloc(mlp_sizes[2 * i + 1], "gradients")
            grads[2 * i] = alloc(mlp_sizes[2 * i], "gradients")
            gi = alloc(B * MLP[i] * F32)
            free(g)
            g = gi
        users.grad = [alloc(B * I64, "gradients"), alloc(B * D * F32, "gradients")]
        scaled = alloc(nnz * D * F32)                       # grad[offset2bag] / bag_size
        items.grad = [alloc(nnz * I64, "gradients"), alloc(nnz * D * F32, "gradients")]
        free(scaled, g, *saved, loss)
        # optimizers
        if adam is None:
            adam = [alloc(n, "optimizer") for n in mlp_sizes for _ in (0, 1)]
        sq = [alloc(n) for n in mlp_sizes]                  # _foreach_sqrt
        free(*sq)
        users.adagrad(B)
        items.adagrad(nnz)
        free(*grads, *users.grad, *items.grad)              # zero_grad()
        users.grad, items.grad = [], []
        free(uid, iid, ioff, dense, label)
    free(*mlp, *adam, users.weight, users.state, items.weight, items.state)
    job.line("no_finding whole_dataset_upload")
    job.line("finding prefetch_depth 0 1 %d" % first)
    job.line("steps 0 %d" % STEPS)
    job.finish()


main()
