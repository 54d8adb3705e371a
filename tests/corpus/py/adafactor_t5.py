#!/usr/bin/env python3
"""Hugging Face Seq2SeqTrainer fine-tuning t5-small with transformers'
Adafactor (`scale_parameter=False, relative_step=False, warmup_init=False,
lr=1e-3`, beta1=None: no first moment), with PYTORCH_NO_CUDA_MEMORY_CACHING=1
(one cudaMalloc per tensor).

What is modelled (sources read: transformers/optimization.py `Adafactor.
step`, `_get_options` (factored = ndim >= 2, use_first_moment = beta1 is not
None), `_rms`, `_approx_sq_grad`; transformers/models/t5/modeling_t5.py
`T5Attention.forward`, `compute_bias`, `T5LayerFF`, `T5ForConditional
Generation.forward` (tied lm_head: the decoder output scaled by
d_model ** -0.5, logits against `shared.weight`); transformers/trainer.py
`_prepare_inputs`, `training_step`; transformers/data/data_collator.py
`DataCollatorForSeq2Seq` (decoder_input_ids made on the host by
`prepare_decoder_input_ids_from_labels`); torch/nn/modules/module.py
`Module.to` -> `_apply(convert)`):
  - `model.to(device)`: every parameter of t5-small (shared embedding, 6
    encoder and 6 decoder blocks, relative attention biases, RMS layer
    norms) a cudaMalloc and an upload; lm_head is tied to `shared`;
  - per step `_prepare_inputs`: input_ids, attention_mask, labels and
    decoder_input_ids uploaded from the collator's batch;
  - forward: the encoder's position bias plus mask (B x H x S x S, made at
    layer 0 and reused by every layer), per layer the saved tensors of
    attention and the feed-forward block; the decoder the same with cross
    attention; logits and their log_softmax; backward frees them layer by
    layer and makes each `.grad` (AccumulateGrad), freed by
    `zero_grad(set_to_none=True)` after the step;
  - `Adafactor.step`, per parameter in order: at the first step the state:
    a 2-D parameter gets `exp_avg_sq_row` and `exp_avg_sq_col` made by
    `torch.zeros(shape).to(grad)` (zeros made on the host and UPLOADED), a
    1-D parameter `exp_avg_sq = torch.zeros_like(grad)` (made on the
    device); `state["step"]` is a Python int (no device memory); every step
    `state["RMS"] = _rms(p)` (a 0-dim device tensor kept in the state until
    the next step replaces it), `update = grad**2 + eps`, the row and column
    means, `_approx_sq_grad` (row factor, column factor, their product: a new
    full-size update), `update.div_((_rms(update) / clip).clamp_(min=1))`,
    `p.add_(-update)` (the negation a new full-size tensor).
Markers on, driver by cuGetProcAddress (libcudart).

Truth: parameters weights; `.grad`s gradients; exp_avg_sq_row / _col /
exp_avg_sq and the kept RMS scalars optimizer (the row and column vectors
although filled from the host); Adafactor's per-parameter temporaries
(update, squared gradient, means, factors, negation, norms) activations
(transient scratch, as clip_grad_norm_'s norms in hf_fp16_autocast);
forward and backward tensors activations; the four input tensors prefetch
(depth 1). No dataset; 10 steps. Coincidences: the logits and their
log_softmax (8 x 64 x 32128 float32 = 65,798,144 B) are exactly the shared
embedding (32128 x 512) and its gradient; an encoder hidden state
(8 x 256 x 512 float32, 4 MiB) is exactly a wi / wo weight; the encoder
position bias, attention scores and feed-forward activations (16 MiB)
are all one size."""
import vtc

job = vtc.Job("adafactor_t5", "getproc", __doc__)
MIB, KIB = vtc.MIB, vtc.KIB
VOCAB, D, DFF, HEADS, LAYERS, BUCKETS = 32128, 512, 2048, 8, 6, 32
B, S, L = 8, 256, 64
STEPS = 10


