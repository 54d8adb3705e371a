#!/usr/bin/env python3
"""An online ranking service: a DLRM model (facebookresearch/dlrm's
`dlrm_s_pytorch.py` layout) answering scoring requests while a trainer
elsewhere publishes a new checkpoint every 40 requests; the worker hot-swaps
each one in place of the model it is serving, with
PYTORCH_NO_CUDA_MEMORY_CACHING=1 (one cudaMalloc per tensor).

What is modelled (sources read: dlrm_s_pytorch.py `DLRM_Net` (`create_mlp`,
`create_emb` with `nn.EmbeddingBag(n, m, mode="sum")`, `apply_mlp`,
`apply_emb`, `interact_features` with `interaction_op="dot"`: `torch.cat`,
`torch.bmm`, the lower triangle gathered with `li`, `lj`: index tensors
built on the host at every call, `torch.cat` with the dense output),
`inference` (`X.to(device)`, each table's `lS_i` and `lS_o` moved to the
device, `Z.detach().cpu()`);
torch/serialization.py `torch.load(f, map_location="cuda")` (every storage
restored and moved to the device: one allocation and one upload each);
torch/nn/modules/module.py `load_state_dict(state_dict, assign=True)`
(`_load_from_state_dict` sets the loaded tensor as the parameter: the old
parameter is dropped, and with it its memory) and `Module.to` ->
`_apply(convert)`; TorchServe's handler `initialize` (the first model
loaded on the host, then `model.to(device)`) and `inference` under
`torch.inference_mode()`):
  - startup: the first checkpoint loaded on the host, `model.to(device)`:
    8 embedding tables (400,000 to 32 rows of 64 float32), the bottom MLP
    (13-512-256-64) and the top MLP (100-512-256-1) uploaded per tensor;
  - 120 requests of 1024 samples: the dense features and, per table, the
    indices and offsets uploaded; bottom MLP, 8 embedding bags, the dot
    interaction (its `li` / `lj` index tensors put on the device at every
    call), top MLP, sigmoid, the scores read back; every tensor freed when
    the request returns;
  - before requests 40 and 80: `torch.load(new_ckpt, map_location="cuda")`
    puts the whole new state dict on the device (both models live), then
    `load_state_dict(sd, assign=True)` makes each new tensor the parameter
    and the old one is freed, module by module.
No markers, driver by dlsym.

Truth: all three generations of parameters weights (the swapped-in ones are
uploaded whole in the middle of the run, but they are a model, not a
dataset: no whole_dataset_upload); the request's uploaded features, indices
and offsets prefetch (one request on the device at a time: depth 1); the
`li` / `lj` index tensors other (index arrays built on the host, as
cupy_kmeans's); everything the forward makes activations. No dataset; 0
steps. Coincidences: the
32-row table (8,192 B) is exactly each table's index upload and offset
upload for a request; a swapped-in tensor is exactly the tensor it
replaces; the bottom MLP's output and each bag's output (1024 x 64
float32) are one size."""
import vtc

job = vtc.Job("ranking_hot_swap", "dlsym", __doc__)
ROWS = [400000, 150000, 60000, 20000, 5000, 1000, 128, 32]
DIM, DENSE, BATCH = 64, 13, 1024
BOT = [DENSE, 512, 256, DIM]
NUM_INT = (len(ROWS) + 1) * len(ROWS) // 2  # pairs of the 9 vectors, no diagonal
TOP = [DIM + NUM_INT, 512, 256, 1]
REQUESTS, SWAP_EVERY = 120, 40


def empty(n, cat):
    return job.mem_alloc(0, n, cat)


def free(*ptrs):
    job.mem_free(0, *ptrs)


def state_dict():
    """(name, bytes) in state_dict order: DLRM_Net.__init__ builds emb_l,
    then bot_l, then top_l."""
    out = [("emb_l.%d.weight" % i, n * DIM * 4) for i, n in enumerate(ROWS)]
    for name, sizes in (("bot_l", BOT), ("top_l", TOP)):
        for i in range(len(sizes) - 1):  # Sequential of Linear, ReLU (Sigmoid last)
            out.append(("%s.%d.weight" % (name, 2 * i), sizes[i + 1] * sizes[i] * 4))
            out.append(("%s.%d.bias" % (name, 2 * i), sizes[i + 1] * 4))
    return out


class DLRM:
    def __init__(self):
        self.sd = state_dict()
        self.params = {}

    def to(self):  # _apply: emb_l, bot_l, top_l children in order
        for name, n in self.sd:
            self.params[name] = job.upload(0, n, "weights")
        return self

    def load_state_dict_assign(self, new):
        for name, _n in self.sd:  # module by module: the new tensor replaces the old
            old = self.params[name]
            self.params[name] = new[name]
            free(old)

    def mlp(self, sizes, x, keep_input=False):
        for i in range(len(sizes) - 1):
            y = empty(BATCH * sizes[i + 1] * 4, "activations")  # Linear
            if not (keep_input and i == 0):
                free(x)
            x = empty(BATCH * sizes[i + 1] * 4, "activations")  # ReLU (Sigmoid last in top_l)
            free(y)
        return x

    def forward(self, dense):
        x = self.mlp(BOT, dense, keep_input=True)  # the uploaded X, freed with the request
        ly = [empty(BATCH * DIM * 4, "activations") for _ in ROWS]  # EmbeddingBag(mode="sum")
        t = empty(BATCH * (len(ROWS) + 1) * DIM * 4, "activations")  # torch.cat([x] + ly).view
        z = empty(BATCH * (len(ROWS) + 1) ** 2 * 4, "activations")  # torch.bmm(T, T^T)
        li = job.upload(0, NUM_INT * 8, "other")  # torch.tensor([...]) on the host, indexing Z
        lj = job.upload(0, NUM_INT * 8, "other")  # on the device moves it there
        zflat = empty(BATCH * NUM_INT * 4, "activations")  # Z[:, li, lj]
        r = empty(BATCH * (DIM + NUM_INT) * 4, "activations")  # torch.cat([x, Zflat], dim=1)
        free(t, z, li, lj, zflat, x, *ly)
        return self.mlp(TOP, r)


def torch_load_to_cuda(sd):
    return {name: job.upload(0, n, "weights") for name, n in sd}


def main():
    job.start(markers_default=False)
    job.open_devices(1)
    model = DLRM().to()
    pinned = job.pinned(BATCH * DENSE * 4)
    for r in range(REQUESTS):
        if r and r % SWAP_EVERY == 0:  # a new checkpoint was published
            new = torch_load_to_cuda(model.sd)
            model.load_state_dict_assign(new)
        inputs = [job.upload(0, BATCH * DENSE * 4, "prefetch")]  # X.to(device)
        for _t in ROWS:  # lS_i, lS_o per table
            inputs.append(job.upload(0, BATCH * 8, "prefetch"))
            inputs.append(job.upload(0, BATCH * 8, "prefetch"))
        scores = model.forward(inputs[0])
        job.dtoh(0, scores, BATCH * 4)  # Z.detach().cpu()
        free(scores, *inputs)
    job.call("cuMemFreeHost", pinned)
    free(*model.params.values())
    job.line("no_finding whole_dataset_upload")
    job.line("finding prefetch_depth 0 1 %d" % (BATCH * DENSE * 4 + 2 * len(ROWS) * BATCH * 8))
    job.line("steps 0 0")
    job.finish()


main()
