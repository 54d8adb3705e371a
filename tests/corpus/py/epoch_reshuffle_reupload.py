#!/usr/bin/env python3
"""An AWD-LSTM sentence classifier (the salesforce awd-lstm-lm RNNModel
with a linear head) whose training set is shuffled on the host and uploaded
WHOLE again at the start of every epoch, with PYTORCH_NO_CUDA_MEMORY_CACHING=1
(one cudaMalloc per tensor).

What is modelled (sources read: a classification main.py built on
awd-lstm-lm: `batchify(dataset, batch_size, args)` (`perm =
torch.randperm(n)`, `data = data[perm]`, `target = target[perm]` on the
host, then `data.cuda()`, `target.cuda()`), `get_batch` (`data[sidx:eidx].t()`,
`target[sidx:eidx]`: views of the device arrays), `train()` (calls batchify
on `corpus.train` at its start, so each epoch's arrays are locals freed when
it returns), `evaluate`, `Network.forward` (`torch.arange(batch_len).type(
type(sents.data))`: built on the host and uploaded, `torch.gt(sents, 0)`,
`index_select`); awd-lstm-lm embed_regularize.py `embedded_dropout` (a
V x 1 Bernoulli mask expanded and divided into a full V x D tensor,
`mask * embed.weight` another); weight_drop.py `WeightDrop` (`weight_hh_l0`
re-registered as `weight_hh_l0_raw`, dropped into a new tensor every
training forward); locked_dropout.py `LockedDropout`; torch/nn/modules/rnn.py
(weights not in one contiguous chunk: cuDNN copies them into a flat buffer
each call); torch/optim/adam.py (weight decay: `grad.add(param)` a new
tensor; `exp_avg`/`exp_avg_sq` at the first step); torch/nn/utils/clip_grad.py
`clip_grad_norm_`):
  - `model.cuda()`: every parameter uploaded (the embedding filled from the
    host before);
  - `batchify(corpus.valid)` and `batchify(corpus.test)` once: each
    shuffled on the host and uploaded whole (texts int64 N x 64, targets);
  - 3 epochs; each `train()` starts with `batchify(corpus.train)`: the
    reshuffled training texts and targets uploaded whole into NEW arrays,
    freed when `train()` returns (before the next epoch's upload);
    per step `get_batch` slices views, the embedding makes the transposed
    ids contiguous (a copy), embedded dropout, locked dropout, per LSTM
    layer the dropped hidden-to-hidden weight and its mask, cuDNN's flat
    weight copy, output, reserve space and final states; the head's
    `arange` upload, masks, index_select, logits; AR and TAR terms;
    backward (`.grad`s made at the first backward and kept: `zero_grad()`
    zeroes them), clip_grad_norm_, Adam with weight decay;
  - `evaluate(val_data)` after each epoch (model.eval(): no dropout, still
    the flat weight copy; predictions and targets read back), and once on
    the test set at the end.
No markers, driver by cuGetProcAddress (libcudart).

Truth: every uploaded text and target array dataset. Repeated uploads: ONE
whole_dataset_upload FINDING PER UPLOAD, each epoch's training arrays
counted again (they are new allocations, each filled by one upload of the
whole reshuffled set): 3 x (25,600,000 B + 400,000 B) for training, plus
1,280,000 B and 20,000 B for validation and the same for test: 10
findings. Parameters weights; `.grad`s gradients; Adam state optimizer;
the uploaded `arange` index other (an index array built on the host, as
cupy_kmeans's); everything else made per step activations (the contiguous
id copy, the batch's device-side slices being views). No prefetch (the
batches are sliced on the device); 300 steps (3 epochs of 100).
Coincidences: the training texts (50,000 x 64 int64 = 25,600,000 B) are
exactly the embedding (16,000 x 400 float32), its gradient, its Adam state
and embedded dropout's two full-size tensors; the validation and test
arrays are the same size."""
import vtc

job = vtc.Job("epoch_reshuffle_reupload", "getproc", __doc__)
MIB, KIB = vtc.MIB, vtc.KIB
VOCAB, EMB, HID, LAYERS, CLASSES = 16000, 400, 1150, 3, 2
SENT, N_TRAIN, N_VAL, N_TEST = 64, 50000, 2500, 2500
BATCH, EPOCHS = 500, 3


