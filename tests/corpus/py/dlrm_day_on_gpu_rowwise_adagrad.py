#!/usr/bin/env python3
"""A DLRM trained on one day of Criteo-shaped click logs held whole on the
GPU: the day's preprocessed arrays (13 dense float features, 26 sparse
int64 ids, a float label per row; 204,800 rows) are `np.load`ed and
`torch.from_numpy(...).to(device)` once, then every step slices its
minibatch on the device with `index_select` over an epoch permutation;
the model is torchrec's `DLRM` with a `FusedEmbeddingBagCollection`
(26 tables of 64 floats, the row-wise Adagrad applied inside the
backward by fbgemm) and the dense part optimised by `torch.optim.Adagrad`;
batch 1024, one epoch (200 steps), PYTORCH_NO_CUDA_MEMORY_CACHING=1 (one
cudaMalloc / cudaFree per tensor).

What is modelled (sources: torchrec/models/dlrm.py (`SparseArch`:
`torch.cat` of the pooled embeddings reshaped to B x 26 x 64;
`DenseArch` / `OverArch` built from torchrec/modules/mlp.py `MLP` /
`Perceptron` (Linear + ReLU); `InteractionArch`: `torch.cat` of the dense
output and the sparse features, `torch.bmm` with its transpose, the
upper triangle gathered by the `triu_indices` buffer, `torch.cat` with
the dense output); torchrec/modules/fused_embedding_modules.py
`FusedEmbeddingBagCollection` (`optimizer_type=RowWiseAdagrad` ->
`EmbOptimType.EXACT_ROWWISE_ADAGRAD`, the tables grouped into one
`_BatchedFusedEmbeddingBag`); fbgemm_gpu
split_table_batched_embeddings_ops_training.py
`SplitTableBatchedEmbeddingBagsCodegen.__init__` (`rows_per_table`,
`bounds_check_warning`, `D_offsets`, `hash_size_cumsum` by
`torch.tensor(..., device=...)`; `_apply_split`: ONE `weights_dev` for
every table, initialised on the device, and ONE `momentum1_dev` of one
float per row, each with its `*_placements` / `*_offsets` uploaded) and
the fused backward (linear indices, radix sort, unique rows and their
run lengths as temporaries; `weights_dev` and `momentum1_dev` updated in
place, no dense gradient); torchrec/sparse/jagged_tensor.py
`KeyedJaggedTensor.from_lengths_sync` (values and lengths; offsets by
`asynchronous_complete_cumsum` at the first use, `.long()` for the
TBE); torch/optim/adagrad.py (`state["sum"] = full_like(p)` in the
constructor, `_multi_tensor_adagrad`: a `_foreach_sqrt` temporary per
parameter); `torch.randperm(n, device=...)` once per epoch). Markers on
(one per step), driver by cuGetProcAddress (libcudart).

Truth: the dense features (10,649,600 B), the sparse ids (42,598,400 B)
and the labels (819,200 B) dataset, uploaded whole BEFORE the model is
built: three true whole_dataset_upload findings; `weights_dev` and the
dense parameters weights (made on the device, nothing uploaded);
`momentum1_dev` and the Adagrad sums optimizer; dense `.grad`s
gradients; the TBE's index / offset / placement tensors, `triu_indices`
and the epoch permutation other; the `index_select`ed batches, KJT
values, lengths and offsets, pooled embeddings, MLP and interaction
tensors, the TBE backward's temporaries, the loss and Adagrad's
temporaries activations. No prefetch: nothing is uploaded per step. 200
steps. Coincidences: the gathered dense batch (1024 x 13 floats, 53,248 B,
activations) is the bottom MLP's first weight (13 x 1024, weights) and
its Adagrad sum (optimizer); the gathered label batch (4,096 B,
activations) is each of the over arch's two 1024-unit biases, their
`.grad`s and sums; the KJT values (1024 x 26 int64, 212,992 B) are each
of the TBE backward's linear and sorted index temporaries."""
import vtc

job = vtc.Job("dlrm_day_on_gpu_rowwise_adagrad", "getproc", __doc__)
F32, I64 = 4, 8
N, DENSE_IN, F, D, B = 204800, 13, 26, 64, 1024
ROWS = [1460, 583, 100000, 100000, 305, 24, 12517, 633, 3, 93145, 5683, 100000, 3194, 27,
        14992, 100000, 10, 5652, 2173, 4, 100000, 18, 15, 100000, 105, 100000]
