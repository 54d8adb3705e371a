#!/usr/bin/env python3
"""HF Trainer fine-tuning distilgpt2 with `optim="adamw_bnb_8bit"`
(bitsandbytes' blockwise 8-bit Adam), PYTORCH_NO_CUDA_MEMORY_CACHING=1 (one
cudaMalloc per tensor).

What is modelled (sources read: bitsandbytes optim/optimizer.py
`Optimizer8bit.step` (state made at the first step, `init_state` per
parameter), `Optimizer2State.init_state` (parameters under `min_8bit_size`
= 4096 elements, or overridden to `optim_bits=32`, get float32 `state1` /
`state2` = `zeros_like(p)`; the others uint8 `state1` / `state2` of the
parameter's element count, `absmax1` / `absmax2` float32, one per block of
256, and the signed and unsigned quantile maps `name2qmap["dynamic"]` /
`["udynamic"]` built on the host and moved `.to(p.device)` once: 256
float32 each), `update_step` (`optimizer_update_8bit_blockwise`, fused: no
temporaries); transformers trainer.py `create_optimizer` (for the
`Adam8bit` class every `nn.Embedding` weight registered with
`GlobalOptimManager.register_module_override(module, "weight",
{"optim_bits": 32})`), `_prepare_inputs` (input_ids, attention_mask, labels
uploaded per step), `training_step`, `clip_grad_norm_`, `model.zero_grad()`
(set_to_none); models/gpt2/modeling_gpt2.py (`GPT2Attention` with its
non-persistent causal `bias` buffer, eager `_attn`: matmul, scale, `where`
with the causal mask, the additive attention mask, softmax, dropout;
`Conv1D`; `NewGELUActivation`; `GPT2LMHeadModel.forward`: tied lm_head,
`shift_logits = lm_logits[..., :-1, :].contiguous()`, `CrossEntropyLoss`);
`Module._apply` (children first; the tied lm_head weight is already on the
device, so it is uploaded once)):
  - `model.to(device)`: every parameter and the causal-mask buffers uploaded;
  - 10 steps: the 3 inputs uploaded, forward (per block the saved tensors
    and the transients of attention and GELU), logits, the shifted copy,
    log-softmax, loss; backward (`.grad`s made by the backward, freed by
    `zero_grad` after the step); clip_grad_norm_'s norms; at the first
    step the optimizer state: float32 states for wte and wpe (the embedding
    override) and for every parameter under 4096 elements, uint8 states and
    absmax vectors for the others, the two quantile maps uploaded once.
Markers on, driver by cuGetProcAddress (libcudart).

Truth: parameters weights; the causal-mask buffers other (constant tables,
as a scheduler's timestep table); `.grad`s gradients; every state tensor
optimizer: float32 and uint8 states, absmax vectors, and the two uploaded
quantile maps (optimizer state filled from the host); the uploaded inputs
prefetch (depth 1); forward and backward tensors and clip_grad_norm_'s
norms activations. No dataset; 10 steps. Coincidences: wte's float32 states
are each exactly wte (154,389,504 B) and its gradient; an attention bias's
float32 state (2304 x 4 = 9,216 B) is exactly a c_proj weight's absmax
vector (589,824 / 256 x 4 B) and the bias itself; each uint8 state is a
quarter of its weight; input_ids, attention_mask and labels (4 x 256 int64,
8,192 B) are one size."""
import vtc

job = vtc.Job("bnb_adam8bit", "getproc", __doc__)
V, P, D, LAYERS, HEADS = 50257, 1024, 768, 6, 12
B, L, STEPS = 4, 256, 10
MIN_8BIT = 4096


def empty(n, cat):
    return job.mem_alloc(0, n, cat)


def free(*ptrs):
    job.mem_free(0, *ptrs)