def parameters():
    """RNNModel + linear in registration order (WeightDrop moves weight_hh
    to the end of its LSTM as weight_hh_l0_raw), float32 bytes."""
    yield "rnn.encoder.weight", VOCAB * EMB * 4
    for layer in range(LAYERS):
        nin = EMB if layer == 0 else HID
        pre = "rnn.rnns.%d.module." % layer
        yield pre + "weight_ih_l0", 4 * HID * nin * 4
        yield pre + "bias_ih_l0", 4 * HID * 4
        yield pre + "bias_hh_l0", 4 * HID * 4
        yield pre + "weight_hh_l0_raw", 4 * HID * HID * 4
    yield "linear.weight", CLASSES * HID * 4
    yield "linear.bias", CLASSES * 4


def empty(n, cat):
    return job.mem_alloc(0, n, cat)


def free(*ptrs):
    for p in ptrs:
        job.mem_free(0, p)


def cuda(nbytes):
    """Tensor.cuda(): a new device tensor and one upload of the host tensor."""
    t = empty(nbytes, "dataset")
    job.htod(0, t, nbytes)
    job.line("finding whole_dataset_upload 0 %d" % nbytes)
    return t


def batchify(n):
    """perm = torch.randperm(n) and data[perm] on the host, then .cuda()."""
    data = cuda(n * SENT * 8)
    target = cuda(n * 8)
    return (data, target), n // BATCH


class Network:
    def __init__(self):
        self.shapes = list(parameters())
        self.params = []
        self.grads = None
        self.training = True

    def cuda(self):
        for _name, n in self.shapes:  # _apply(lambda t: t.cuda())
            p = empty(n, "weights")
            job.htod(0, p, n)
            self.params.append(p)
        return self

    def embedded_dropout(self, saved):
        tokens = BATCH * SENT
        ids = empty(tokens * 8, "activations")  # words.contiguous() for the lookup
        if self.training:
            small = empty(VOCAB * 4, "activations")  # new().resize_((V, 1)).bernoulli_()
            mask = empty(VOCAB * EMB * 4, "activations")  # .expand_as(weight) / (1 - p)
            free(small)
            masked = empty(VOCAB * EMB * 4, "activations")  # mask * embed.weight
            saved.append(mask)
        emb = empty(tokens * EMB * 4, "activations")
        if self.training:
            free(masked)
        saved += [ids, emb]
        return emb

    def lockdrop(self, width, saved):
        if self.training:
            saved.append(empty(BATCH * width * 4, "activations"))  # mask 1 x B x width
            saved.append(empty(BATCH * SENT * width * 4, "activations"))

    def lstm_layer(self, layer, saved):
        nin = EMB if layer == 0 else HID
        if self.training:  # WeightDrop._setweights: F.dropout(raw_w)
            saved.append(empty(4 * HID * HID * 4, "activations"))
            saved.append(empty(4 * HID * HID, "activations"))  # its mask (1 B a value)
        flat = 4 * HID * (nin + HID + 2) * 4  # cuDNN's contiguous weight copy
        saved.append(empty(flat, "activations"))
        saved.append(empty(SENT * BATCH * HID * 4, "activations"))  # output
        saved += [empty(BATCH * HID * 4, "activations") for _ in "hc"]  # hy, cy
        if self.training:
            saved.append(empty(SENT * BATCH * 4 * HID * 4, "activations"))  # reserve space

    def forward(self, hidden):
        saved = []
        self.embedded_dropout(saved)
        self.lockdrop(EMB, saved)
        for layer in range(LAYERS):
            self.lstm_layer(layer, saved)
            self.lockdrop(HID, saved)
        batch_idx = empty(BATCH * 8, "other")  # torch.arange(batch_len).type(cuda Long)
        job.htod(0, batch_idx, BATCH * 8)
        gt = empty(SENT * BATCH, "activations")  # torch.gt(sents, 0)
        as_long = empty(SENT * BATCH * 8, "activations")  # .type(LongTensor)
        seq_idx = empty(BATCH * 8, "activations")  # torch.sum(..., 0) - 1
        free(gt, as_long)
        idx = empty(BATCH * 8, "activations")  # seq_idx * batch_len + batch_idx
        hids = empty(BATCH * HID * 4, "activations")  # index_select
        logits = empty(BATCH * CLASSES * 4, "activations")
        output = empty(BATCH * CLASSES * 4, "activations")  # log_softmax
        saved += [batch_idx, seq_idx, idx, hids, logits]
        return saved, output

    def init_hidden(self):
        """weight.new(1, bsz, nhid).zero_() for h and c of every layer (a fill kernel)."""
        return [empty(BATCH * HID * 4, "activations") for _ in range(2 * LAYERS)]

    def backward(self, saved):
        g = empty(SENT * BATCH * HID * 4, "activations")  # grad of the last output
        if self.grads is None:  # AccumulateGrad at the first backward; kept
            self.grads = [empty(n, "gradients") for _name, n in reversed(self.shapes)]
        ws = empty(64 * MIB, "activations")  # cuDNN backward workspace
        free(ws)
        for t in reversed(saved):
            free(t)
        free(g)


