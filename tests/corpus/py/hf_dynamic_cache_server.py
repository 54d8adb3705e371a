#!/usr/bin/env python3
"""A small text-generation server: a Llama-shaped fp16 decoder (4 layers,
hidden 1024, 8 query / 8 key-value heads of 128, MLP 2816, vocabulary
32,000, untied lm_head) serving 5 requests one after another with
transformers `generate(do_sample=False)` and the default DynamicCache,
under PYTORCH_NO_CUDA_MEMORY_CACHING=1 (one cudaMalloc per tensor,
cudaFree when it dies).

What is modelled (sources read: torch/nn/modules/module.py `to_empty`
(`_apply(lambda t: torch.empty_like(t, device=device))`: every parameter
and buffer allocated on the device, uninitialised, in module order) and
`load_state_dict` -> `_load_from_state_dict` (`param.copy_(input_param)`
for each key: the safetensors tensors, loaded on the host, copied into the
device parameters one by one); safetensors.torch `load_file(path,
device="cpu")`; transformers LlamaRotaryEmbedding (`inv_freq`, a
non-persistent buffer recomputed and put on the device after the load);
generation/utils.py `generate` -> `_sample` (the prompt's `input_ids` and
`attention_mask` moved to the device by the server; per step
`prepare_inputs_for_generation` (position ids from `attention_mask.cumsum`),
the forward, `logits[:, -1, :].float()` (`logits_to_keep=1`: only the last
position's logits are computed), argmax, `torch.cat([input_ids,
next_tokens[:, None]], dim=-1)` and `_update_model_kwargs_for_generation`
growing the attention mask by another `torch.cat`); cache_utils.py
`DynamicCache.update` (the first call keeps the new key/value states, each
later call `torch.cat([self.key_cache[layer_idx], key_states], dim=-2)`:
a new tensor one token longer, the old one freed); modeling_llama.py
(`apply_rotary_pos_emb` makes new q and k tensors, SDPA attention,
residual adds, SiLU-gated MLP, RMSNorm in float32 then back to fp16)).
Requests (prompt, new tokens): (37, 12), (412, 6), (128, 10), (1010, 20),
(64, 8); the server reads each answer back and drops the cache.
No markers, driver by cuGetProcAddress (libcudart).

Truth: every parameter weights (allocated empty, then filled from the
host by load_state_dict: not a dataset, and no whole_dataset_upload);
`inv_freq` and the KV cache other (README convention); the prompt's
input_ids and attention_mask uploaded per request prefetch (depth 1: one
request at a time); everything the forward and generate make on the
device activations. No dataset; 0 steps. Coincidences: at 1,024 tokens
(request 4 passes it) a layer's key or value cache (1,024 x 1,024 fp16)
is exactly a q_proj / k_proj / v_proj / o_proj weight (2 MiB); a decode
step's hidden state (1 x 1,024 fp16) is a norm weight (2,048 B); the five
requests' caches and prompts differ in size (reallocated every token)."""
import vtc

job = vtc.Job("hf_dynamic_cache_server", "getproc", __doc__)
LAYERS, HID, KV, MLP, VOCAB = 4, 1024, 1024, 2816, 32000
FP16 = 2
REQUESTS = ((37, 12), (412, 6), (128, 10), (1010, 20), (64, 8))


def alloc(n, cat):
    return job.mem_alloc(0, n, cat)


def free(*ptrs):
    job.mem_free(0, *ptrs)


def module_params():
    """named_parameters() order of LlamaForCausalLM."""
    out = [("model.embed_tokens.weight", VOCAB * HID * FP16)]
    for i in range(LAYERS):
        pre = "model.layers.%d." % i
        out += [(pre + "self_attn.q_proj.weight", HID * HID * FP16),
                (pre + "self_attn.k_proj.weight", KV * HID * FP16),
                (pre + "self_attn.v_proj.weight", KV * HID * FP16),
                (pre + "self_attn.o_proj.weight", HID * HID * FP16),
                (pre + "mlp.gate_proj.weight", MLP * HID * FP16),
                (pre + "mlp.up_proj.weight", MLP * HID * FP16),
                (pre + "mlp.down_proj.weight", HID * MLP * FP16),
                (pre + "input_layernorm.weight", HID * FP16),
                (pre + "post_attention_layernorm.weight", HID * FP16)]
    out += [("model.norm.weight", HID * FP16), ("lm_head.weight", VOCAB * HID * FP16)]
    return out


def to_empty(names):
    return {name: alloc(n, "weights") for name, n in names}


