#!/usr/bin/env python3
"""Fine-tuning a 4-layer BERT-shaped encoder (hidden 768, 12 heads, FFN
3,072, vocabulary 30,522, a 2-class head) for sequence classification in
float32, batch 16 x 128 tokens, with AdamW (foreach), a linear warmup
schedule, `clip_grad_norm_(max_norm=1.0)` and a DataLoader with
`pin_memory=True`, under PyTorch's default CUDACachingAllocator.

What is modelled (sources read: c10/cuda/CUDACachingAllocator.cpp
(`round_size`: 512-byte multiples; `get_allocation_size`: requests up to
kSmallSize (1 MiB) come from 2 MiB segments (kSmallBuffer), requests under
kMinLargeAlloc (10 MiB) from 20 MiB segments (kLargeBuffer), larger ones
from a segment of their own rounded up to kRoundLarge (2 MiB); one
cudaMalloc per segment; `get_free_block` takes the smallest cached block
of the right pool that fits; `should_split` (small pool: a remainder of at
least 512 B; large pool: more than 1 MiB); `free_block` merges a freed
block with its free neighbours; segments are kept until `empty_cache`,
never called here); torch/nn/modules/module.py `Module.to` -> `_apply`
(each parameter copied to a new device tensor: a block and an upload);
torch/utils/data/dataloader.py + _utils/pin_memory.py (the pin-memory
thread copies each batch into page-locked host memory); the training loop's
`batch = {k: v.cuda(non_blocking=True)}` (three blocks filled by
cudaMemcpyAsync from pinned memory); torch/optim/adamw.py `_init_group`
(`exp_avg` and `exp_avg_sq` by `zeros_like` at the first step, `step` a
host tensor) and `_multi_tensor_adamw` (`_foreach_mul_` weight decay,
`_foreach_lerp_`, `_foreach_mul_` / `_foreach_addcmul_` in place, then
`exp_avg_sq_sqrt = _foreach_sqrt(exp_avg_sqs)`: one temporary the size of
each parameter, freed after `_foreach_addcdiv_`);
torch/nn/utils/clip_grad.py (`_foreach_norm(grads)`: a 0-d tensor per
parameter, `torch.stack`, `vector_norm`, `clip_coef`, `clamp`,
`_foreach_mul_` in place; the Trainer reads the total norm with `.item()`);
AccumulateGrad (`.grad` made by the first backward after each
`zero_grad(set_to_none=True)`)). 12 optimizer steps. Markers on (one per
step), driver by cuGetProcAddress (libcudart).

Truth (per segment, settled at the end: the one kind it ever held, or pool
with part lines for its blocks): parameters weights; AdamW state
optimizer; `.grad`s gradients; batches prefetch (depth 1: the pinned
batch is copied only when the loop asks for it); forward and backward
tensors, AdamW's sqrt temporaries and clip_grad_norm_'s norms
activations. No dataset, no whole_dataset_upload. 12 steps. Coincidences:
input_ids and attention_mask are one size (16,384 B) and sit in small
segments with the biases; an attention-output or hidden-state tensor
(16 x 128 x 768 float32, 6 MiB) is the size of no parameter but the FFN
intermediate (24 MiB) gets a segment of its own like the embedding; the
attention scores (16 x 12 x 128 x 128 float32) are 12 MiB, their own
segment too; AdamW's state and sqrt temporaries are their parameters'
sizes."""
import vtc

job = vtc.Job("torch_caching_adamw_clip", "getproc", __doc__)
LAYERS, HID, FFN, VOCAB, HEADS = 4, 768, 3072, 30522, 12
BATCH, SEQ, STEPS = 16, 128, 12

cache = vtc.Caching(job, 0)
alloc = cache.malloc
free = cache.free


def model_params():
    p = [VOCAB * HID * 4, 512 * HID * 4, 2 * HID * 4, HID * 4, HID * 4]   # embeddings + LN
    for _ in range(LAYERS):
        p += [HID * HID * 4, HID * 4] * 4                                  # q, k, v, attn out
        p += [HID * 4, HID * 4]                                            # LN
        p += [FFN * HID * 4, FFN * 4, HID * FFN * 4, HID * 4, HID * 4, HID * 4]
    p += [HID * HID * 4, HID * 4, 2 * HID * 4, 2 * 4]                     # pooler, classifier
    return p