BOTTOM = [DENSE_IN, 1024, 256, D]
OVER = [D + (F + 1) * F // 2, 1024, 1024, 512, 256, 1]
X_DENSE, X_SPARSE, Y = N * DENSE_IN * F32, N * F * I64, N * F32
STEPS = N // B


def alloc(n, cat="activations"):
    return job.mem_alloc(0, n, cat)


def free(*ptrs):
    job.mem_free(0, *ptrs)


def upload(n, cat):
    p = alloc(n, cat)
    job.htod(0, p, n)
    return p


def mlp_sizes(dims):
    out = []
    for a, b in zip(dims, dims[1:]):
        out += [a * b * F32, b * F32]
    return out


class TBE:
    """SplitTableBatchedEmbeddingBagsCodegen(EXACT_ROWWISE_ADAGRAD)."""

    def __init__(self):
        self.consts = [upload(F * I64, "other"),            # rows_per_table
                       upload(I64, "other"),                # bounds_check_warning
                       upload((F + 1) * 4, "other"),        # D_offsets
                       upload((F + 1) * I64, "other")]      # hash_size_cumsum
        self.weights = alloc(sum(ROWS) * D * F32, "weights")   # weights_dev (uniform_ on device)
        self.consts += [upload(F * 4, "other"), upload(F * I64, "other")]
        self.momentum1 = alloc(sum(ROWS) * F32, "optimizer")   # momentum1_dev
        self.consts += [upload(F * 4, "other"), upload(F * I64, "other")]

    def forward(self, offsets32):
        off = alloc((F * B + 1) * I64)                      # offsets().long()
        out = alloc(B * F * D * F32)                        # pooled, B x sum(D)
        free(off)
        return out

    def backward_fused(self, grad_out):
        n = F * B
        tmp = [alloc(n * I64), alloc(n * I64), alloc(n * 4), alloc(n * 4),  # linear, sorted, infos
               alloc(n * I64), alloc(n * 4), alloc((n + 1) * 4)]            # unique, counts, cumsum
        free(*tmp, grad_out)


def main():
    job.start(markers_default=True)
    job.open_devices(1)
    # the day, whole, before anything else
    x_dense = upload(X_DENSE, "dataset")
    x_sparse = upload(X_SPARSE, "dataset")
    y = upload(Y, "dataset")
    # DLRM(embedding_bag_collection=FusedEmbeddingBagCollection(...), dense_device=device)
    tbe = TBE()
    dense_sizes = mlp_sizes(BOTTOM) + mlp_sizes(OVER)
    dense = [alloc(n, "weights") for n in dense_sizes]     # made on the device, reset_parameters
    triu = upload(2 * (F + 1) * F // 2 * I64, "other")     # InteractionArch.triu_indices
    sums = [alloc(n, "optimizer") for n in dense_sizes]    # Adagrad: full_like in __init__
    perm = alloc(N * I64, "other")                         # randperm(N, device=...)
    nb, no = len(mlp_sizes(BOTTOM)), len(mlp_sizes(OVER))
    for step in range(STEPS):
        job.step(step)
        xb = alloc(B * DENSE_IN * F32)                     # x_dense.index_select(0, idx)
        sb = alloc(B * F * I64)                            # x_sparse.index_select(0, idx)
        yb = alloc(B * F32)                                # y.index_select(0, idx)
        values = alloc(B * F * I64)                        # sb.t().contiguous().view(-1)
        lengths = alloc(F * B * 4)                         # torch.ones(F * B, int32)
        free(sb)
        offsets32 = alloc((F * B + 1) * 4)                 # asynchronous_complete_cumsum
        # forward
        saved = []
        pooled = tbe.forward(offsets32)
        sparse = alloc(B * F * D * F32)                    # SparseArch: cat + reshape
        free(pooled)
        for b in BOTTOM[1:]:                               # DenseArch
            saved += [alloc(B * b * F32), alloc(B * b * F32)]   # linear, relu
        comb = alloc(B * (F + 1) * D * F32)                # cat(dense.unsqueeze(1), sparse)
        inter = alloc(B * (F + 1) * (F + 1) * F32)         # bmm
        flat = alloc(B * (F + 1) * F // 2 * F32)           # interactions[:, triu[0], triu[1]]
        cat = alloc(B * OVER[0] * F32)                     # cat(dense, flat)
        saved += [comb, inter, flat, cat]
        for b in OVER[1:]:                                 # OverArch (no ReLU after the last)
            saved.append(alloc(B * b * F32))
            if b != 1:
                saved.append(alloc(B * b * F32))
        loss = alloc(F32)                                  # BCE with logits
        # backward
        g = alloc(B * F32)
        grads = [None] * len(dense_sizes)
        for i in reversed(range(no)):                      # over arch, last layer first
            grads[nb + i] = alloc(dense_sizes[nb + i], "gradients")
            if i % 2 == 0:
                gi = alloc(B * OVER[i // 2] * F32)
                free(g)
                g = gi
        g_flat = alloc(B * (F + 1) * F // 2 * F32)         # split of the cat's grad
        g_dense_a = alloc(B * D * F32)
        free(g)
        g_inter = alloc(B * (F + 1) * (F + 1) * F32)       # index_put of the triangle
        free(g_flat)
        g_comb = [alloc(B * (F + 1) * D * F32) for _ in range(2)]  # bmm backward
        free(g_inter)
        g_c = alloc(B * (F + 1) * D * F32)
        free(*g_comb)
        g_dense_b = alloc(B * D * F32)                     # slices of the cat's grad
        g_sparse = alloc(B * F * D * F32)
        free(g_c)
        g_pooled = alloc(B * F * D * F32)                  # KeyedTensor / cat backward
        free(g_sparse)
        tbe.backward_fused(g_pooled)                       # rowwise adagrad in place
        g = alloc(B * D * F32)
        free(g_dense_a, g_dense_b)
        for i in reversed(range(nb)):                      # dense arch
            grads[i] = alloc(dense_sizes[i], "gradients")
            if i % 2 == 0 and i > 0:
                gi = alloc(B * BOTTOM[i // 2] * F32)
                free(g)
                g = gi
        free(g, *saved, loss, xb, yb, values, lengths, offsets32, sparse)
        std = [alloc(n) for n in dense_sizes]              # _foreach_sqrt(state_sums)
        free(*std)
        free(*grads)                                       # optimizer.zero_grad()
    free(perm, triu, *sums, *dense, tbe.weights, tbe.momentum1, *tbe.consts,
         x_dense, x_sparse, y)
    for n in (X_DENSE, X_SPARSE, Y):
        job.line("finding whole_dataset_upload 0 %d" % n)
    job.line("no_finding prefetch_depth")
    job.line("steps 0 %d" % STEPS)
    job.finish()


main()
