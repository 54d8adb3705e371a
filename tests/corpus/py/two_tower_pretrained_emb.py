#!/usr/bin/env python3
"""A two-tower retrieval model fine-tuned with in-batch negatives, its
item table initialised from a numpy array of pretrained item vectors:
`nn.Embedding.from_pretrained(torch.from_numpy(item_vectors),
freeze=False, sparse=True)` (200,000 x 128 float32, 102,400,000 B) and a
user `nn.Embedding(50,000, 128, sparse=True)`, each followed by an MLP
128-512-128; `model.cuda()`, `SparseAdam` on the two tables and `Adam`
on the MLPs; batch 4,096 (user id, item id); 10 steps, then a recall@100
evaluation of 1,024 users against every item. PYTORCH_NO_CUDA_MEMORY_CACHING=1
(one cudaMalloc / cudaFree per tensor).

What is modelled (sources read: torch/nn/modules/sparse.py
`Embedding.from_pretrained` (the given tensor becomes the `weight`
Parameter: the numpy table is the model's parameter, not its data) and
`forward` (`F.embedding` gathers rows: a new tensor); torch/nn/modules/
module.py `Module.cuda` -> `_apply` (one allocation and one upload per
parameter, the item table among them); the embedding backward with
`sparse=True` (a sparse COO gradient: int64 indices and values of
batch x 128, no dense table-sized gradient); torch/optim/sparse_adam.py
(`exp_avg` / `exp_avg_sq` by `zeros_like(p)` at the first step: dense,
table-sized; `grad.coalesce()` (new indices and values), `_make_sparse`
temporaries, `exp_avg_update_values`, `numer`, `denom` of nnz x 128);
torch/optim/adam.py (`exp_avg` / `exp_avg_sq` at the first step); the
training loop's `batch.to(device)` (two int64 id tensors), in-batch
logits `u @ i.T` (4,096 x 4,096) and `cross_entropy` with
`arange` labels made on the device; evaluation under `no_grad`: item
tower over `arange(n_items, device=...)` (all item vectors kept), users
uploaded in chunks of 256, scores 256 x 200,000, `topk`, indices read
back). Markers on (one per step), driver by cuGetProcAddress
(libcudart).

Truth: both tables and the MLP parameters weights (the pretrained table
is a parameter the optimizer updates); SparseAdam and Adam state
optimizer; sparse gradients (indices, values, and their coalesced
copies) and MLP `.grad`s gradients; id batches and evaluation user
chunks prefetch (depth 1: each is uploaded when the loop needs it);
gathered rows, tower outputs, logits, SparseAdam temporaries, item
vectors, scores and top-k outputs activations; the `arange` labels and
item ids other. No dataset and no whole_dataset_upload: the only large
upload is the item table, a parameter. 10 steps. Coincidences: SparseAdam's
state is its tables' sizes (two 102,400,000 B and two 25,600,000 B
tensors); a sparse gradient's values (4,096 x 128 float32, 2 MiB) are
one gathered-rows tensor and one tower output; an evaluation item-vector
table is the item table's size; a user id batch and an item id batch are
one size (32,768 B), as is the `arange` label tensor."""
import vtc

job = vtc.Job("two_tower_pretrained_emb", "getproc", __doc__)
ITEMS, USERS, DIM, HID, BATCH, STEPS = 200000, 50000, 128, 512, 4096, 10
EVAL_USERS, EVAL_CHUNK, TOPK = 1024, 256, 100
MLP = [DIM * HID * 4, HID * 4, HID * DIM * 4, DIM * 4]


def alloc(n, cat):
    return job.mem_alloc(0, n, cat)


def free(*ptrs):
    job.mem_free(0, *ptrs)


def module_cuda():
    """_apply in module order: item table, item MLP, user table, user MLP."""
    sizes = [ITEMS * DIM * 4] + MLP + [USERS * DIM * 4] + MLP
    return [job.upload(0, n, "weights") for n in sizes], sizes


