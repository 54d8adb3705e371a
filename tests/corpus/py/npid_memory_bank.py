#!/usr/bin/env python3
"""Unsupervised feature learning by non-parametric instance discrimination
(NPID, lemniscate.pytorch `cifar.py`): a CIFAR ResNet-18 with a 128-d
normalised head, an `NCEAverage` memory bank of one 128-d vector per
training image (50,000 x 128 float32), NCE with K=4,096 noise samples,
SGD momentum; 2 epochs of 391 batches of 128, each followed by the
weighted kNN evaluation (k=200) against the memory bank. PyTorch with
PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync (cuMemAllocAsync /
cuMemFreeAsync per tensor).

What is modelled (sources read: lemniscate.pytorch cifar.py (the model
and `NCEAverage` built, then `net.cuda()`, `lemniscate.cuda()`;
`optim.SGD(momentum=0.9, weight_decay=5e-4)`; per batch `inputs.cuda()`,
`targets.cuda()`, `indexes.cuda()`, `zero_grad()`, `net`, `lemniscate`,
`criterion`, `backward`, `step`; `kNN` after every epoch), lib/
NCEAverage.py (`__init__`: `AliasMethod(torch.ones(nLem))` and
`multinomial.cuda()` BEFORE the network is moved, the `params` buffer
`[K, T, -1, momentum]` and the `memory` buffer `torch.rand(outputSize,
inputSize).mul_(2 * stdv).add_(-stdv)` made on the host and uploaded by
`lemniscate.cuda()`; `forward`: `draw` of batch x (K + 1) indices;
`NCEFunction.forward`: the positives copied into column 0,
`memory.index_select(0, idx.view(-1))` (B x (K+1) x 128, kept for
backward), `bmm`, `div_`, `exp_`, the normalisation constant Z set once
from `out.mean()` and printed; `backward`: `bmm` for the input gradient
and the memory update in place (positive rows mixed with the features,
re-normalised, `memory.index_copy_(0, y, updated_weight)`)),
lib/alias_multinomial.py (`prob` float and `alias` int64 tables moved by
`cuda()`; `draw`: `torch.cuda.LongTensor(N).random_`, two
`index_select`s, `bernoulli`, `mul`, `add`), lib/NCECriterion.py
(`select`, `add`, `div`, `narrow(...).add`, `clone().fill_`, `log_`,
sums), test.py `kNN` (`trainFeatures = lemniscate.memory.t()`, a view;
`trainLabels = torch.LongTensor(trainloader.dataset.train_labels).cuda()`
uploaded whole at every call; per test batch the inputs and targets
uploaded, `mm` against the whole bank, `topk`, `gather`,
`retrieval_one_hot = torch.FloatTensor(batchSize * K, C).zero_().cuda()`
made on the host and uploaded, `clone().div_().exp_()`, `mul`, `sum`,
`sort`, `eq`, running top-1 / top-5 sums on the device read by the
progress print); torch/optim/sgd.py foreach (weight decay temporaries,
`momentum_buffer` = `clone(grad)` at the first step)). Markers on (one
per step), driver by dlsym.

Truth: parameters and BN buffers weights; momentum buffers optimizer;
`.grad`s gradients; the memory bank (25,600,000 B) `other` although it is
uploaded whole from the host (a running state of per-image features,
rewritten in place every step, as a MoCo queue; no whole_dataset_upload
for it); the alias tables and `params` other, as are the noise indices
and every `draw` temporary; the training labels uploaded whole by each
kNN call dataset, ONE whole_dataset_upload finding per call (400,000 B,
twice); training batches (images, targets, indexes) and test batches
(images, targets) prefetch (depth 1, uploaded synchronously); gathered
bank rows, NCE outputs, loss temporaries, kNN scratch (the uploaded
zeros of `retrieval_one_hot` included: scratch filled on the host, not a
batch) and forward / backward tensors activations. 782 steps.
Coincidences: the `alias` table (50,000 int64) and the uploaded training
labels are one size (400,000 B: other vs dataset); a batch's `targets`
and `indexes` are one size (1,024 B); the NCE output (128 x 4,097
float32, 2,097,664 B, activations) is the size of `draw`'s gathered
`prob` values and of its `bernoulli` draw (other)."""
import vtc

job = vtc.Job("npid_memory_bank", "dlsym", __doc__)
NDATA, DIM, K, B, EPOCHS = 50000, 128, 4096, 128, 2
TEST_N, TEST_B, KNN, C = 10000, 100, 200, 10
STEPS_PER_EPOCH = (NDATA + B - 1) // B


def alloc(n, cat):
    return job.mem_alloc_async(0, n, cat)


def free(*ptrs):
    for p in ptrs:
        job.mem_free_async(0, p)


def upload(n, cat):
    p = alloc(n, cat)
    job.htod(0, p, n)
    return p


