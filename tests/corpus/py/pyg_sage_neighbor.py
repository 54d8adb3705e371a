#!/usr/bin/env python3
"""GraphSAGE mini-batch training with PyTorch Geometric's `NeighborSampler`
on an ogbn-arxiv-sized graph (169,343 nodes, 128 float32 features, 40
classes, 90,941 training nodes), the node features and labels put on the
GPU whole, the sampled bipartite graphs uploaded per batch: one epoch of
89 batches (sizes=[15, 10], batch_size=1024), then layer-wise inference
over all nodes (sizes=[-1], batch_size=4096). Modelled with
PYTORCH_NO_CUDA_MEMORY_CACHING=1 (one cudaMalloc / cudaFree per tensor).

What is modelled (sources: PyG 2.0's examples/reddit.py and
examples/ogbn_products_sage.py as written for
`torch_geometric.loader.NeighborSampler` (today's reddit.py, read, keeps
the features and labels on the GPU the same way, `data.to(device, 'x',
'y')`, but samples with NeighborLoader): `model.to(device)`, `x =
data.x.to(device)`, `y = data.y.squeeze().to(device)`: the numpy-backed
feature matrix and labels from `PygNodePropPredDataset` each uploaded
whole; `train`: `adjs = [adj.to(device) for adj in adjs]` (each
`EdgeIndex` moves its `edge_index` (2 x E int64) and `e_id` (E int64)),
`model(x[n_id], adjs)` (per layer `x_target = x[:size[1]]`, the
conv, `relu`, `dropout`; `log_softmax`) and `y[n_id[:batch_size]]` (a CPU index tensor
used on a CUDA tensor: the index is copied to the device, then
`index_select` gathers), `optimizer.zero_grad()` (set_to_none);
`SAGE.inference`: per layer, per batch `x_all[n_id].to(device)` -- the
first layer gathers from the device features, the later layer indexes the
concatenated CPU output of the previous layer and uploads the batch --
`xs.append(x.cpu())`); torch_geometric/nn/conv/sage_conv.py (mean
aggregation: `x_j = x.index_select(0, edge_index[0])` (E x F), scatter
mean into the targets (with a count tensor), `lin_l` on the aggregate,
`lin_r` on the target rows); torch/optim/adam.py (`exp_avg` /
`exp_avg_sq` by `zeros_like` at the first step; `step` on the host)).
Sampled sizes come from a fixed pseudo-random draw. No markers, driver by
cuGetProcAddress (libcudart).

Truth: the features (86,703,616 B) and the labels (1,354,744 B) dataset,
two whole_dataset_upload findings; parameters weights; Adam state
optimizer; `.grad`s gradients; per-batch `edge_index` / `e_id` uploads and
the second inference layer's feature uploads prefetch (depth 1: one
batch's graphs at a time); the uploaded index tensors other; gathers,
messages, aggregates, outputs and their gradients activations. 89 steps.
Coincidences: a full batch's label index upload (1,024 int64, 8,192 B,
`other`) is its gathered label batch's size (`activations`); layer 1's
`lin_l` and `lin_r` weights are one size (131,072 B), as are their
gradients and Adam states (`weights`, `gradients`, `optimizer`)."""
import random

import vtc

job = vtc.Job("pyg_sage_neighbor", "getproc", __doc__)
NODES, FEAT, HID, CLASSES = 169343, 128, 256, 40
TRAIN_NODES, BATCH, INF_BATCH = 90941, 1024, 4096
SIZES = [15, 10]
AVG_DEG = 13.7


def alloc(n, cat):
    return job.mem_alloc(0, n, cat)


def free(*ptrs):
    job.mem_free(0, *ptrs)


def upload(n, cat):
    return job.upload(0, n, cat)


PARAMS = [HID * FEAT * 4, HID * 4, HID * FEAT * 4,          # conv1: lin_l w, b; lin_r w
          CLASSES * HID * 4, CLASSES * 4, CLASSES * HID * 4]  # conv2


def sample(rng, batch, sizes):
    """Node counts per hop (targets first) and edge counts per adj, the
    outermost hop first, as NeighborSampler yields them."""
    counts = [batch]
    edges = []
    for k in sizes:
        prev = counts[-1]
        e = int(prev * min(k, AVG_DEG) * rng.uniform(0.7, 0.9))
        new = int(e * rng.uniform(0.55, 0.8))
        edges.append(e)
        counts.append(prev + new)
    adjs = list(zip(reversed(edges), reversed(counts[:-1]), reversed(counts[1:])))
    return counts[-1], adjs                     # n_id size, [(E, n_dst, n_src)]