def tower_forward():
    rows = alloc(BATCH * DIM * 4, "activations")        # F.embedding
    h = alloc(BATCH * HID * 4, "activations")
    r = alloc(BATCH * HID * 4, "activations")           # relu
    out = alloc(BATCH * DIM * 4, "activations")
    return [rows, h, r, out]


def sparse_grad():
    return [alloc(BATCH * 8, "gradients"), alloc(BATCH * DIM * 4, "gradients")]


class LazyAdamState:
    """SparseAdam on the tables, Adam on the MLPs: both make exp_avg and
    exp_avg_sq by zeros_like(p) at their first step; SparseAdam also
    coalesces each sparse gradient and makes nnz x 128 temporaries."""

    def __init__(self, sizes):
        self.sizes = sizes
        self.state = None

    def step(self, sparse_grads=()):
        if self.state is None:
            self.state = []
            for n in self.sizes:
                for _ in ("exp_avg", "exp_avg_sq"):
                    p = alloc(n, "optimizer")
                    job.zero(0, p, n)
                    self.state.append(p)
        for g in sparse_grads:
            coalesced = [alloc(BATCH * 8, "gradients"), alloc(BATCH * DIM * 4, "gradients")]
            temps = [alloc(BATCH * DIM * 4, "activations") for _ in range(4)]
            free(*temps, *coalesced, *g)


def train_step(sparse_opt, dense_opt):
    ids = [alloc(BATCH * 8, "prefetch"), alloc(BATCH * 8, "prefetch")]
    for p in ids:
        job.htod(0, p, BATCH * 8)                       # batch.to(device)
    user = tower_forward()
    item = tower_forward()
    logits = alloc(BATCH * BATCH * 4, "activations")    # u @ i.T
    labels = alloc(BATCH * 8, "other")                  # arange(B, device=...)
    loss = alloc(4, "activations")
    dlogits = alloc(BATCH * BATCH * 4, "activations")
    free(logits)
    mlp_grads = [alloc(n, "gradients") for n in MLP + MLP]
    grads = [sparse_grad(), sparse_grad()]              # item, user tables
    free(dlogits, *user, *item)
    sparse_opt.step(grads)
    dense_opt.step()
    job.dtoh(0, loss, 4)
    free(loss, labels, *ids, *mlp_grads)                # zero_grad(set_to_none=True)


def evaluate():
    item_ids = alloc(ITEMS * 8, "other")                # arange(n_items)
    rows = alloc(ITEMS * DIM * 4, "activations")
    h = alloc(ITEMS * HID * 4, "activations")
    free(rows)
    vectors = alloc(ITEMS * DIM * 4, "activations")     # kept for every chunk
    free(h, item_ids)
    for _ in range(EVAL_USERS // EVAL_CHUNK):
        users = job.upload(0, EVAL_CHUNK * 8, "prefetch")
        u = alloc(EVAL_CHUNK * DIM * 4, "activations")
        scores = alloc(EVAL_CHUNK * ITEMS * 4, "activations")
        top_v = alloc(EVAL_CHUNK * TOPK * 4, "activations")
        top_i = alloc(EVAL_CHUNK * TOPK * 8, "activations")
        free(scores)
        job.dtoh(0, top_i, EVAL_CHUNK * TOPK * 8)
        free(users, u, top_v, top_i)
    free(vectors)


def main():
    job.start(markers_default=True)
    job.open_devices(1)
    params, sizes = module_cuda()
    sparse_opt = LazyAdamState([ITEMS * DIM * 4, USERS * DIM * 4])
    dense_opt = LazyAdamState(MLP + MLP)
    for s in range(STEPS):
        job.step(s)
        train_step(sparse_opt, dense_opt)
    evaluate()
    free(*sparse_opt.state, *dense_opt.state, *params)
    job.line("no_finding whole_dataset_upload")
    job.line("finding prefetch_depth 0 1 %d" % (2 * BATCH * 8))
    job.line("steps 0 %d" % STEPS)
    job.finish()


main()
