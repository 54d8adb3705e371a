#!/usr/bin/env python3
"""Full-batch GCN on ogbn-arxiv (the OGB node property prediction example),
every tensor from the stream-ordered allocator: PYTORCH_CUDA_ALLOC_CONF=
backend:cudaMallocAsync (one cuMemAllocAsync per tensor, cuMemFreeAsync
when it dies; the driver's pool, not PyTorch, keeps the memory).

What is modelled (sources read: ogb examples/nodeproppred/arxiv/gnn.py
(`PygNodePropPredDataset(transform=T.ToSparseTensor())`,
`data.adj_t.to_symmetric()` on the host, `data = data.to(device)`,
`train_idx = split_idx['train'].to(device)`, `GCN` with 3 `GCNConv(cached=
True)` and 2 `BatchNorm1d`, `train` (`zero_grad()`, `model(data.x,
data.adj_t)[train_idx]`, `nll_loss` against `data.y.squeeze(1)[train_idx]`),
`test` (`out.argmax(dim=-1, keepdim=True)`, `y_true[split_idx[...]]` with
the host index tensors, the evaluator reading both back));
torch_geometric/nn/conv/gcn_conv.py `gcn_norm` for a SparseTensor
(`fill_diag`, `sum(dim=1)`, `pow_(-0.5)`, two `mul`s; the result kept in
`_cached_adj_t`, one per conv layer); torch_sparse `to_symmetric` (a
storage of row and col, no rowptr), `spmm` (rowptr made from row on first
use and kept in the storage; its backward builds `colptr` and `csr2csc`
once and keeps them too, and gathers the transposed values each time);
torch/optim/adam.py `_multi_tensor_adam` (state at the first step,
`_foreach_sqrt` temporaries per step); `Module._apply` (children first);
c10/cuda/CUDAMallocAsyncAllocator.cpp):
  - `data.to(device)` in attribute order: x (169,343 x 128 float32),
    node_year, y (N x 1 int64 each), adj_t's row and col (2,315,598 int64
    each); then the training split's index;
  - `GCN(...).to(device)`: lin weights, biases, BatchNorm weights, biases
    and running statistics uploaded;
  - 20 epochs, each one `train()` (a step) and one `test()`: at the first
    forward each conv normalises the adjacency with self loops (new row,
    col, values, rowptr; the degree vectors and the intermediate values
    freed) and keeps it; at the first backward each conv's adjacency gains
    colptr and csr2csc; `.grad`s freed by `zero_grad()` at the start of the
    next `train()`, so they live through `test()`;
  - `test()`: a no-grad forward, argmax, and per split two index uploads
    (y_true and y_pred gathered with the host index) and two read-backs.
No markers, driver by dlsym.

Truth: x, node_year, y, row, col and train_idx dataset, each uploaded whole:
SIX whole_dataset_upload findings (86,703,616 B, 1,354,744 B twice,
18,524,784 B twice, 727,528 B). The normalised adjacencies the convs keep
(row, col, values, rowptr, colptr, csr2csc, three sets) are derived from the
dataset on the device and kept for the whole run: dataset, with no finding
(never uploaded). Parameters and BatchNorm buffers weights; `.grad`s
gradients; Adam state optimizer; every forward, backward and evaluation
tensor and the Adam temporaries activations; the split indices uploaded per
evaluation other (index arrays built on the host). No prefetch (nothing
uploaded per step); 20 steps. Coincidences: node_year, y and every
evaluation's y_pred are one size (1,354,744 B); the three convs' normalised
row and col are one size; the hidden activations (N x 256 float32) are
exactly twice x."""
import vtc

job = vtc.Job("gnn_full_graph", "dlsym", __doc__)
N, F, H, C = 169343, 128, 256, 40
E = 2315598              # undirected edges after to_symmetric
NNZ = E + N              # with the self loops fill_diag adds
SPLITS = {"train": 90941, "valid": 29799, "test": 48603}
EPOCHS = 20


def empty(n, cat):
    return job.mem_alloc_async(0, n, cat)