def clip_grad_norm_(model):
    norms = [empty(4, "activations") for _ in model.shapes]  # _foreach_norm
    total = empty(len(model.shapes) * 4, "activations")  # torch.stack
    norm = empty(4, "activations")
    coef = empty(4, "activations")  # max_norm / (total_norm + 1e-6), clamp
    free(*norms)
    free(total, norm, coef)


class Adam:
    """weight_decay > 0 (L2): grad = grad.add(param, alpha=wd), a new tensor."""

    def __init__(self, model):
        self.model = model
        self.state = None

    def step(self):
        decayed = [empty(n, "activations") for _name, n in self.model.shapes]
        if self.state is None:
            self.state = []
            for _name, n in self.model.shapes:
                for _ in "mv":
                    s = empty(n, "optimizer")
                    job.zero(0, s, n)
                    self.state.append(s)
        free(*decayed)


def train(model, opt, step):
    train_data, nbatch = batchify(N_TRAIN)  # every epoch: reshuffled, uploaded whole
    model.training = True
    for _batch in range(nbatch):
        job.step(step)
        hidden = model.init_hidden()  # tbatch, lbatch = get_batch(...): views
        saved, output = model.forward(hidden)
        loss = empty(4, "activations")  # criterion(output, lbatch)
        for _term in ("AR", "TAR"):  # dropped_rnn_h.pow(2).mean(), (h[1:] - h[:-1]).pow(2)
            t = empty(SENT * BATCH * HID * 4, "activations")
            free(t)
        model.backward(saved + [output] + hidden)
        clip_grad_norm_(model)
        opt.step()
        job.dtoh(0, loss, 4)  # total_loss += raw_loss.data
        free(loss)
        step += 1
    free(*train_data)  # train() returns: its batchified arrays go
    return step


def evaluate(model, data, nbatch):
    model.training = False
    for _batch in range(nbatch):
        hidden = model.init_hidden()
        saved, output = model.forward(hidden)
        loss = empty(4, "activations")
        expo = empty(BATCH * CLASSES * 4, "activations")  # torch.exp(output)
        job.dtoh(0, expo, BATCH * CLASSES * 4)  # .data.cpu().numpy()
        job.dtoh(0, data[1], BATCH * 8)  # lbatch.data.cpu(): a view of the targets
        free(expo, loss, output, *saved, *hidden)


def main():
    job.start(markers_default=False)
    job.open_devices(1)
    model = Network().cuda()
    val_data, val_n = batchify(N_VAL)
    test_data, test_n = batchify(N_TEST)
    opt = Adam(model)
    step = 0
    for _epoch in range(EPOCHS):
        step = train(model, opt, step)
        evaluate(model, val_data, val_n)
    evaluate(model, test_data, test_n)
    free(*model.grads, *opt.state, *model.params, *val_data, *test_data)
    job.line("no_finding prefetch_depth")
    job.line("steps 0 %d" % step)
    job.finish()


main()
