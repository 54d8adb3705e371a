#!/usr/bin/env python3
"""A DeepSpeech2 speech recogniser trained with CTC on length-bucketed
batches (deepspeech.pytorch's model: two 2-D convolutions over 161-bin
spectrograms wrapped in `MaskConv`, three bidirectional GRU layers of 384
units whose two directions are summed, a sequence-wise BatchNorm and a
29-character Linear), SGD with Nesterov momentum 0.9 and weight decay,
`clip_grad_norm_(400)`, under PYTORCH_NO_CUDA_MEMORY_CACHING=1 (one
cudaMalloc / cudaFree per tensor). The sampler groups utterances into four
length buckets and the collate pads every batch to its bucket's boundary
(so cuDNN sees a few shapes), the batch size set by a frame budget: four
batch shapes recur in a shuffled order, 64 iterations.

What is modelled (sources: deepspeech.pytorch model.py `MaskConv.forward`
(after each module of the conv stack a `torch.BoolTensor(x.size())`
filled on the host and `.cuda()`ed, then `x.masked_fill(mask, 0)`),
`BatchRNN` (`SequenceWise(BatchNorm1d)` from the second layer,
`pack_padded_sequence`, the GRU, `pad_packed_sequence`, the two
directions summed), `DeepSpeech.forward` (the conv output viewed as T x B
x 1312, the final `SequenceWise(BatchNorm1d + Linear)`); torchaudio
examples' `BucketizeBatchSampler` (buckets by length, a batch from one
bucket, the batch size bounded by `max_token_limit`); torch/nn/modules/
rnn.py `RNNBase._apply` (after `model.cuda()` moved each `weight_ih_l*`,
`weight_hh_l*`, `bias_*` one by one, `flatten_parameters()`:
`_cudnn_rnn_flatten_weight` copies them into ONE flat buffer per GRU and
the parameters become views of it, their own storages freed); aten
cudnn/RNN.cpp (`_cudnn_rnn`: a workspace for the call and a reserve
buffer saved for the backward; `_cudnn_rnn_backward`: `dw` one flat
buffer per GRU, its per-parameter views stolen by AccumulateGrad as the
`.grad`s); aten native/cuda/LossCTC.cu (`ctc_loss_gpu_template`: the
lengths and `tg_batch_offsets` built on the host and copied to the
device, `log_alpha` B x T x (2S+1) kept for the backward;
`ctc_loss_backward_gpu_template`: the same host tables uploaded again,
`log_beta` and the gradient); torch/optim/sgd.py `_multi_tensor_sgd`
(`torch._foreach_add(grads, params, alpha=weight_decay)`: new tensors;
`momentum_buffer = torch.clone(grad)` at the first step; Nesterov in
place); torch/nn/utils/clip_grad.py (`_foreach_norm` per parameter,
`stack`, the total norm, `clip_coef`, `_foreach_mul_`);
`optimizer.zero_grad()` (set_to_none)). No markers, driver by dlsym.

Truth: the convolution, BatchNorm and Linear parameters and BatchNorm
buffers, the GRU parameters as uploaded and the three flat buffers
weights; `.grad`s and the three flat `dw` buffers gradients; SGD
momentum buffers optimizer; the spectrogram, padded targets and the two
length vectors uploaded per batch prefetch (depth 1, four sizes
recurring); MaskConv's uploaded masks and CTC's uploaded length / offset
tables other; conv / RNN / CTC tensors, cuDNN workspaces and reserves,
weight-decayed gradients and clipping norms activations. No dataset. 64
steps. Coincidences: the 18 x 32 int64 targets of the second bucket
(4,608 B, prefetch) are each GRU bias as uploaded (3 x 384 floats,
weights) and its momentum buffer (optimizer); a bucket's input and target
lengths (B int64, prefetch) are CTC's uploaded length tables and
`tg_batch_offsets` (other), e.g. 296 B for the 37-utterance bucket; a
second or third layer GRU's `weight_ih` is its `weight_hh` (1,769,472 B)."""
import random

import vtc

job = vtc.Job("deepspeech_ctc_length_buckets", "dlsym", __doc__)
F32, I64 = 4, 8
FREQ, C1, H, CHARS = 161, 32, 384, 29
F2 = 41                                   # 161 -> 81 -> 41 bins after the two convs
RNN_IN = [C1 * F2, H, H]
# (padded spectrogram frames, batch size, padded target length): frame budget ~8000
BUCKETS = [(212, 37, 24), (436, 18, 32), (816, 9, 96), (1490, 5, 160)]
ITERS = 64


