#!/usr/bin/env python3
"""HF accelerate + peft LoRA fine-tuning of a frozen fp16 decoder
(Llama-shaped: 8 layers, 2048 wide, 32,000 tokens), `Accelerator(
gradient_accumulation_steps=4, mixed_precision="fp16")`, LoRA r=16 on
q_proj and v_proj, `model.gradient_checkpointing_enable()`, AdamW, 24
micro-batches (6 optimizer steps), under PYTORCH_NO_CUDA_MEMORY_CACHING=1
(one cudaMalloc per tensor, cudaFree when it dies).

What is modelled (sources read: peft/tuners/lora/layer.py `LoraLayer.
update_layer` (lora_A / lora_B made as fp32 Linear layers next to the base
layer, on the host when the base is still there), peft/peft_model.py
`get_peft_model` (base parameters `requires_grad_(False)`);
transformers/modeling_utils.py `gradient_checkpointing_enable` and
`enable_input_require_grads`, torch/utils/checkpoint.py (`checkpoint`:
only the layer's inputs kept in forward, the layer's forward run again in
backward, then its backward); accelerate/accelerator.py `prepare` ->
`prepare_model` (`model.to(self.device)`: every parameter uploaded on its
own, the fp16 base and the fp32 adapters in module order), `accumulate` /
`_do_sync` (`sync_gradients` true on every 4th micro-batch), `backward`
(`loss / gradient_accumulation_steps`, `self.scaler.scale(loss).backward()`);
accelerate/optimizer.py `AcceleratedOptimizer.step` / `zero_grad` (no-ops
while gradients are accumulated; `scaler.step`, `scaler.update`);
accelerate/data_loader.py `DataLoaderShard.__iter__` (one host batch
fetched ahead, the current one `send_to_device` right before it is
yielded: the loop's previous device batch is still bound to the loop's
name while the next is copied); torch/amp/grad_scaler.py
(`_lazy_init_scale_growth_tracker` at the first `scale`, `unscale_`:
`found_inf` and the inverse scale per step); torch/optim/adamw.py
(exp_avg / exp_avg_sq made at the first step); autocast (fp16 casts of
the fp32 adapter weights per forward)):
  - 8 x 7 base projections + embeddings, norms and lm_head uploaded, the
    32 adapter matrices among them;
  - per micro-batch: the batch copied (input_ids, attention_mask, labels);
    forward with checkpointing (each layer's input kept, its inside freed),
    logits and the float32 loss; backward from the last layer: recompute
    the layer, then its backward (adapter `.grad`s made by the first
    micro-batch's backward and accumulated into after);
  - every 4th micro-batch: unscale, AdamW (state made at the first),
    scaler update, zero_grad (the `.grad`s freed).
Markers on (one per micro-batch: the loop's iteration), driver by
cuGetProcAddress (libcudart).

Truth: the fp16 base and the fp32 adapters weights (the adapters are the
trained parameters, uploaded with the model); adapter `.grad`s gradients;
exp_avg / exp_avg_sq optimizer; the batch tensors prefetch (depth 2: the
previous micro-batch's tensors are still bound by the loop while the next
are copied); the scale and growth tracker other; checkpointed layer
inputs, recomputed layer tensors, logits, autocast casts, the backward's
tensors and the scaler's temporaries activations. No dataset; 6 optimizer
steps over 24 marked micro-batches. Coincidences: a checkpointed layer
input (2 x 1024 x 2048 fp16 = 8 MiB) is exactly one q_proj / k_proj /
v_proj / o_proj weight; the three batch tensors are one size (2 x 1024
int64 = 16 KiB); lora_A and lora_B are one size (131,072 B) as are their
grads and AdamW states; the found_inf flag, the inverse scale, the scale
and the growth tracker are all 4 B."""
import vtc

job = vtc.Job("accelerate_lora_ckpt_accum", "getproc", __doc__)
V, D, L, FF, R = 32000, 2048, 8, 5632, 16
B, T = 2, 1024
ACCUM, MICRO = 4, 24
HID = B * T * D * 2
BATCH_T = B * T * 8


def alloc(n, cat):
    return job.mem_alloc(0, n, cat)


def free(*ptrs):
    job.mem_free(0, *ptrs)


def module_tensors():
    """(bytes, is_adapter) in module order (model.to(device))."""
    out = [(V * D * 2, False)]  # embed_tokens
    for _ in range(L):
        out.append((D * 2, False))  # input_layernorm
        for proj in ("q", "k", "v", "o"):
            out.append((D * D * 2, False))
            if proj in ("q", "v"):
                out += [(R * D * 4, True), (D * R * 4, True)]  # lora_A, lora_B
        out.append((D * 2, False))  # post_attention_layernorm
        out += [(D * FF * 2, False), (D * FF * 2, False), (FF * D * 2, False)]  # gate, up, down
    out += [(D * 2, False), (V * D * 2, False)]  # norm, lm_head
    return out


