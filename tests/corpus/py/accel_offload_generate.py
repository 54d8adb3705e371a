#!/usr/bin/env python3
"""Big-model inference with accelerate's CPU offload: a TinyLlama-shaped
fp16 decoder (22 layers, hidden 2,048, intermediate 5,632, 4 KV heads,
vocabulary 32,000) loaded by `AutoModelForCausalLM.from_pretrained(...,
device_map="auto", max_memory={0: "1536MiB", "cpu": "8GiB"},
torch_dtype=torch.float16)`, then `generate(max_new_tokens=3)` for two
prompts (48 and 96 tokens), greedy, under
PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync (cuMemAllocAsync /
cuMemFreeAsync per tensor).

What is modelled (sources read: accelerate/utils/modeling.py
`infer_auto_device_map` (modules placed on GPU 0 in order until its
max_memory is used, the rest on "cpu"), `set_module_tensor_to_device`
(a new device tensor filled from the host value, the old one dropped);
accelerate/big_modeling.py `dispatch_model` (`OffloadedWeightsLoader`
keeps the CPU layers' weights on the host, `AlignDevicesHook(offload=True)`
on each of them); accelerate/hooks.py `AlignDevicesHook.pre_forward`
(every parameter of the module copied to the execution device,
`set_module_tensor_to_device(module, name, execution_device,
value=weights_map[name])`) and `post_forward` (each set back to "meta":
the device copies freed); transformers modeling_utils.py
`_load_state_dict_into_meta_model` (GPU-placed parameters uploaded one by
one); generation/utils.py `_sample` (prompt `input_ids` and
`attention_mask` uploaded, `torch.cat` of the new token and mask every
step, `next_tokens` read back for the stopping criteria);
cache_utils.py `DynamicCache.update` (`torch.cat` per layer per token);
modeling_llama.py (`inv_freq` buffer, rotary cos / sin, GQA
projections, `logits_to_keep=1` after prefill)). No markers (inference),
driver by cuGetProcAddress (libcudart).

Truth: parameters of the GPU-placed layers, embedding, final norm and
lm_head, AND the per-forward device copies of the offloaded layers'
parameters, weights (the hook puts the model's own weights on the device
for the forward that needs them: not a dataset, not prefetch); the KV
cache tensors kept between steps and `inv_freq` other; prompts and masks
prefetch (depth 1: one request at a time); hidden states, projections,
attention, logits, per-token key / value states and the grown
`input_ids` / `attention_mask` activations. No dataset and no
whole_dataset_upload. 0 steps. Coincidences: every offloaded layer's
copies are uploaded again at each of the 6 forwards (the same 9 tensors,
often at the same addresses); q_proj and o_proj are one size (8 MiB),
as are k_proj and v_proj (1 MiB), gate, up and down (23,068,672 B);
a 96-token prompt's hidden state (393,216 B) is no parameter's size."""
import vtc

job = vtc.Job("accel_offload_generate", "getproc", __doc__)
MIB = vtc.MIB
LAYERS, HID, INTER, KV, VOCAB, HEAD_DIM = 22, 2048, 5632, 256, 32000, 64
GPU_BUDGET = 1536 * MIB
PROMPTS, NEW_TOKENS = (48, 96), 3
LAYER_PARAMS = [HID * HID * 2, HID * KV * 2, HID * KV * 2, HID * HID * 2,   # q, k, v, o
                HID * INTER * 2, HID * INTER * 2, INTER * HID * 2,         # gate, up, down
                HID * 2, HID * 2]                                          # input / post norms


def alloc(n, cat):
    return job.mem_alloc_async(0, n, cat)


def free(*ptrs):
    for p in ptrs:
        job.mem_free_async(0, p)


def set_module_tensor_to_device(nbytes):
    p = alloc(nbytes, "weights")
    job.htod(0, p, nbytes)
    return p


def infer_auto_device_map():
    """embed_tokens first, then layers while the budget lasts; norm and
    lm_head are kept on the GPU (the tied-output rule puts lm_head with
    the first module)."""
    used = VOCAB * HID * 2 * 2 + HID * 2
    on_gpu = 0
    for _ in range(LAYERS):
        if used + sum(LAYER_PARAMS) > GPU_BUDGET:
            break
        used += sum(LAYER_PARAMS)
        on_gpu += 1
    return on_gpu


