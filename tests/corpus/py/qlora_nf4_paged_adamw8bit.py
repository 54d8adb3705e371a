#!/usr/bin/env python3
"""QLoRA fine-tuning as the bitsandbytes / peft guides set it up: a
Llama-shaped causal LM (hidden 2048, 4 key-value heads, MLP 5632, 6
layers, vocabulary 16,000) loaded from an fp16 safetensors checkpoint
with `BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_quant_type="nf4",
bnb_4bit_use_double_quant=True, bnb_4bit_compute_dtype=torch.float16)`,
`prepare_model_for_kbit_training`, LoRA r=64 on every linear layer, and
the HF Trainer with `optim="paged_adamw_8bit"` and
`gradient_checkpointing=True` (no autocast), batch 4 x 512, 10 steps,
under the default CUDACachingAllocator (vtc.Caching).

What is modelled (sources: transformers modeling_utils.py
`_load_state_dict_into_meta_model` (the checkpoint's tensors in file
order, sorted by name: lm_head, embed_tokens, then per layer its norms
and linears alphabetically, the final norm last) and
quantizers/quantizer_bnb_4bit.py `create_quantized_param` (a linear's
fp16 weight wrapped in `bnb.nn.Params4bit` and `.to(device)`), every
other tensor `set_module_tensor_to_device`'d (an upload); bitsandbytes
nn/modules.py `Params4bit._quantize` (`w = self.data.contiguous()
.to(device)`: the fp16 weight UPLOADED, quantized, and dropped when
`self.data = w_4bit`) and functional.py `quantize_4bit` (`absmax =
torch.zeros(blocks)` fp32, one per 64 weights; `out = torch.zeros((n +
1) // 2, 1)` uint8; `get_4bit_type` -> the 16-entry NF4 code built on the
host and `.to(device)`; double quantization: `offset = absmax.mean()`,
`quantize_blockwise(absmax, blocksize=256)` (the `dynamic` map made on
the host and uploaded at its first use, `absmax2` fp32 and the uint8
`qabsmax`), then `del absmax`), `dequantize_4bit` (per matmul: the
nested absmax dequantized to fp32, the weight to an fp16
`torch.empty`), autograd/_functions.py `MatMul4Bit` (forward and
backward each dequantize; the fp16 input saved); peft utils/other.py
`prepare_model_for_kbit_training` (`param.data = param.data
.to(torch.float32)` for every fp16 parameter left: embedding, norms,
lm_head; `enable_input_require_grads`; `gradient_checkpointing_enable`),
tuners/lora/layer.py `update_layer` + `_move_adapter_to_device_of_base_layer`
(lora_A / lora_B made on the host in fp32 and uploaded) and
tuners/lora/bnb.py `Linear4bit.forward` (`result.clone()`, dropout,
lora_A, lora_B, `* scaling`, `result + output`); transformers
models/llama/modeling_llama.py (RMSNorm in fp32, rotary cos / sin made
per forward, `repeat_kv`, SDPA, SiLU MLP; the loss: `logits.float()`,
labels padded and shifted, `cross_entropy`); torch/utils/checkpoint.py
`CheckpointFunction` (forward under `no_grad` keeping only each layer's
input; backward re-runs the layer with grad, then back-propagates through
it); bitsandbytes optim/optimizer.py `Optimizer8bit` /
`Optimizer2State.init_state` at the first step (8-bit state: the
`dynamic` / `udynamic` maps `.to(p.device)` once, `state1` / `state2`
by `get_state_buffer`: for a paged optimizer and >= 1e5 elements
`F.get_paged` -> `cget_managed_ptr` (cudaMallocManaged, outside
PyTorch's allocator, never freed), else `zeros_like` on the device;
`absmax1` / `absmax2` one float per 256 elements), the fused
`optimizer_update_8bit_blockwise` (no temporaries); Trainer
`_prepare_inputs` (input_ids, attention_mask, labels uploaded per
step), `model.zero_grad()` (set_to_none) after the step). Markers on
(one per step), driver by cuGetProcAddress (libcudart).

Truth: every tensor of the load is weights: the fp16 uploads (freed
after quantization), the fp32 first-level absmax (freed by `del`), the
packed uint8 weights, `qabsmax`, `absmax2`, offsets, NF4 codes and the
`dynamic` map, the fp16 embedding / norms / lm_head uploads and their
fp32 casts; LoRA adapters (uploaded) weights; `inv_freq` other; the
adapters' `.grad`s gradients; every 8-bit optimizer tensor (managed
states, device states, absmax vectors, the two uploaded maps)
optimizer; the three per-step input uploads prefetch (depth 1: freed
when `training_step` returns); everything made by the forward, its
recomputation and the backward (dequantized weights included)
activations. Segments are settled at the end: the one kind each held,
or pool with part lines; the managed states are allocations of their
own. No dataset, no whole_dataset_upload. 10 optimizer steps.
Coincidences: q_proj's nested `absmax2` (1,024 B, weights) is the size
of each uploaded 8-bit map (1,024 B, optimizer) and of the `dynamic`
map; an input batch tensor (4 x 512 int64, 16,384 B, prefetch) is the
shifted labels (activations) and each 8-bit state of a k_proj or v_proj
lora_B (16,384 elements, optimizer, under the paging threshold); rotary
cos and sin (131,072 B, activations) are each a q_proj lora_A's paged
uint8 state (optimizer)."""
import vtc