def layer_forward(keep_inside):
    """One decoder layer under autocast; returns the tensors kept."""
    casts = [alloc(R * D * 2, "activations") for _ in range(4)]  # fp16 casts of the adapters
    ln = alloc(HID, "activations")
    q = alloc(HID, "activations")
    k = alloc(HID, "activations")
    v = alloc(HID, "activations")
    lora_mid = [alloc(B * T * R * 2, "activations") for _ in range(2)]
    scores = alloc(B * 16 * T * T * 2, "activations")
    probs = alloc(B * 16 * T * T * 2, "activations")
    free(scores)
    ctx = alloc(HID, "activations")
    o = alloc(HID, "activations")
    ln2 = alloc(HID, "activations")
    gate = alloc(B * T * FF * 2, "activations")
    up = alloc(B * T * FF * 2, "activations")
    act = alloc(B * T * FF * 2, "activations")
    out = alloc(HID, "activations")
    inside = casts + [ln, q, k, v, probs, ctx, o, ln2, gate, up, act] + lora_mid
    if not keep_inside:
        free(*inside)
        inside = []
    return out, inside


def main():
    job.start(markers_default=True)
    job.open_devices(1)
    tensors = []
    adapters = []
    for n, is_adapter in module_tensors():
        p = job.upload(0, n, "weights")
        tensors.append(p)
        if is_adapter:
            adapters.append((p, n))
    grads = None
    state = None
    scale = growth = None
    prev_batch = None
    opt_steps = 0
    for micro in range(MICRO):
        job.step(micro)
        batch = [job.upload(0, BATCH_T, "prefetch") for _ in range(3)]  # send_to_device
        if prev_batch is not None:
            free(*prev_batch)  # the loop rebinds `batch`
        prev_batch = batch
        # forward with gradient checkpointing: keep each layer's input only
        h = alloc(HID, "activations")  # embeddings (inputs require grad)
        kept = []
        for _ in range(L):
            out, _inside = layer_forward(keep_inside=False)
            kept.append(h)
            h = out
        normed = alloc(HID, "activations")
        logits = alloc(B * T * V * 2, "activations")
        logits32 = alloc(B * T * V * 4, "activations")  # loss in float32
        loss = alloc(4, "activations")
        loss_div = alloc(4, "activations")  # loss / gradient_accumulation_steps
        if scale is None:  # GradScaler._lazy_init_scale_growth_tracker
            scale = job.upload(0, 4, "other")
            growth = alloc(4, "other")
            job.zero(0, growth, 4)
        scaled = alloc(4, "activations")
        # backward: lm_head, then each layer from the last: recompute, backward
        dlogits = alloc(B * T * V * 2, "activations")
        free(logits32)
        dh = alloc(HID, "activations")
        free(dlogits, logits, normed)
        first = grads is None
        if first:
            grads = {}
        for layer in reversed(range(L)):
            out, inside = layer_forward(keep_inside=True)  # checkpoint recompute
            free(out)
            dff = alloc(B * T * FF * 2, "activations")
            for i in (3, 2, 1, 0):  # v then q adapters of this layer
                idx = layer * 4 + i
                if first:
                    grads[idx] = alloc(adapters[idx][1], "gradients")
                else:
                    g = alloc(adapters[idx][1], "activations")  # AccumulateGrad: grad + new
                    free(g)
            dh2 = alloc(HID, "activations")
            free(dff, dh, *inside)
            free(kept[layer])
            dh = dh2
        free(dh, h, loss, loss_div, scaled)
        if (micro + 1) % ACCUM == 0:  # sync_gradients
            inv = alloc(4, "activations")
            found = alloc(4, "activations")
            job.dtoh(0, found, 4)  # scaler.step checks found_inf
            if state is None:
                state = []
                for _p, n in adapters:
                    for _ in range(2):
                        s = alloc(n, "optimizer")
                        job.zero(0, s, n)
                        state.append(s)
            tmp = [alloc(n, "activations") for _p, n in adapters]  # _foreach_sqrt
            free(*tmp)
            free(inv, found)
            free(*grads.values())  # zero_grad(set_to_none=True)
            grads = None
            opt_steps += 1
    free(*prev_batch)
    free(*state, scale, growth, *tensors)
    job.line("no_finding whole_dataset_upload")
    job.line("finding prefetch_depth 0 2 %d" % (3 * BATCH_T))
    job.line("steps 0 %d" % opt_steps)
    job.finish()


main()