def resnet18_cifar():
    """(param bytes, kind) in module order, BN buffers after each BN."""
    out = [(64 * 3 * 9 * 4, "w")] + [(64 * 4, "w")] * 2 + [(64 * 4, "b")] * 2 + [(8, "b")]
    cin = 64
    for cout, stride in ((64, 1), (128, 2), (256, 2), (512, 2)):
        for blk in range(2):
            c1 = cin if blk == 0 else cout
            out += [(cout * c1 * 9 * 4, "w")] + [(cout * 4, "w")] * 2 + [(cout * 4, "b")] * 2 + [(8, "b")]
            out += [(cout * cout * 9 * 4, "w")] + [(cout * 4, "w")] * 2 + [(cout * 4, "b")] * 2 + [(8, "b")]
            if blk == 0 and (stride != 1 or cin != cout):
                out += [(cout * cin * 4, "w")] + [(cout * 4, "w")] * 2 + [(cout * 4, "b")] * 2 + [(8, "b")]
        cin = cout
    out += [(DIM * 512 * 4, "w"), (DIM * 4, "w")]        # linear to low_dim
    return out


# saved forward tensors per sample (floats), coarsely: stem, 3 per stage, head
ACT = [65536] * 2 + [65536] * 3 + [32768] * 3 + [16384] * 3 + [8192] * 3 + [512, DIM, DIM]


def net_forward(b, train):
    saved = []
    for n in ACT:
        t = alloc(b * n * 4, "activations")
        if train:
            saved.append(t)
        else:
            if saved:
                free(saved.pop())
            saved.append(t)
    feat = saved.pop()
    if not train:
        free(*saved)
        saved = []
    return feat, saved


class AliasMethod:
    def __init__(self):
        self.prob = upload(NDATA * 4, "other")          # multinomial.cuda()
        self.alias = upload(NDATA * 8, "other")

    def draw(self, n):
        kk = alloc(n * 8, "other")                      # zeros(N, long).random_(0, K)
        prob = alloc(n * 4, "other")                    # prob.index_select(0, kk)
        alias = alloc(n * 8, "other")
        b = alloc(n * 4, "other")                       # bernoulli(prob)
        bl = alloc(n * 8, "other")
        oq = alloc(n * 8, "other")                      # kk.mul(b.long())
        free(bl)
        nb = alloc(n * 4, "other")                      # 1 - b
        nbl = alloc(n * 8, "other")
        oj = alloc(n * 8, "other")                      # alias.mul((1-b).long())
        free(nbl, nb)
        idx = alloc(n * 8, "other")                     # oq + oj
        free(oj, oq, b, alias, prob, kk)
        return idx


class NCEAverage:
    def __init__(self, multinomial):
        self.multinomial = multinomial
        self.params = upload(4 * 4, "other")            # register_buffer('params', [K, T, -1, m])
        self.memory = upload(NDATA * DIM * 4, "other")  # register_buffer('memory')
        self.z = None

    def forward(self, feat, indexes):
        idx = self.multinomial.draw(B * (K + 1))
        job.dtod(0, idx, indexes, B * 8)                # idx.select(1, 0).copy_(y)
        weight = alloc(B * (K + 1) * DIM * 4, "activations")   # index_select(memory)
        out = alloc(B * (K + 1) * 4, "activations")     # bmm, div_, exp_
        if self.z is None:
            mean = alloc(4, "activations")
            job.dtoh(0, mean, 4)                        # params[2] = out.mean() * n; .item()
            free(mean)
            self.z = True
        return idx, weight, out

    def backward(self, feat, indexes, weight):
        g_in = alloc(B * DIM * 4, "activations")        # bmm(gradOutput, weight)
        mixed = alloc(B * DIM * 4, "activations")       # torch.mul(x, 1 - momentum)
        sq = alloc(B * DIM * 4, "activations")          # pow(2)
        s = alloc(B * 4, "activations")
        free(sq)
        nrm = alloc(B * 4, "activations")               # pow(0.5)
        free(s)
        upd = alloc(B * DIM * 4, "activations")         # weight_pos.div(w_norm)
        free(nrm, mixed)
        job.dtod(0, self.memory, upd, B * DIM * 4)      # memory.index_copy_(0, y, upd)
        free(upd)
        return g_in


def nce_criterion(out):
    pmt = alloc(B * 4, "activations")                   # Pnt.add(K * Pns + eps)
    lnpmt = alloc(B * 4, "activations")                 # div, log_
    pon_div = alloc(B * K * 4, "activations")           # narrow(1, 1, K).add(...)
    pon = alloc(B * K * 4, "activations")               # clone().fill_
    lnpon = alloc(B * K * 4, "activations")             # div, log_
    free(pon)
    s1 = alloc(4, "activations")
    s2 = alloc(4, "activations")
    loss = alloc(4, "activations")
    free(s1, s2)
    return loss, [pmt, lnpmt, pon_div, lnpon]