PARAMS = model_params()


def module_to(sizes):
    out = []
    for n in sizes:                      # _apply(lambda t: t.to(device))
        p = alloc(n, "weights")
        job.htod(0, p, n)
        out.append(p)
    return out


def forward():
    act = BATCH * SEQ * HID * 4
    saved = [alloc(act, "activations"), alloc(act, "activations")]   # embeddings, LN
    for _ in range(LAYERS):
        q, k, v = (alloc(act, "activations") for _ in range(3))
        scores = alloc(BATCH * HEADS * SEQ * SEQ * 4, "activations")
        probs = alloc(BATCH * HEADS * SEQ * SEQ * 4, "activations")
        ctx = alloc(act, "activations")
        out = alloc(act, "activations")
        ln1 = alloc(act, "activations")
        inter = alloc(BATCH * SEQ * FFN * 4, "activations")
        gelu = alloc(BATCH * SEQ * FFN * 4, "activations")
        ffn = alloc(act, "activations")
        ln2 = alloc(act, "activations")
        free(scores)                     # softmax output kept, scores not
        saved += [q, k, v, probs, ctx, out, ln1, inter, gelu, ffn, ln2]
    pooled = alloc(BATCH * HID * 4, "activations")
    logits = alloc(BATCH * 2 * 4, "activations")
    loss = alloc(4, "activations")
    saved += [pooled, logits]
    return saved, loss


def backward(saved, grads):
    made = grads is None
    if made:
        grads = [None] * len(PARAMS)
    tmp = alloc(BATCH * SEQ * HID * 4, "activations")                # grad of the output
    for i in reversed(range(len(PARAMS))):
        if made:
            grads[i] = alloc(PARAMS[i], "gradients")                  # AccumulateGrad
        if saved and i % 3 == 0:
            free(saved.pop())
    free(tmp, *saved)
    return grads


def clip_grad_norm(grads):
    norms = [alloc(4, "activations") for _ in grads]                  # _foreach_norm
    stacked = alloc(4 * len(grads), "activations")
    total = alloc(4, "activations")
    free(*norms, stacked)
    coef = alloc(4, "activations")
    clamped = alloc(4, "activations")
    free(coef)
    job.dtoh(0, total, 4)                                             # grad_norm.item()
    free(clamped, total)


class AdamW:
    def __init__(self):
        self.state = None

    def step(self):
        if self.state is None:                                        # _init_group
            self.state = [alloc(n, "optimizer") for n in PARAMS for _ in ("exp_avg", "exp_avg_sq")]
            for s, n in zip(self.state, [n for n in PARAMS for _ in range(2)]):
                job.zero(0, s, n)                                     # zeros_like
        sqrt = [alloc(n, "activations") for n in PARAMS]              # _foreach_sqrt
        free(*sqrt)


def main():
    job.start(markers_default=True)
    job.open_devices(1)
    params = module_to(PARAMS)
    opt = AdamW()
    keys = (BATCH * SEQ * 8, BATCH * SEQ * 8, BATCH * 8)              # input_ids, mask, labels
    pinned = job.pinned(sum(keys))                                    # pin_memory thread
    grads = None
    for s in range(STEPS):
        job.step(s)
        batch = []
        off = 0
        for n in keys:                                                # .cuda(non_blocking=True)
            p = alloc(n, "prefetch")
            job.htod(0, p, n, src=pinned + off, stream=0)
            batch.append(p)
            off += n
        saved, loss = forward()
        grads = backward(saved, grads)
        clip_grad_norm(grads)
        opt.step()
        job.dtoh(0, loss, 4)                                          # loss.item()
        free(loss, *batch)
        free(*grads)                                                  # zero_grad(set_to_none=True)
        grads = None
    free(*opt.state, *params)
    cache.settle_and_release()
    job.call("cuMemFreeHost", pinned)
    job.line("no_finding whole_dataset_upload")
    job.line("finding prefetch_depth 0 1 %d" % sum(keys))
    job.line("steps 0 %d" % STEPS)
    job.finish()


main()