def sage_conv(x_src_rows, e, n_dst, fin, fout, train):
    """x_j gather, scatter-mean aggregate, lin_l(aggr) + lin_r(x_dst)."""
    x_j = alloc(e * fin * 4, "activations")
    aggr = alloc(n_dst * fin * 4, "activations")
    cnt = alloc(n_dst * 4, "activations")
    free(x_j)
    mean = alloc(n_dst * fin * 4, "activations")
    free(aggr, cnt)
    left = alloc(n_dst * fout * 4, "activations")
    right = alloc(n_dst * fout * 4, "activations")
    out = alloc(n_dst * fout * 4, "activations")
    free(right, left)
    saved = [mean] if train else []
    if not train:
        free(mean)
    return out, saved


def train_epoch(rng, params, opt):
    steps, first = 0, None
    n_batches = (TRAIN_NODES + BATCH - 1) // BATCH
    for b in range(n_batches):
        bs = min(BATCH, TRAIN_NODES - b * BATCH)
        n_nodes, adjs = sample(rng, bs, SIZES)
        dev_adjs = []
        for e, _nd, _ns in adjs:                                # adj.to(device)
            dev_adjs.append(upload(2 * e * 8, "prefetch"))      # edge_index
            dev_adjs.append(upload(e * 8, "prefetch"))          # e_id
        if first is None:
            first = sum(3 * e * 8 for e, _nd, _ns in adjs)
        idx = upload(n_nodes * 8, "other")                      # n_id.to(x.device)
        xb = alloc(n_nodes * FEAT * 4, "activations")           # x[n_id]
        free(idx)
        saved = []
        h, s1 = sage_conv(xb, adjs[0][0], adjs[0][1], FEAT, HID, True)
        r = alloc(adjs[0][1] * HID * 4, "activations")          # relu
        drop = alloc(adjs[0][1] * HID * 4, "activations")       # dropout output
        mask = alloc(adjs[0][1] * HID, "activations")           # dropout mask
        saved += s1 + [h, r, mask]
        out, s2 = sage_conv(drop, adjs[1][0], adjs[1][1], HID, CLASSES, True)
        lsm = alloc(bs * CLASSES * 4, "activations")            # log_softmax
        saved += s2 + [drop, out]
        yidx = upload(bs * 8, "other")                          # n_id[:batch_size]
        yb = alloc(bs * 8, "activations")                       # y[...]
        free(yidx)
        loss = alloc(4, "activations")
        grads = []
        g_out = alloc(bs * CLASSES * 4, "activations")
        for n in reversed(PARAMS[3:]):
            grads.append(alloc(n, "gradients"))
        g_h = alloc(adjs[0][1] * HID * 4, "activations")
        free(g_out)
        for n in reversed(PARAMS[:3]):
            grads.append(alloc(n, "gradients"))
        free(g_h, *saved, lsm, yb, xb)
        opt.step(params)
        job.dtoh(0, loss, 4)
        free(loss, *dev_adjs)
        free(*grads)                                            # zero_grad()
        steps += 1
    return steps, first


class Adam:
    def __init__(self):
        self.state = None

    def step(self, params):
        if self.state is None:
            self.state = []
            for n in PARAMS:
                for _ in ("exp_avg", "exp_avg_sq"):
                    p = alloc(n, "optimizer")
                    job.zero(0, p, n)
                    self.state.append(p)


def inference(rng):
    """SAGE.inference(x_all): layer by layer over every node."""
    for layer, (fin, fout) in enumerate(((FEAT, HID), (HID, CLASSES))):
        for b in range((NODES + INF_BATCH - 1) // INF_BATCH):
            bs = min(INF_BATCH, NODES - b * INF_BATCH)
            n_nodes, adjs = sample(rng, bs, [1000])
            e = adjs[0][0]
            ei = upload(2 * e * 8, "prefetch")
            eid = upload(e * 8, "prefetch")
            if layer == 0:
                idx = upload(n_nodes * 8, "other")
                xb = alloc(n_nodes * fin * 4, "activations")     # x_all[n_id] on the device
                free(idx)
            else:
                xb = upload(n_nodes * fin * 4, "prefetch")      # x_all[n_id].to(device)
            out, _ = sage_conv(xb, e, bs, fin, fout, False)
            if layer == 0:
                r = alloc(bs * fout * 4, "activations")
                free(out)
                out = r
            job.dtoh(0, out, bs * fout * 4)                     # xs.append(x.cpu())
            free(out, xb, ei, eid)


def main():
    job.start(markers_default=False)
    job.open_devices(1)
    rng = random.Random(11)
    params = [upload(n, "weights") for n in PARAMS]            # model.to(device)
    x = upload(NODES * FEAT * 4, "dataset")                     # data.x.to(device)
    y = upload(NODES * 8, "dataset")                            # data.y.squeeze().to(device)
    opt = Adam()
    steps, first = train_epoch(rng, params, opt)
    inference(rng)
    free(*opt.state, *params, x, y)
    job.line("finding whole_dataset_upload 0 %d" % (NODES * FEAT * 4))
    job.line("finding whole_dataset_upload 0 %d" % (NODES * 8))
    job.line("finding prefetch_depth 0 1 %d" % first)
    job.line("steps 0 %d" % steps)
    job.finish()


main()