def load_state_dict(params, names):
    for name, n in names:                      # _load_from_state_dict: param.copy_
        job.htod(0, params[name], n)


class DynamicCache:
    def __init__(self):
        self.k, self.v, self.len = [None] * LAYERS, [None] * LAYERS, 0

    def update(self, layer, k_new, v_new, t):
        if self.k[layer] is None:
            self.k[layer], self.v[layer] = k_new, v_new
            return
        for store, new in ((self.k, k_new), (self.v, v_new)):
            cat = alloc((self.len + t) * KV * FP16, "other")   # torch.cat(..., dim=-2)
            job.dtod(0, cat, store[layer], self.len * KV * FP16)
            free(store[layer], new)
            store[layer] = cat

    def drop(self):
        free(*self.k, *self.v)


def rms_norm(x_bytes):
    f32 = alloc(x_bytes * 2, "activations")    # hidden_states.to(float32)
    var = alloc(x_bytes // HID * 2, "activations")
    out = alloc(x_bytes, "activations")
    free(f32, var)
    return out


def decoder_layer(cache, layer, h, t):
    act = t * HID * FP16
    kept = "other" if cache.k[layer] is None else "activations"  # prefill: the cache keeps them
    normed = rms_norm(act)
    q, k = alloc(act, "activations"), alloc(t * KV * FP16, "activations")
    v = alloc(t * KV * FP16, kept)
    q_rot = alloc(act, "activations")          # apply_rotary_pos_emb
    k_rot = alloc(t * KV * FP16, kept)
    free(q, k, normed)
    cache.update(layer, k_rot, v, t)
    attn = alloc(act, "activations")           # scaled_dot_product_attention
    o = alloc(act, "activations")
    free(q_rot, attn)
    h2 = alloc(act, "activations")             # residual
    free(o)
    normed = rms_norm(act)
    gate, up = alloc(t * MLP * FP16, "activations"), alloc(t * MLP * FP16, "activations")
    silu = alloc(t * MLP * FP16, "activations")
    free(gate)
    prod = alloc(t * MLP * FP16, "activations")
    free(silu, up, normed)
    down = alloc(act, "activations")
    free(prod)
    h3 = alloc(act, "activations")
    free(down, h, h2)
    return h3


def forward(cache, t):
    h = alloc(t * HID * FP16, "activations")  # embed_tokens
    for layer in range(LAYERS):
        h = decoder_layer(cache, layer, h, t)
    cache.len += t
    last = rms_norm(HID * FP16)                # logits_to_keep=1: the last position
    logits = alloc(VOCAB * FP16, "activations")
    logits32 = alloc(VOCAB * 4, "activations")  # logits[:, -1, :].float()
    free(h, last, logits)
    return logits32


def generate(prompt, new_tokens):
    ids = alloc(prompt * 8, "prefetch")        # inputs.to("cuda")
    job.htod(0, ids, prompt * 8)
    mask = alloc(prompt * 8, "prefetch")
    job.htod(0, mask, prompt * 8)
    cache = DynamicCache()
    seq, cur_ids, cur_mask = prompt, ids, mask
    t = prompt
    for _ in range(new_tokens):
        pos = alloc(t * 8, "activations")      # attention_mask.long().cumsum(-1) - 1
        logits32 = forward(cache, t)
        nxt = alloc(8, "activations")          # argmax
        free(pos, logits32)
        new_ids = alloc((seq + 1) * 8, "activations")   # torch.cat([input_ids, next])
        new_mask = alloc((seq + 1) * 8, "activations")
        job.dtod(0, new_ids, cur_ids, seq * 8)
        if cur_ids != ids:
            free(cur_ids, cur_mask)
        cur_ids, cur_mask = new_ids, new_mask
        free(nxt)
        seq += 1
        t = 1
    job.dtoh(0, cur_ids, seq * 8)              # the answer
    free(cur_ids, cur_mask, ids, mask)
    cache.drop()


def main():
    job.start(markers_default=False)
    job.open_devices(1)
    names = module_params()
    params = to_empty(names)
    inv_freq = alloc(64 * 4, "other")
    load_state_dict(params, names)
    job.htod(0, inv_freq, 64 * 4)
    for prompt, new_tokens in REQUESTS:
        generate(prompt, new_tokens)
    free(inv_freq, *params.values())
    job.line("no_finding whole_dataset_upload")
    job.line("finding prefetch_depth 0 1 %d" % (2 * REQUESTS[0][0] * 8))
    job.line("steps 0 0")
    job.finish()


main()