def alloc(n, cat="activations"):
    return job.mem_alloc(0, n, cat)


def free(*ptrs):
    job.mem_free(0, *ptrs)


def upload(n, cat):
    p = alloc(n, cat)
    job.htod(0, p, n)
    return p


class Dense:
    """Conv / BatchNorm / Linear parameters and buffers, one tensor each."""

    def __init__(self, params, buffers=()):
        self.sizes = list(params)
        self.buf_sizes = list(buffers)
        self.ptrs, self.bufs, self.grads = [], [], []

    def to(self):
        self.ptrs = [upload(n, "weights") for n in self.sizes]
        self.bufs = [upload(n, "weights") for n in self.buf_sizes]


def bn(c):
    return Dense([c * F32, c * F32], [c * F32, c * F32, I64])   # running mean / var, num_batches


class GRU:
    """nn.GRU(bidirectional=True): per direction w_ih, w_hh, b_ih, b_hh."""

    def __init__(self, fin):
        g = 3 * H
        self.sizes = [g * fin * F32, g * H * F32, g * F32, g * F32] * 2
        self.flat_size = sum(self.sizes)
        self.flat = None
        self.dw = None

    def to(self):
        ptrs = [upload(n, "weights") for n in self.sizes]   # _apply: each parameter moved
        self.flat = alloc(self.flat_size, "weights")        # flatten_parameters()
        off = 0
        for p, n in zip(ptrs, self.sizes):
            job.dtod(0, self.flat + off, p, n)
            off += n
        free(*ptrs)                                         # the parameters are views now

    def forward(self, T, B, saved):
        packed = alloc(T * B * self.sizes[0] // (3 * H))    # pack_padded_sequence data
        ws = alloc(T * B * 3 * H * F32)                     # cuDNN workspace
        reserve = alloc(2 * T * B * 4 * H * F32)            # reserve space (training)
        out = alloc(T * B * 2 * H * F32)                    # packed output
        free(ws)
        padded = alloc(T * B * 2 * H * F32)                 # pad_packed_sequence
        summed = alloc(T * B * H * F32)                     # .view(T, B, 2, -1).sum(2)
        saved += [packed, reserve, out]
        free(padded)
        return summed

    def backward(self, T, B):
        ws = alloc(T * B * 3 * H * F32)
        dx = alloc(T * B * self.sizes[0] // (3 * H))        # backward_input
        if self.dw is None:
            self.dw = alloc(self.flat_size, "gradients")    # backward_weight: dw, viewed as .grads
        free(ws)
        return dx


def forward(conv, rnns, head, T, B, Tp):
    """Returns (log_probs, saved)."""
    saved = []
    # MaskConv over Conv2d, BatchNorm2d, Hardtanh, Conv2d, BatchNorm2d, Hardtanh: each
    # module's input is kept by autograd (Hardtanh works in place on it), then a host
    # mask of the output's shape is uploaded and masked_fill makes a new tensor
    x = None
    for i, f in enumerate((81, 81, 81, F2, F2, F2)):
        n = B * C1 * f * Tp
        y = x if i % 3 == 2 else alloc(n * F32)
        if i % 3 == 1:
            saved += [alloc(C1 * F32), alloc(C1 * F32)]     # save_mean, save_invstd
        mask = upload(n, "other")                           # BoolTensor(x.size()).cuda()
        z = alloc(n * F32)                                  # x.masked_fill(mask, 0)
        saved.append(mask)                                  # kept for masked_fill's backward
        if y is not x:
            free(y)
        if i < 5:
            saved.append(z)
        x = z
    seq = alloc(Tp * B * RNN_IN[0] * F32)                   # view + transpose + contiguous
    free(x)
    saved.append(seq)
    x = seq
    for j, rnn in enumerate(rnns):
        if j > 0:
            normed = alloc(Tp * B * H * F32)                # SequenceWise(BatchNorm1d)
            saved.append(normed)
            x = normed
        x = rnn.forward(Tp, B, saved)
        saved.append(x)
    normed = alloc(Tp * B * H * F32)
    logits = alloc(Tp * B * CHARS * F32)                    # Linear(H, 29, bias=False)
    lp = alloc(Tp * B * CHARS * F32)                        # log_softmax(-1)
    saved += [normed, logits, lp]
    return lp, saved


def ctc(B, Tp, S, saved):
    """F.ctc_loss on the device."""
    tables = [upload(B * I64, "other"), upload(B * I64, "other"),   # input / target lengths
              upload(B * I64, "other")]                             # tg_batch_offsets
    log_alpha = alloc(B * Tp * (2 * S + 1) * F32)
    nll = alloc(B * F32)
    loss = alloc(F32)                                       # reduction="mean"
    free(*tables)
    saved += [log_alpha, nll]
    return loss


def ctc_backward(B, Tp, S):
    tables = [upload(B * I64, "other"), upload(B * I64, "other"), upload(B * I64, "other")]
    log_beta = alloc(B * Tp * (2 * S + 1) * F32)
    grad = alloc(Tp * B * CHARS * F32)
    free(log_beta, *tables)
    return grad


def main():
    job.start(markers_default=False)
    job.open_devices(1)
    rng = random.Random(7)
    conv = [Dense([C1 * 41 * 11 * F32, C1 * F32]), bn(C1),
            Dense([C1 * C1 * 21 * 11 * F32, C1 * F32]), bn(C1)]
    rnns = [GRU(n) for n in RNN_IN]
    norms = [bn(H) for _ in range(len(rnns) - 1)]
    head = [bn(H), Dense([CHARS * H * F32])]
    for m in conv:                                          # model.cuda()
        m.to()
    for j, rnn in enumerate(rnns):
        if j > 0:
            norms[j - 1].to()
        rnn.to()
    for m in head:
        m.to()
    dense = conv + norms + head
    rnn_param_sizes = [n for r in rnns for n in r.sizes]
    momentum = None
    first = None
    for it in range(ITERS):
        T, B, S = BUCKETS[rng.randrange(len(BUCKETS))]
        Tp = (T - 1) // 2 + 1
        # inputs.to(device), targets, input_percentages -> sizes, target lengths
        spec = upload(B * FREQ * T * F32, "prefetch")
        targets = upload(B * S * I64, "prefetch")
        in_len = upload(B * I64, "prefetch")
        tg_len = upload(B * I64, "prefetch")
        if first is None:
            first = B * FREQ * T * F32 + B * S * I64 + 2 * B * I64
        lp, saved = forward(conv, rnns, head, T, B, Tp)
        loss = ctc(B, Tp, S, saved)
        job.dtoh(0, loss, F32)                              # loss.item() for inf checks
        # backward
        g = ctc_backward(B, Tp, S)
        for m in reversed(head):
            m.grads = [alloc(n, "gradients") for n in m.sizes]
        gx = alloc(Tp * B * H * F32)
        free(g)
        g = gx
        for j in reversed(range(len(rnns))):
            gd = alloc(Tp * B * 2 * H * F32)                # sum's backward: expand
            free(g)
            g = rnns[j].backward(Tp, B)
            free(gd)
            if j > 0:
                norms[j - 1].grads = [alloc(n, "gradients") for n in norms[j - 1].sizes]
                gb = alloc(Tp * B * H * F32)
                free(g)
                g = gb
        for m in reversed(conv):
            m.grads = [alloc(n, "gradients") for n in m.sizes]
            gc = alloc(B * C1 * 81 * Tp * F32)
            free(g)
            g = gc
        free(g, loss, *saved)
        # clip_grad_norm_(parameters, 400)
        n_params = sum(len(m.sizes) for m in dense) + len(rnn_param_sizes)
        norms_ = [alloc(F32) for _ in range(n_params)]
        stacked = alloc(n_params * F32)
        total, coef, clamped = alloc(F32), alloc(F32), alloc(F32)
        free(*norms_, stacked, total, coef)
        # optimizer.step(): _multi_tensor_sgd
        sizes = [n for m in dense for n in m.sizes] + rnn_param_sizes
        decayed = [alloc(n) for n in sizes]                 # _foreach_add(grads, params, alpha=wd)
        if momentum is None:
            momentum = [alloc(n, "optimizer") for n in sizes]   # clone(grad)
        free(*decayed, clamped)
        # optimizer.zero_grad()
        for m in dense:
            free(*m.grads)
            m.grads = []
        for r in rnns:
            free(r.dw)
            r.dw = None
        free(spec, targets, in_len, tg_len)
    for m in dense:
        free(*m.ptrs, *m.bufs)
    free(*[r.flat for r in rnns], *momentum)
    job.line("no_finding whole_dataset_upload")
    job.line("finding prefetch_depth 0 1 %d" % first)
    job.line("steps 0 %d" % ITERS)
    job.finish()


main()