def named_parameters():
    """(name, shape) of t5-small in registration order, float32."""
    yield "shared.weight", (VOCAB, D)
    for stack, nlayer in (("encoder", 0), ("decoder", 1)):
        for i in range(LAYERS):
            pre = "%s.block.%d.layer." % (stack, i)
            for w in "qkvo":
                yield pre + "0.SelfAttention.%s.weight" % w, (D, D)
            if i == 0:
                yield pre + "0.SelfAttention.relative_attention_bias.weight", (BUCKETS, HEADS)
            yield pre + "0.layer_norm.weight", (D,)
            ff = 1
            if nlayer:
                for w in "qkvo":
                    yield pre + "1.EncDecAttention.%s.weight" % w, (D, D)
                yield pre + "1.layer_norm.weight", (D,)
                ff = 2
            yield pre + "%d.DenseReluDense.wi.weight" % ff, (DFF, D)
            yield pre + "%d.DenseReluDense.wo.weight" % ff, (D, DFF)
            yield pre + "%d.layer_norm.weight" % ff, (D,)
        yield stack + ".final_layer_norm.weight", (D,)


def nbytes(shape):
    n = 4
    for d in shape:
        n *= d
    return n


def empty(n, cat):
    return job.mem_alloc(0, n, cat)


def free(*ptrs):
    job.mem_free(0, *ptrs)


class T5ForConditionalGeneration:
    def __init__(self):
        self.shapes = list(named_parameters())
        self.params = []
        self.grads = {}

    def _apply(self):
        for _name, shape in self.shapes:  # convert(t): t.to(device)
            p = empty(nbytes(shape), "weights")
            job.htod(0, p, nbytes(shape))
            self.params.append(p)

    def to(self):
        self._apply()
        return self

    def T5Stack_forward(self, n_tok, kv_tok, cross):
        """Saved tensors of one stack: per layer a list, plus the stack's bias."""
        hid = B * n_tok * D * 4
        bias = empty(B * HEADS * n_tok * n_tok * 4, "activations")  # position_bias + mask
        saved = [bias]
        for _i in range(LAYERS):
            t = [empty(hid, "activations")]  # T5LayerNorm output
            t += [empty(hid, "activations") for _ in "qkv"]
            t.append(empty(B * HEADS * n_tok * n_tok * 4, "activations"))  # scores
            t.append(empty(B * HEADS * n_tok * n_tok * 4, "activations"))  # softmax + dropout
            t.append(empty(hid, "activations"))  # context
            t.append(empty(hid, "activations"))  # o + residual
            if cross:
                t.append(empty(hid, "activations"))  # layer norm
                t.append(empty(hid, "activations"))  # q
                t += [empty(B * kv_tok * D * 4, "activations") for _ in "kv"]
                t.append(empty(B * HEADS * n_tok * kv_tok * 4, "activations"))
                t.append(empty(hid, "activations"))  # o + residual
            t.append(empty(hid, "activations"))  # layer norm
            t.append(empty(B * n_tok * DFF * 4, "activations"))  # wi
            t.append(empty(B * n_tok * DFF * 4, "activations"))  # relu + dropout
            t.append(empty(hid, "activations"))  # wo + residual
            saved.append(t)
        saved.append([empty(hid, "activations")])  # final_layer_norm
        return saved

    def forward(self):
        enc = self.T5Stack_forward(S, S, False)
        dec = self.T5Stack_forward(L, S, True)
        scaled = empty(B * L * D * 4, "activations")  # sequence_output * d_model**-0.5
        logits = empty(B * L * VOCAB * 4, "activations")  # lm_head (tied)
        logp = empty(B * L * VOCAB * 4, "activations")  # CrossEntropyLoss: log_softmax
        loss = empty(4, "activations")
        return enc, dec, [scaled, logits, logp, loss]

    def grad(self, i):
        """AccumulateGrad: the .grad of parameter i, made by the backward."""
        if i not in self.grads:
            self.grads[i] = empty(nbytes(self.shapes[i][1]), "gradients")

    def backward(self, enc, dec, head):
        logp_grad = empty(B * L * VOCAB * 4, "activations")  # grad of the logits
        free(*head)
        self.grad(0)  # shared, through the tied lm_head
        free(logp_grad)
        # decoder then encoder, last layer first; parameters by name prefix
        index = {name: i for i, (name, _s) in enumerate(self.shapes)}
        for stack, saved in (("decoder", dec), ("encoder", enc)):
            self.grad(index[stack + ".final_layer_norm.weight"])
            free(*saved[-1])
            for layer in range(LAYERS - 1, -1, -1):
                g_hidden = empty(B * (L if stack == "decoder" else S) * D * 4, "activations")
                pre = "%s.block.%d." % (stack, layer)
                for name, i in index.items():
                    if name.startswith(pre):
                        self.grad(i)
                free(*saved[1 + layer])
                free(g_hidden)
            free(saved[0])
        self.grad(0)  # shared, through the embedding lookup (accumulated)

    def zero_grad(self):
        for p in self.grads.values():
            free(p)
        self.grads = {}