job = vtc.Job("qlora_nf4_paged_adamw8bit", "getproc", __doc__)
H, KV, INTER, LAYERS, VOCAB = 2048, 256, 5632, 6, 16000
HEADS, HEAD_DIM = 32, 64
R = 64
BATCH, SEQ, STEPS = 4, 512, 10
T = BATCH * SEQ
F32, F16 = 4, 2
BLOCK4, BLOCK_NESTED, BLOCK_OPT = 64, 256, 256
PAGED_MIN = 100000
INPUT = BATCH * SEQ * 8

cache = vtc.Caching(job, 0)


def t(n, cat="activations"):
    return cache.malloc(n, cat)


def f(*ptrs):
    cache.free(*ptrs)


def up(n, cat):
    """A host tensor `.to(device)`: a block, then one copy."""
    p = t(n, cat)
    job.htod(0, p, n)
    return p


def cdiv(a, b):
    return -(-a // b)


DYNAMIC = []  # functional.name2qmap["dynamic"], on the device once


class Linear4bit:
    def __init__(self, name, fin, fout):
        self.name, self.fin, self.fout = name, fin, fout
        self.n = fin * fout
        self.nb = cdiv(self.n, BLOCK4)
        self.state = []
        self.lora = []
        self.grads = []
        self.saved = []

    def quantize(self):
        """Params4bit._quantize -> quantize_4bit(compress_statistics=True)."""
        w = up(self.n * F16, "weights")                         # .contiguous().to(device)
        absmax = t(self.nb * F32, "weights")                    # torch.zeros((blocks,))
        packed = t((self.n + 1) // 2, "weights")                # torch.zeros(((n+1)//2, 1), uint8)
        code = up(16 * F32, "weights")                          # get_4bit_type("nf4", device)
        offset = t(F32, "weights")                              # absmax.mean()
        if not DYNAMIC:
            DYNAMIC.append(up(256 * F32, "weights"))            # create_dynamic_map().to(A.device)
        absmax2 = t(cdiv(self.nb, BLOCK_NESTED) * F32, "weights")
        qabsmax = t(self.nb, "weights")                         # zeros_like(A, dtype=uint8)
        f(absmax)                                               # del absmax
        self.state = [packed, code, offset, absmax2, qabsmax]
        f(w)                                                    # self.data = w_4bit

    def add_lora(self):
        """update_layer + _move_adapter_to_device_of_base_layer."""
        self.lora = [up(R * self.fin * F32, "weights"), up(self.fout * R * F32, "weights")]

    def params(self):
        return [R * self.fin, self.fout * R]

    def forward(self, grad):
        xc = t(T * self.fin * F16)                              # x.to(compute_dtype)
        am = t(self.nb * F32)                                   # dequantize_blockwise(qabsmax)
        w = t(self.n * F16)                                     # dequantize_4bit: torch.empty
        o16 = t(T * self.fout * F16)                            # F.linear
        f(am, w)
        res = t(T * self.fout * F32)                            # out.to(inp_dtype)
        f(o16)
        res2 = t(T * self.fout * F32)                           # result.clone()
        f(res)
        d, m = t(T * self.fin * F32), t(T * self.fin)           # lora_dropout: output, mask
        a = t(T * R * F32)                                      # lora_A
        b = t(T * self.fout * F32)                              # lora_B
        s = t(T * self.fout * F32)                              # * scaling
        f(b)
        out = t(T * self.fout * F32)                            # result + output
        f(res2, s)
        if grad:
            self.saved = [xc, d, m, a]
        else:
            f(xc, d, m, a)
        return out

    def backward(self, g):
        gs = t(T * self.fout * F32)                             # grad * scaling
        gb = t(self.fout * R * F32, "gradients")                # lora_B.weight.grad
        ga = t(T * R * F32)
        f(gs)
        gaw = t(R * self.fin * F32, "gradients")                # lora_A.weight.grad
        gd = t(T * self.fin * F32)
        f(ga)
        gx1 = t(T * self.fin * F32)                             # dropout backward
        f(gd)
        g16 = t(T * self.fout * F16)                            # to(compute_dtype) backward
        am = t(self.nb * F32)                                   # MatMul4Bit.backward dequantizes
        w = t(self.n * F16)
        gx16 = t(T * self.fin * F16)
        f(am, w, g16)
        gx2 = t(T * self.fin * F32)
        f(gx16)
        gx = t(T * self.fin * F32)                              # the two paths summed
        f(gx1, gx2, *self.saved)
        self.saved = []
        self.grads = [gaw, gb]
        return gx


class Norm:
    def __init__(self):
        self.w = None
        self.saved = []

    def forward(self, x, grad):
        sq = t(T * H * F32)                                     # pow(2)
        var = t(T * F32)                                        # mean(-1)
        f(sq)
        rs = t(T * F32)                                         # rsqrt(var + eps)
        f(var)
        nx = t(T * H * F32)                                     # x * rsqrt
        y = t(T * H * F32)                                      # weight * ...
        if grad:
            self.saved = [rs, nx]
        else:
            f(rs, nx)
        return y

    def backward(self, g):
        g1 = t(T * H * F32)
        g2 = t(T * H * F32)
        f(g1)
        gx = t(T * H * F32)
        f(g2, *self.saved)
        self.saved = []
        return gx


class DecoderLayer:
    def __init__(self, i):
        self.i = i
        self.ln1, self.ln2 = Norm(), Norm()
        self.q = Linear4bit("q_proj", H, H)
        self.k = Linear4bit("k_proj", H, KV)
        self.v = Linear4bit("v_proj", H, KV)
        self.o = Linear4bit("o_proj", H, H)
        self.gate = Linear4bit("gate_proj", H, INTER)
        self.up = Linear4bit("up_proj", H, INTER)
        self.down = Linear4bit("down_proj", INTER, H)
        self.saved = []

    def checkpoint_order(self):
        """Tensor names sorted as in the safetensors file."""
        return [("input_layernorm", self.ln1), ("mlp.down_proj", self.down),
                ("mlp.gate_proj", self.gate), ("mlp.up_proj", self.up),
                ("post_attention_layernorm", self.ln2), ("self_attn.k_proj", self.k),
                ("self_attn.o_proj", self.o), ("self_attn.q_proj", self.q),
                ("self_attn.v_proj", self.v)]

    def linears(self):
        return [self.q, self.k, self.v, self.o, self.gate, self.up, self.down]

    def forward(self, x, grad):
        """x is the layer's input (kept by the caller); returns its output."""
        h = self.ln1.forward(x, grad)
        q, k, v = self.q.forward(grad), self.k.forward(grad), self.v.forward(grad)
        f(h)                                                    # the linears saved their casts
        roped = []
        for src, n in ((q, T * H * F32), (k, T * KV * F32)):    # apply_rotary_pos_emb
            a = t(n)                                            # x * cos
            half = t(n // 2)                                    # -x2
            rh = t(n)                                           # rotate_half: cat
            f(half)
            b = t(n)                                            # rotate_half(x) * sin
            f(rh)
            e = t(n)                                            # sum
            f(a, b, src)
            roped.append(e)
        kr, vr = t(T * H * F32), t(T * H * F32)                 # repeat_kv (expand + reshape)
        f(v)
        attn = t(T * H * F32)                                   # SDPA output
        lse = t(BATCH * HEADS * SEQ * F32)                      # logsumexp
        ao = t(T * H * F32)                                     # transpose(1, 2).reshape
        keep = []
        if grad:
            keep += roped + [kr, vr, attn, lse]
        else:
            f(*roped, kr, vr, attn, lse)
        o = self.o.forward(grad)
        f(ao)
        x2 = t(T * H * F32)                                     # residual
        f(o)
        h2 = self.ln2.forward(x2, grad)
        g, u = self.gate.forward(grad), self.up.forward(grad)
        f(h2)
        act = t(T * INTER * F32)                                # SiLU
        prod = t(T * INTER * F32)                               # act * up
        if grad:
            keep += [g, u, act]
        else:
            f(g, u, act)
        dn = self.down.forward(grad)
        f(prod)
        out = t(T * H * F32)                                    # residual
        f(dn)
        if grad:
            self.saved = keep + [x2]
        else:
            f(x2)
        return out

    def backward(self, g):
        gd = self.down.backward(g)
        g_act, g_up = t(T * INTER * F32), t(T * INTER * F32)    # mul backward
        f(gd)
        g_gate = t(T * INTER * F32)                             # SiLU backward
        f(g_act)
        gh2a = self.up.backward(g_up)
        f(g_up)
        gh2b = self.gate.backward(g_gate)
        f(g_gate)
        gh2 = t(T * H * F32)
        f(gh2a, gh2b)
        gx2n = self.ln2.backward(gh2)
        f(gh2)
        gx2 = t(T * H * F32)                                    # residual: g + norm grad
        f(gx2n)
        gao = self.o.backward(gx2)
        g_attn = [t(T * H * F32) for _ in range(3)]             # SDPA backward: dq, dk, dv
        f(gao)
        gq = t(T * H * F32)                                     # rope backward
        gk = t(T * KV * F32)                                    # repeat_kv backward (sum)
        gv = t(T * KV * F32)
        f(*g_attn)
        gxa = self.q.backward(gq)
        f(gq)
        gxb = self.k.backward(gk)
        f(gk)
        gsum = t(T * H * F32)
        f(gxa, gxb)
        gxc = self.v.backward(gv)
        f(gv)
        gh = t(T * H * F32)
        f(gsum, gxc)
        gx1 = self.ln1.backward(gh)
        f(gh)
        gx = t(T * H * F32)                                     # residual
        f(gx1, gx2, *self.saved)
        self.saved = []
        return gx


class LlamaForCausalLM:
    def __init__(self):
        self.layers = [DecoderLayer(i) for i in range(LAYERS)]
        self.embed = self.lm_head = self.norm_w = None
        self.inv_freq = None

    def load(self):
        """_load_state_dict_into_meta_model, keys as the file sorts them."""
        self.lm_head = up(VOCAB * H * F16, "weights")
        self.embed = up(VOCAB * H * F16, "weights")
        for layer in self.layers:
            for _name, mod in layer.checkpoint_order():
                if isinstance(mod, Norm):
                    mod.w = up(H * F16, "weights")
                else:
                    mod.quantize()
        self.norm_w = up(H * F16, "weights")
        self.inv_freq = up(HEAD_DIM // 2 * F32, "other")

    def prepare_for_kbit_training(self):
        """Every fp16 parameter left cast to fp32 (module order)."""
        def cast(p, n):
            p32 = t(n * F32, "weights")
            f(p)
            return p32
        self.embed = cast(self.embed, VOCAB * H)
        for layer in self.layers:
            layer.ln1.w = cast(layer.ln1.w, H)
            layer.ln2.w = cast(layer.ln2.w, H)
        self.norm_w = cast(self.norm_w, H)
        self.lm_head = cast(self.lm_head, VOCAB * H)

    def get_peft_model(self):
        for layer in self.layers:
            for lin in layer.linears():
                lin.add_lora()

    def forward_backward(self):
        x = t(T * H * F32)                                      # embed_tokens (fp32 now)
        pos = t(SEQ * 8)                                        # cache_position / position_ids
        freqs = t(SEQ * HEAD_DIM // 2 * F32)                    # rotary: inv_freq @ position_ids
        emb = t(SEQ * HEAD_DIM * F32)                           # cat(freqs, freqs)
        cos, sin = t(SEQ * HEAD_DIM * F32), t(SEQ * HEAD_DIM * F32)
        f(freqs, emb)
        inputs = [x]
        for layer in self.layers:                               # CheckpointFunction.forward
            inputs.append(layer.forward(inputs[-1], grad=False))
        hidden = inputs[-1]
        sq = t(T * H * F32)                                     # final RMSNorm
        var = t(T * F32)
        f(sq)
        rs = t(T * F32)
        f(var)
        nx = t(T * H * F32)
        y = t(T * H * F32)
        logits = t(T * VOCAB * F32)                             # lm_head (fp32 weight)
        f(y)                                                    # a frozen weight: input not saved
        lab = t(BATCH * (SEQ + 1) * 8)                          # F.pad(labels, (0, 1))
        shift = t(BATCH * SEQ * 8)                              # labels[..., 1:].contiguous()
        f(lab)
        lsm = t(T * VOCAB * F32)                                # log_softmax (saved)
        loss = t(F32)                                           # nll_loss, reduction="sum"
        loss2 = t(F32)                                          # / num_items_in_batch
        f(loss, logits)                                         # outputs dropped
        # backward
        g_lsm = t(T * VOCAB * F32)
        f(loss2, shift)
        g_logits = t(T * VOCAB * F32)
        f(g_lsm, lsm)
        g = t(T * H * F32)                                      # lm_head: input grad only
        f(g_logits)
        g1, g2 = t(T * H * F32), t(T * H * F32)                 # final norm backward
        f(g)
        g3 = t(T * H * F32)
        f(g1, g2, rs, nx, hidden)
        g = g3
        for i in reversed(range(LAYERS)):                       # CheckpointFunction.backward
            layer = self.layers[i]
            out = layer.forward(inputs[i], grad=True)
            g_new = layer.backward(g)
            f(g, out)
            g = g_new
            if i > 0:
                f(inputs[i])
        f(g, x, pos, cos, sin)                                  # embedding frozen: no grad


class PagedAdamW8bit:
    """bnb.optim.AdamW(optim_bits=8, is_paged=True)."""

    def __init__(self, model):
        self.params = [(lin, n) for layer in model.layers for lin in layer.linears()
                       for n in lin.params()]
        self.state = None
        self.qmaps = []
        self.managed = []

    def step(self):
        if self.state is not None:
            return
        self.state = []
        for _lin, n in self.params:                             # init_state per parameter
            if not self.qmaps:                                  # name2qmap[...].to(p.device)
                self.qmaps = [up(256 * F32, "optimizer"), up(256 * F32, "optimizer")]
            for _s in ("state1", "state2"):                     # get_state_buffer(p, uint8)
                if n >= PAGED_MIN:
                    p = job.mem_alloc_managed(0, n, "optimizer")
                    job.zero(0, p, n)                           # F.fill(buff, 0)
                    self.managed.append(p)
                else:
                    self.state.append(t(n, "optimizer"))
            blocks = cdiv(n, BLOCK_OPT)
            self.state += [t(blocks * F32, "optimizer"), t(blocks * F32, "optimizer")]


def main():
    job.start(markers_default=True)
    job.open_devices(1)
    model = LlamaForCausalLM()
    model.load()
    model.prepare_for_kbit_training()
    model.get_peft_model()
    opt = PagedAdamW8bit(model)
    for s in range(STEPS):
        job.step(s)
        batch = [up(INPUT, "prefetch") for _ in range(3)]      # _prepare_inputs
        model.forward_backward()
        f(*batch)                                               # training_step returns
        opt.step()
        for layer in model.layers:                              # model.zero_grad()
            for lin in layer.linears():
                f(*lin.grads)
                lin.grads = []
    # teardown: everything PyTorch held goes back to the cache, then segments
    f(*opt.state, *opt.qmaps)
    for layer in model.layers:
        for lin in layer.linears():
            f(*lin.state, *lin.lora)
        f(layer.ln1.w, layer.ln2.w)
    f(model.embed, model.lm_head, model.norm_w, model.inv_freq, *DYNAMIC)
    cache.settle_and_release()
    job.line("no_finding whole_dataset_upload")
    job.line("finding prefetch_depth 0 1 %d" % (3 * INPUT))
    job.line("steps 0 %d" % STEPS)
    job.finish()


main()