def free(*ptrs):
    for p in ptrs:
        job.mem_free_async(0, p)


def to_device(n, cat):
    p = empty(n, cat)
    job.htod(0, p, n)
    return p


class GCNConv:
    def __init__(self, cin, cout):
        self.cin, self.cout = cin, cout
        self.cached = None  # _cached_adj_t: dict of storage tensors
        self.weight = self.bias = None

    def to(self):  # _apply: children (lin) first, then its own bias
        self.weight = to_device(self.cout * self.cin * 4, "weights")
        self.bias = to_device(self.cout * 4, "weights")

    def gcn_norm(self):
        row = empty(NNZ * 8, "dataset")  # fill_diag: new row, col, values
        col = empty(NNZ * 8, "dataset")
        ones = empty(NNZ * 4, "activations")
        rowptr = empty((N + 1) * 8, "dataset")  # sum(dim=1) builds the csr
        deg = empty(N * 4, "activations")
        dis = empty(N * 4, "activations")  # deg.pow_(-0.5) in place, masked_fill_
        v1 = empty(NNZ * 4, "activations")  # mul(adj_t, dis.view(-1, 1))
        value = empty(NNZ * 4, "dataset")  # mul(adj_t, dis.view(1, -1))
        free(ones, deg, v1, dis)
        self.cached = {"row": row, "col": col, "rowptr": rowptr, "value": value}

    def forward(self):
        if self.cached is None:
            self.gcn_norm()
        h = empty(N * self.cout * 4, "activations")  # self.lin(x)
        a = empty(N * self.cout * 4, "activations")  # spmm(adj_t, h)
        free(h)
        out = empty(N * self.cout * 4, "activations")  # out + self.bias
        free(a)
        return out

    def backward_spmm(self, grad):
        if "colptr" not in self.cached:  # storage.colptr(), csr2csc(): kept
            self.cached["colptr"] = empty((N + 1) * 8, "dataset")
            self.cached["csr2csc"] = empty(NNZ * 8, "dataset")
        value_t = empty(NNZ * 4, "activations")  # value[csr2csc]
        gx = empty(N * self.cout * 4, "activations")  # spmm(adj_t.t(), grad)
        free(value_t)
        return gx


class BatchNorm1d:
    def to(self):
        self.params = [to_device(H * 4, "weights") for _ in range(2)]  # weight, bias
        self.buffers = [to_device(H * 4, "weights") for _ in range(2)]  # running stats
        self.buffers.append(to_device(8, "weights"))  # num_batches_tracked


class GCN:
    def __init__(self):
        self.convs = [GCNConv(F, H), GCNConv(H, H), GCNConv(H, C)]
        self.bns = [BatchNorm1d(), BatchNorm1d()]
        self.grads = []

    def to(self):
        for c in self.convs:
            c.to()
        for b in self.bns:
            b.to()
        return self

    def param_sizes(self):
        out = []
        for c in self.convs:
            out += [c.cout * c.cin * 4, c.cout * 4]
        for _b in self.bns:
            out += [H * 4, H * 4]
        return out

    def forward(self, train):
        saved, prev = [], None
        for i in range(2):
            b = self.convs[i].forward()
            if prev is not None and not train:
                free(prev)  # no_grad: the input dies once the conv has read it
            bn = empty(N * H * 4, "activations")
            if train:
                stats = [empty(H * 4, "activations"), empty(H * 4, "activations")]
                r = empty(N * H * 4, "activations")  # relu saves its output
                free(bn)
                mask = empty(N * H, "activations")  # dropout
                d = empty(N * H * 4, "activations")
                saved += [b, r, mask, d] + stats
            else:  # eval: running statistics, no dropout
                free(b)
                prev = empty(N * H * 4, "activations")  # relu
                free(bn)
        out = self.convs[2].forward()
        if prev is not None and not train:
            free(prev)
        logp = empty(N * C * 4, "activations")  # log_softmax
        free(out)
        if not train:
            return logp, []
        saved.append(logp)
        return logp, saved

    def backward(self, saved, g_rows):
        g = empty(N * C * 4, "activations")  # scatter of the gathered grad
        free(g_rows)
        g2 = empty(N * C * 4, "activations")  # log_softmax backward
        free(g)
        grads = [None] * 10
        grads[5] = empty(C * 4, "gradients")  # conv2.bias
        gx = self.convs[2].backward_spmm(g2)
        free(g2)
        grads[4] = empty(C * H * 4, "gradients")  # conv2.lin.weight
        gin = empty(N * H * 4, "activations")
        free(gx)
        for i in (1, 0):
            gd = empty(N * H * 4, "activations")  # dropout backward
            free(gin)
            gr = empty(N * H * 4, "activations")  # relu backward
            free(gd)
            grads[6 + 2 * i] = empty(H * 4, "gradients")  # bn weight, bias
            grads[7 + 2 * i] = empty(H * 4, "gradients")
            gb = empty(N * H * 4, "activations")  # batch_norm backward
            free(gr)
            grads[2 * i + 1] = empty(H * 4, "gradients")  # conv bias
            gx = self.convs[i].backward_spmm(gb)
            free(gb)
            grads[2 * i] = empty(H * self.convs[i].cin * 4, "gradients")
            if i > 0:
                gin = empty(N * H * 4, "activations")
            free(gx)
        free(*saved)
        self.grads = grads

    def zero_grad(self):
        free(*self.grads)
        self.grads = []