class Adafactor:
    """transformers.optimization.Adafactor, beta1=None, relative_step=False."""

    def __init__(self, model):
        self.model = model
        self.state = {}

    @staticmethod
    def _get_options(shape):
        return len(shape) >= 2, False  # factored, use_first_moment

    @staticmethod
    def _rms(kept):
        norm = empty(4, "activations")  # tensor.norm(2)
        out = empty(4, "optimizer" if kept else "activations")  # / numel ** 0.5
        free(norm)
        return out

    @staticmethod
    def _approx_sq_grad(rows, cols):
        mean = empty(4, "activations")  # exp_avg_sq_row.mean(dim=-1, keepdim=True)
        r_factor = empty(rows * 4, "activations")  # (row / mean).rsqrt_()
        free(mean)
        c_factor = empty(cols * 4, "activations")  # col.unsqueeze(-2).rsqrt()
        update = empty(rows * cols * 4, "activations")  # torch.mul(r_factor, c_factor)
        free(r_factor, c_factor)
        return update

    def step(self):
        for i, (_name, shape) in enumerate(self.model.shapes):
            n = nbytes(shape)
            factored, _first = self._get_options(shape)
            st = self.state.get(i)
            if st is None:  # State Initialization; state["step"] = 0 stays on the host
                st = {}
                if factored:
                    for key, size in (("exp_avg_sq_row", shape[0] * 4),
                                      ("exp_avg_sq_col", shape[1] * 4)):
                        st[key] = empty(size, "optimizer")  # torch.zeros(...).to(grad)
                        job.htod(0, st[key], size)
                else:
                    st["exp_avg_sq"] = empty(n, "optimizer")  # torch.zeros_like(grad)
                    job.zero(0, st["exp_avg_sq"], n)
                self.state[i] = st
            rms = self._rms(True)  # state["RMS"] = self._rms(p_data_fp32)
            if "RMS" in st:
                free(st["RMS"])
            st["RMS"] = rms
            sq = empty(n, "activations")  # grad ** 2
            update = empty(n, "activations")  # + eps[0]
            free(sq)
            if factored:
                row_mean = empty(shape[0] * 4, "activations")  # update.mean(dim=-1)
                free(row_mean)
                col_mean = empty(shape[1] * 4, "activations")  # update.mean(dim=-2)
                free(col_mean)
                new = self._approx_sq_grad(shape[0], shape[1])
            else:
                new = empty(n, "activations")  # exp_avg_sq.rsqrt().mul_(grad)
            free(update)
            update = new
            clip = self._rms(False)  # (self._rms(update) / clip_threshold).clamp_(min=1.0)
            free(clip)
            neg = empty(n, "activations")  # p_data_fp32.add_(-update)
            free(neg, update)


def _prepare_inputs(pinned):
    batch = []
    for n in (B * S * 8, B * S * 8, B * L * 8, B * L * 8):  # ids, mask, labels, dec ids
        t = empty(n, "prefetch")
        job.htod(0, t, n, src=pinned)
        batch.append(t)
    return batch


def training_step(model, opt, pinned):
    inputs = _prepare_inputs(pinned)
    enc, dec, head = model.forward()
    job.dtoh(0, head[-1], 4)  # loss.item() for the log
    model.backward(enc, dec, head)
    opt.step()
    model.zero_grad()
    free(*inputs)


def main():
    job.start(markers_default=True)
    job.open_devices(1)
    model = T5ForConditionalGeneration().to()
    opt = Adafactor(model)
    pinned = job.pinned(B * S * 8)
    for s in range(STEPS):
        job.step(s)
        training_step(model, opt, pinned)
    job.call("cuMemFreeHost", pinned)
    for st in opt.state.values():
        free(*st.values())
    free(*model.params)
    job.line("no_finding whole_dataset_upload")
    job.line("finding prefetch_depth 0 1 %d" % (2 * B * S * 8 + 2 * B * L * 8))
    job.line("steps 0 %d" % STEPS)
    job.finish()


main()