def named_parameters():
    """(name, elements, is_embedding) in registration order; lm_head is wte."""
    yield "transformer.wte.weight", V * D, True
    yield "transformer.wpe.weight", P * D, True
    for i in range(LAYERS):
        pre = "transformer.h.%d." % i
        yield pre + "ln_1.weight", D, False
        yield pre + "ln_1.bias", D, False
        yield pre + "attn.c_attn.weight", D * 3 * D, False
        yield pre + "attn.c_attn.bias", 3 * D, False
        yield pre + "attn.c_proj.weight", D * D, False
        yield pre + "attn.c_proj.bias", D, False
        yield pre + "ln_2.weight", D, False
        yield pre + "ln_2.bias", D, False
        yield pre + "mlp.c_fc.weight", D * 4 * D, False
        yield pre + "mlp.c_fc.bias", 4 * D, False
        yield pre + "mlp.c_proj.weight", 4 * D * D, False
        yield pre + "mlp.c_proj.bias", D, False
    yield "transformer.ln_f.weight", D, False
    yield "transformer.ln_f.bias", D, False


class GPT2LMHeadModel:
    def __init__(self):
        self.params = list(named_parameters())
        self.dev = {}
        self.buffers = []
        self.grads = []

    def to(self):
        """_apply: wte, wpe, then per block its modules (ln_1, attn (buffers
        after the children c_attn, c_proj), ln_2, mlp), ln_f; lm_head's
        weight is wte, already converted."""
        it = iter(self.params)
        for name, n, _emb in (next(it), next(it)):
            self.dev[name] = self._upload(n * 4, "weights")
        for _i in range(LAYERS):
            block = [next(it) for _ in range(12)]
            for name, n, _emb in block[:2]:  # ln_1
                self.dev[name] = self._upload(n * 4, "weights")
            for name, n, _emb in block[2:6]:  # attn.c_attn, attn.c_proj
                self.dev[name] = self._upload(n * 4, "weights")
            self.buffers.append(self._upload(P * P, "other"))  # attn.bias (bool, 1 x 1 x P x P)
            self.buffers.append(self._upload(4, "other"))  # attn.masked_bias
            for name, n, _emb in block[6:]:  # ln_2, mlp
                self.dev[name] = self._upload(n * 4, "weights")
        for name, n, _emb in it:
            self.dev[name] = self._upload(n * 4, "weights")
        return self

    @staticmethod
    def _upload(n, cat):
        return job.upload(0, n, cat)

    def forward(self):
        h = B * L * D * 4
        scores = B * HEADS * L * L * 4
        saved = []
        pos = empty(L * 8, "activations")  # torch.arange(..., device=device)
        ext = empty(B * L * 4, "activations")  # attention_mask.to(dtype)
        ext2 = empty(B * L * 4, "activations")  # (1.0 - mask) * finfo.min
        free(ext)
        saved += [pos, ext2, empty(h, "activations")]  # wte(ids) + wpe(pos)
        for _i in range(LAYERS):
            saved += [empty(h, "activations"), empty(3 * h, "activations")]  # ln_1, c_attn
            w = empty(scores, "activations")  # matmul(q, k^T)
            w2 = empty(scores, "activations")  # / value.size(-1) ** 0.5
            free(w)
            mask_value = empty(4, "activations")  # torch.full([], finfo.min)
            w3 = empty(scores, "activations")  # torch.where(causal_mask, w, mask_value)
            free(w2, mask_value)
            w4 = empty(scores, "activations")  # + attention_mask
            free(w3)
            probs = empty(scores, "activations")  # softmax (saved)
            free(w4)
            saved += [probs, empty(B * HEADS * L * L, "activations"),  # dropout mask
                      empty(scores, "activations"),  # dropped probabilities
                      empty(h, "activations"),  # matmul(probs, v)
                      empty(h, "activations"),  # _merge_heads (contiguous)
                      empty(h, "activations"),  # c_proj
                      empty(B * L * D, "activations"), empty(h, "activations"),  # resid dropout
                      empty(h, "activations"),  # residual
                      empty(h, "activations"),  # ln_2
                      empty(4 * h, "activations")]  # c_fc
            gelu = [empty(4 * h, "activations") for _ in range(4)]  # pow, mul, add, tanh
            saved.append(empty(4 * h, "activations"))  # NewGELU output
            free(*gelu)
            saved += [empty(h, "activations"), empty(B * L * D, "activations"),
                      empty(h, "activations"), empty(h, "activations")]  # c_proj, dropout, residual
        saved.append(empty(h, "activations"))  # ln_f
        logits = empty(B * L * V * 4, "activations")  # lm_head
        shift = empty(B * (L - 1) * V * 4, "activations")  # [..., :-1, :].contiguous()
        shift_labels = empty(B * (L - 1) * 8, "activations")
        logp = empty(B * (L - 1) * V * 4, "activations")  # log_softmax (saved)
        loss = empty(4, "activations")
        saved += [shift, shift_labels, logp]
        return logits, saved, loss

    def backward(self, logits, saved):
        g = empty(B * (L - 1) * V * 4, "activations")  # nll / log_softmax backward
        gl = empty(B * L * V * 4, "activations")  # into the unshifted logits
        free(g)
        gh = empty(B * L * D * 4, "activations")
        free(gl, logits)
        grads = {}
        for name, n, _emb in reversed(self.params):  # AccumulateGrad, layer by layer
            grads[name] = empty(n * 4, "gradients")
            if name.endswith("mlp.c_proj.bias"):
                t = [empty(4 * B * L * D * 4, "activations") for _ in range(2)]
                free(*t)
        free(gh)
        while saved:
            free(saved.pop())
        self.grads = list(grads.values())

    def zero_grad(self):
        free(*self.grads)
        self.grads = []