class SGD:
    def __init__(self, params):
        self.params = params
        self.bufs = None

    def step(self, grads):
        wd = [alloc(n, "activations") for _p, n in self.params]   # _foreach_add(grads, params)
        if self.bufs is None:
            self.bufs = [alloc(n, "optimizer") for _p, n in self.params]
            for (_p, n), buf, g in zip(self.params, self.bufs, wd):
                job.dtod(0, buf, g, n)                  # clone(grad)
        free(*wd)


def train_epoch(params, lemniscate, opt, s, grads):
    batch = loss = None
    for _ in range(STEPS_PER_EPOCH):
        job.step(s)
        if batch:
            free(*batch)                                # the loop rebinds inputs, targets, indexes
        inputs = upload(B * 3 * 32 * 32 * 4, "prefetch")
        targets = upload(B * 8, "prefetch")
        indexes = upload(B * 8, "prefetch")
        batch = (inputs, targets, indexes)
        free(*grads)                                    # optimizer.zero_grad()
        feat, saved = net_forward(B, True)
        idx, weight, out = lemniscate.forward(feat, indexes)
        if loss:
            free(loss)
        loss, crit = nce_criterion(out)
        g_out = alloc(B * (K + 1) * 4, "activations")
        free(*crit)
        g_in = lemniscate.backward(feat, indexes, weight)
        free(weight, out, g_out, idx)
        grads = [alloc(n, "gradients") for _p, n in reversed(params)]
        for t in reversed(saved):
            free(t)
        free(g_in, feat)
        opt.step(grads)
        job.dtoh(0, loss, 4)                            # train_loss.update(loss.data[0])
        s += 1
    free(*batch, loss)
    return s, grads


def knn(lemniscate):
    """test.py kNN(epoch, net, lemniscate, trainloader, testloader, 200,
    nce_t, 0): the bank itself is the train-feature matrix (a view)."""
    labels = upload(NDATA * 8, "dataset")               # LongTensor(train_labels).cuda()
    cmax = alloc(8, "activations")                      # trainLabels.max() + 1
    job.dtoh(0, cmax, 8)
    free(cmax)
    top1 = top5 = None
    for _ in range(TEST_N // TEST_B):
        inputs = upload(TEST_B * 3 * 32 * 32 * 4, "prefetch")   # inputs.cuda()
        targets = upload(TEST_B * 8, "prefetch")                 # targets.cuda()
        feat, _ = net_forward(TEST_B, False)
        dist = alloc(TEST_B * NDATA * 4, "activations")  # mm(features, trainFeatures)
        yd = alloc(TEST_B * KNN * 4, "activations")      # topk
        yi = alloc(TEST_B * KNN * 8, "activations")
        free(dist)
        retrieval = alloc(TEST_B * KNN * 8, "activations")       # gather(candidates, 1, yi)
        one_hot = upload(TEST_B * KNN * C * 4, "activations")    # FloatTensor(...).zero_().cuda()
        ydt = alloc(TEST_B * KNN * 4, "activations")    # yd.clone().div_().exp_()
        prod = alloc(TEST_B * KNN * C * 4, "activations")
        probs = alloc(TEST_B * C * 4, "activations")    # torch.sum(..., 1)
        free(prod)
        sv = alloc(TEST_B * C * 4, "activations")       # probs.sort(1, True)
        si = alloc(TEST_B * C * 8, "activations")
        correct = alloc(TEST_B * C, "activations")      # eq
        for k in (0, 1):                                # top1 / top5 + narrow(...).sum()
            part = alloc(8, "activations")
            acc = alloc(8, "activations")
            old = top1 if k == 0 else top5
            free(part, *([old] if old else []))
            if k == 0:
                top1 = acc
            else:
                top5 = acc
        job.dtoh(0, top1, 8)                            # the progress print
        job.dtoh(0, top5, 8)
        free(correct, sv, si, probs, ydt, one_hot, retrieval, yd, yi, feat, inputs, targets)
    free(top1, top5, labels)


def main():
    job.start(markers_default=True)
    job.open_devices(1)
    multinomial = AliasMethod()                         # NCEAverage.__init__: multinomial.cuda()
    params = []
    buffers = []
    for n, kind in resnet18_cifar():                    # net.cuda()
        p = upload(n, "weights")
        (params if kind == "w" else buffers).append((p, n))
    lemniscate = NCEAverage(multinomial)                # lemniscate.cuda()
    opt = SGD(params)
    s = 0
    grads = []
    for _epoch in range(EPOCHS):
        s, grads = train_epoch(params, lemniscate, opt, s, grads)
        knn(lemniscate)
    free(*grads)
    free(*opt.bufs, *[p for p, _n in params + buffers])
    free(lemniscate.memory, lemniscate.params, lemniscate.multinomial.prob,
         lemniscate.multinomial.alias)
    for _ in range(EPOCHS):
        job.line("finding whole_dataset_upload 0 %d" % (NDATA * 8))
    job.line("finding prefetch_depth 0 1 %d" % (B * 3 * 32 * 32 * 4 + 2 * B * 8))
    job.line("steps 0 %d" % s)
    job.finish()


main()