def load(on_gpu):
    params = [set_module_tensor_to_device(VOCAB * HID * 2)]                 # embed_tokens
    for _ in range(on_gpu):
        params += [set_module_tensor_to_device(n) for n in LAYER_PARAMS]
    params += [set_module_tensor_to_device(HID * 2), set_module_tensor_to_device(VOCAB * HID * 2)]
    inv_freq = alloc(HEAD_DIM // 2 * 4, "other")                             # made on the device
    return params, inv_freq


def decoder_layer(tokens, cache, layer):
    hidden = tokens * HID * 2
    normed = alloc(hidden, "activations")
    q = alloc(hidden, "activations")
    kept = "other" if cache[layer] is None else "activations"     # prefill's k, v are the cache
    k = alloc(tokens * KV * 2, kept)
    v = alloc(tokens * KV * 2, kept)
    if cache[layer] is None:
        cache[layer] = (k, v, tokens)
    else:                                                          # DynamicCache.update: cat
        old_k, old_v, n = cache[layer]
        new_k, new_v = alloc((n + tokens) * KV * 2, "other"), alloc((n + tokens) * KV * 2, "other")
        job.dtod(0, new_k, old_k, n * KV * 2)
        job.dtod(0, new_v, old_v, n * KV * 2)
        free(old_k, old_v, k, v)
        cache[layer] = (new_k, new_v, n + tokens)
    attn = alloc(hidden, "activations")
    o = alloc(hidden, "activations")
    free(normed, q, attn)
    gate = alloc(tokens * INTER * 2, "activations")
    up = alloc(tokens * INTER * 2, "activations")
    act = alloc(tokens * INTER * 2, "activations")
    free(gate, up)
    down = alloc(hidden, "activations")
    free(act, o)
    return down


def forward(tokens, cache, on_gpu):
    h = alloc(tokens * HID * 2, "activations")                               # embed_tokens
    for layer in range(LAYERS):
        offloaded = []
        if layer >= on_gpu:                                                  # AlignDevicesHook.pre_forward
            offloaded = [set_module_tensor_to_device(n) for n in LAYER_PARAMS]
        out = decoder_layer(tokens, cache, layer)
        free(h, *offloaded)                                                  # post_forward: to "meta"
        h = out
    logits = alloc(VOCAB * 4, "activations")                                 # logits_to_keep=1, float
    free(h)
    return logits


def generate(prompt_len, on_gpu):
    input_ids = alloc(prompt_len * 8, "prefetch")
    job.htod(0, input_ids, prompt_len * 8)
    mask = alloc(prompt_len * 8, "prefetch")
    job.htod(0, mask, prompt_len * 8)
    cache = [None] * LAYERS
    ids, m = input_ids, mask
    tokens = prompt_len
    for t in range(NEW_TOKENS):
        logits = forward(tokens, cache, on_gpu)
        nxt = alloc(8, "activations")                                        # argmax
        free(logits)
        job.dtoh(0, nxt, 8)                                                  # stopping criteria
        length = prompt_len + t + 1
        new_ids, new_m = alloc(length * 8, "activations"), alloc(length * 8, "activations")
        if ids is not input_ids:
            free(ids, m)
        ids, m = new_ids, new_m
        free(nxt)
        tokens = 1
    job.dtoh(0, ids, (prompt_len + NEW_TOKENS) * 8)
    free(ids, m, input_ids, mask)
    for k, v, _n in cache:
        free(k, v)


def main():
    job.start(markers_default=False)
    job.open_devices(1)
    on_gpu = infer_auto_device_map()
    params, inv_freq = load(on_gpu)
    for n in PROMPTS:
        generate(n, on_gpu)
    free(inv_freq, *params)
    job.line("no_finding whole_dataset_upload")
    job.line("finding prefetch_depth 0 1 %d" % (2 * max(PROMPTS) * 8))
    job.line("steps 0 0")
    job.finish()


main()