class Adam:
    def __init__(self, sizes):
        self.sizes = sizes
        self.state = None

    def step(self):
        if self.state is None:
            self.state = []
            for n in self.sizes:
                for _ in range(2):  # exp_avg, exp_avg_sq = zeros_like (step on the host)
                    s = empty(n, "optimizer")
                    job.zero(0, s, n)
                    self.state.append(s)
        tmp = [empty(n, "activations") for n in self.sizes]  # _foreach_sqrt(exp_avg_sqs)
        free(*tmp)


def main():
    job.start(markers_default=False)
    job.open_devices(1)
    # data.to(device): x, node_year, y, adj_t (row, col)
    data = {"x": to_device(N * F * 4, "dataset"), "node_year": to_device(N * 8, "dataset"),
            "y": to_device(N * 8, "dataset"), "row": to_device(E * 8, "dataset"),
            "col": to_device(E * 8, "dataset")}
    data["train_idx"] = to_device(SPLITS["train"] * 8, "dataset")
    model = GCN().to()
    opt = Adam(model.param_sizes())
    for epoch in range(EPOCHS):
        job.step(epoch)
        # train()
        model.zero_grad()
        logp, saved = model.forward(train=True)
        rows = empty(SPLITS["train"] * C * 4, "activations")  # out[train_idx]
        target = empty(SPLITS["train"] * 8, "activations")  # data.y.squeeze(1)[train_idx]
        loss = empty(4, "activations")
        g_rows = empty(SPLITS["train"] * C * 4, "activations")
        free(rows)
        model.backward(saved, g_rows)
        opt.step()
        job.dtoh(0, loss, 4)  # loss.item()
        free(target, loss)
        # test()
        logp, _ = model.forward(train=False)
        y_pred = empty(N * 8, "activations")  # argmax(dim=-1, keepdim=True)
        free(logp)
        for _name, n in SPLITS.items():
            for _src in ("y_true", "y_pred"):
                idx = to_device(n * 8, "other")  # the host index moved to the device
                picked = empty(n * 8, "activations")
                free(idx)
                job.dtoh(0, picked, n * 8)  # evaluator: .cpu().numpy()
                free(picked)
        free(y_pred)
    model.zero_grad()
    free(*opt.state)
    for c in model.convs:
        free(c.weight, c.bias, *c.cached.values())
    for b in model.bns:
        free(*b.params, *b.buffers)
    free(*data.values())
    for n in (N * F * 4, N * 8, N * 8, E * 8, E * 8, SPLITS["train"] * 8):
        job.line("finding whole_dataset_upload 0 %d" % n)
    job.line("no_finding prefetch_depth")
    job.line("steps 0 %d" % EPOCHS)
    job.finish()


main()