class Adam8bit:
    def __init__(self, model):
        self.model = model
        self.state = None
        self.qmap = None

    def init_state(self, n, emb):
        if emb or n < MIN_8BIT:  # optim_bits=32 override, or under min_8bit_size
            s = [empty(n * 4, "optimizer"), empty(n * 4, "optimizer")]
            for t in s:
                job.zero(0, t, n * 4)
            return s
        if self.qmap is None:  # fill_qmap on the host, then .to(p.device)
            self.qmap = [job.upload(0, 256 * 4, "optimizer") for _ in ("dynamic", "udynamic")]
        blocks = (n + 255) // 256
        s1 = empty(n, "optimizer")
        job.zero(0, s1, n)
        s2 = empty(n, "optimizer")
        job.zero(0, s2, n)
        a1 = empty(blocks * 4, "optimizer")
        job.zero(0, a1, blocks * 4)
        a2 = empty(blocks * 4, "optimizer")
        job.zero(0, a2, blocks * 4)
        return [s1, s2, a1, a2]

    def step(self):
        if self.state is None:
            self.state = []
            # two groups (weight decay, none), in named_parameters order within each
            decay = [p for p in self.model.params if not (p[0].endswith("bias") or ".ln_" in p[0])]
            rest = [p for p in self.model.params if p not in decay]
            for _name, n, emb in decay + rest:
                self.state += self.init_state(n, emb)
        # optimizer_update_32bit / _8bit_blockwise: in place, nothing made


def clip_grad_norm_(model):
    n = len(model.params)
    norms = [empty(4, "activations") for _ in range(n)]  # _foreach_norm
    total = empty(n * 4, "activations")  # torch.stack
    tn = empty(4, "activations")
    coef = empty(4, "activations")
    clamped = empty(4, "activations")
    free(*norms, total, tn, coef, clamped)


def main():
    job.start(markers_default=True)
    job.open_devices(1)
    model = GPT2LMHeadModel().to()
    opt = Adam8bit(model)
    pinned = job.pinned(B * L * 8)
    for s in range(STEPS):
        job.step(s)
        inputs = []
        for _k in ("input_ids", "attention_mask", "labels"):  # _prepare_inputs
            inputs.append(job.upload(0, B * L * 8, "prefetch", src=pinned))
        logits, saved, loss = model.forward()
        model.backward(logits, saved)
        clip_grad_norm_(model)
        opt.step()
        model.zero_grad()
        job.dtoh(0, loss, 4)
        free(loss, *inputs)
    job.call("cuMemFreeHost", pinned)
    free(*opt.state, *opt.qmap, *model.buffers, *model.dev.values())
    job.line("no_finding whole_dataset_upload")
    job.line("finding prefetch_depth 0 1 %d" % (3 * B * L * 8))
    job.line("steps 0 %d" % STEPS)
    job.finish()


main()
