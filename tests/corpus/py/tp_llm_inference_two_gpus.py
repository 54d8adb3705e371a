#!/usr/bin/env python3
"""A tensor-parallel text-generation server on 2 GPUs: Hugging Face
text-generation-inference's flash Qwen2 model (Qwen2-0.5B shape: hidden
896, 24 layers, 14 heads, 2 KV heads, MLP 4,864, vocabulary 151,936, tied
embeddings, fp16) with `--num-shard 2 --cuda-graphs 0`, serving 6 batches
of 1 to 4 requests (prefill, then 10 decode steps each). The two shards are
driven from ONE thread in lockstep (TGI runs one process per shard, each
fed the same batch; the trace order is fixed here);
PYTORCH_NO_CUDA_MEMORY_CACHING=1 (one cudaMalloc / cudaFree per tensor).

What is modelled (sources: TGI server/text_generation_server/utils/
weights.py `Weights.get_partial_sharded` (a safetensors slice of this
shard's rows or columns, `tensor.to(device)`: one allocation and upload
per tensor shard), `get_multi_weights_col` (q, k, v -- weights and
biases -- or gate, up, each uploaded, then `torch.cat` on the device: the
pieces freed), `get_tensor` for replicated norms; layers/linear.py
`TensorParallelColumnLinear.load_multi` / `TensorParallelRowLinear.load`
(the row-parallel o_proj and down_proj shards cut on dim 1, their outputs
all-reduced through NCCL), `TensorParallelEmbedding` (this shard's half of
the vocabulary), `SpeculativeHead.load` from `model.embed_tokens` when the
embeddings are tied (the same bytes uploaded again as the lm_head);
layers/rotary.py (`inv_freq` made on the device, cos / sin caches grown on
the device); models/flash_causal_lm.py `warmup` (a KV cache for the
warm-up batch's blocks, one profile prefill of 4,096 tokens, then
`init_kv_cache` again: `self.kv_cache = []` frees the first cache, then
ONE key and ONE value tensor per layer of `num_blocks` x 16 slots, never
freed), `FlashCausalLMBatch.from_pb` (per batch `input_ids`,
`position_ids`, `cu_seqlen_prefill`, `slots`, `block_tables`,
`input_lengths`, `prefill_head_indices` built on the host and copied to
the device), `generate_token` (prefill over all prompt tokens, logits
only at the last token of each request, gathered across shards; decode
steps reuse device tensors: the next `input_ids` come from the argmax,
positions and slots advanced in place; the tokens read back each step);
a batch's tensors freed when it finishes). No markers, driver by
cuGetProcAddress (libcudart).

Truth per shard: every parameter shard, the cat'd fused tensors and the
transient uploaded pieces weights; the lm_head (a second upload of the
embedding shard) weights -- NO dataset: no whole_dataset_upload, although
136,134,656-B uploads happen twice per shard; the KV caches (warm-up and
final) other, as `inv_freq`, the cos / sin caches and NCCL's buffer; the
prompt `input_ids` (warm-up batch included) prefetch (depth 1: a batch's
prompts live only through its prefill); position ids, cumulative lengths,
slots, block tables, lengths and head indices other (index tensors);
hidden states, attention and MLP outputs, logits and next tokens
activations. No gradients; 0 steps. Coincidences: the o_proj shard is
the q_proj shard's size (802,816 B), the down_proj shard the gate shard's
(4,358,144 B); the embedding shard and the lm_head are one size; k and v
pieces are equal (114,688 B)."""
import random

import vtc

job = vtc.Job("tp_llm_inference_two_gpus", "getproc", __doc__)
SHARDS, HID, LAYERS, HEADS, KV_HEADS, HEAD_DIM = 2, 896, 24, 14, 2, 64
INTER, VOCAB, FP16 = 4864, 151936, 2
Q_ROWS, KV_ROWS = HEADS * HEAD_DIM // SHARDS, KV_HEADS * HEAD_DIM // SHARDS
INTER_S, VOCAB_S = INTER // SHARDS, VOCAB // SHARDS
BLOCK, NUM_BLOCKS, WARMUP_TOKENS = 16, 8192, 4096
KV_BLOCK_BYTES = BLOCK * KV_HEADS // SHARDS * HEAD_DIM * FP16
DECODE_STEPS, NCCL_BUF = 10, 4 * vtc.MIB


def alloc(s, n, cat):
    return job.mem_alloc(s, n, cat)


def free(s, *ptrs):
    job.mem_free(s, *ptrs)


def get_sharded(s, nbytes):
    """Weights.get_partial_sharded: the slice, then tensor.to(device)."""
    return job.upload(s, nbytes, "weights")


def get_multi_weights_col(s, pieces):
    """Each piece uploaded, then torch.cat(w, dim=0); the pieces dropped."""
    parts = [get_sharded(s, n) for n in pieces]
    fused = alloc(s, sum(pieces), "weights")
    off = 0
    for p, n in zip(parts, pieces):
        job.dtod(s, fused + off, p, n)
        off += n
    free(s, *parts)
    return fused


def load_model():
    """FlashQwen2ForCausalLM.__init__ on both shards, module by module."""
    params = [[] for _ in range(SHARDS)]

    def each(fn):
        for s in range(SHARDS):
            params[s].append(fn(s))
    each(lambda s: get_sharded(s, VOCAB_S * HID * FP16))            # embed_tokens
    for _ in range(LAYERS):
        each(lambda s: get_sharded(s, HID * FP16))                  # input_layernorm
        each(lambda s: get_multi_weights_col(
            s, [Q_ROWS * HID * FP16, KV_ROWS * HID * FP16, KV_ROWS * HID * FP16]))
        each(lambda s: get_multi_weights_col(
            s, [Q_ROWS * FP16, KV_ROWS * FP16, KV_ROWS * FP16]))      # qkv bias
        each(lambda s: get_sharded(s, HID * Q_ROWS * FP16))         # o_proj (dim 1)
        each(lambda s: get_sharded(s, HID * FP16))                  # post_attention_layernorm
        each(lambda s: get_multi_weights_col(s, [INTER_S * HID * FP16] * 2))  # gate_up
        each(lambda s: get_sharded(s, HID * INTER_S * FP16))        # down_proj (dim 1)
    each(lambda s: get_sharded(s, HID * FP16))                      # norm
    each(lambda s: get_sharded(s, VOCAB_S * HID * FP16))            # lm_head = embed_tokens
    return params


class Shard:
    def __init__(self, s):
        self.s = s
        self.inv_freq = alloc(s, HEAD_DIM // 2 * 4, "other")
        job.zero(s, self.inv_freq, HEAD_DIM // 2 * 4)
        self.cos_sin = []
        self.kv = []
        self.nccl = None

    def init_kv_cache(self, blocks):
        free(self.s, *self.kv)                                  # self.kv_cache = []
        self.kv = [alloc(self.s, blocks * KV_BLOCK_BYTES, "other")
                   for _ in range(LAYERS) for _kv in ("key", "value")]

    def update_cos_sin(self, max_pos):
        if not self.cos_sin or self.cos_sin[0] < max_pos:
            free(self.s, *self.cos_sin[1:])
            n = max_pos * HEAD_DIM // 2 * FP16
            self.cos_sin = [max_pos, alloc(self.s, n, "other"), alloc(self.s, n, "other")]


def all_reduce(shards, tensors, nbytes):
    for sh in shards:
        if sh.nccl is None:
            sh.nccl = alloc(sh.s, NCCL_BUF, "other")
    for sh in shards:
        other = 1 - sh.s
        n = min(nbytes, NCCL_BUF)
        job.peer(sh.s, sh.nccl, other, tensors[other], n)
        job.dtod(sh.s, tensors[sh.s], sh.nccl, n)


def forward(shards, tokens, heads):
    """One FlashQwen2 forward over `tokens` positions, `heads` logits rows."""
    def on_all(n, cat="activations"):
        return [alloc(sh.s, n, cat) for sh in shards]

    hidden = on_all(tokens * HID * FP16)                        # embedding (masked vocab half)
    all_reduce(shards, hidden, tokens * HID * FP16)
    residual = None
    for _ in range(LAYERS):
        normed = on_all(tokens * HID * FP16)
        if residual is None:
            residual = hidden
        else:
            for sh in shards:
                free(sh.s, hidden[sh.s])
        qkv = on_all(tokens * (Q_ROWS + 2 * KV_ROWS) * FP16)
        attn = on_all(tokens * Q_ROWS * FP16)                   # flash attn; K, V into the cache
        for sh in shards:
            free(sh.s, qkv[sh.s], normed[sh.s])
        o = on_all(tokens * HID * FP16)
        all_reduce(shards, o, tokens * HID * FP16)
        for sh in shards:
            free(sh.s, attn[sh.s])
        normed = on_all(tokens * HID * FP16)                    # add + post-attention norm
        gate_up = on_all(tokens * 2 * INTER_S * FP16)
        act = on_all(tokens * INTER_S * FP16)
        for sh in shards:
            free(sh.s, gate_up[sh.s], normed[sh.s])
        hidden = on_all(tokens * HID * FP16)
        all_reduce(shards, hidden, tokens * HID * FP16)
        for sh in shards:
            free(sh.s, act[sh.s], o[sh.s])
    final = on_all(heads * HID * FP16)                          # norm at the head indices
    logits = on_all(heads * VOCAB_S * FP16)
    full = on_all(heads * VOCAB * FP16)                         # all_gather
    for sh in shards:
        other = 1 - sh.s
        job.dtod(sh.s, full[sh.s] + sh.s * heads * VOCAB_S * FP16, logits[sh.s],
                 heads * VOCAB_S * FP16)
        job.peer(sh.s, full[sh.s] + other * heads * VOCAB_S * FP16, other, logits[other],
                 heads * VOCAB_S * FP16)
    for sh in shards:
        free(sh.s, hidden[sh.s], residual[sh.s], final[sh.s], logits[sh.s])
    nxt = on_all(heads * 8)                                     # argmax: next input_ids
    for sh in shards:
        free(sh.s, full[sh.s])
        job.dtoh(sh.s, nxt[sh.s], heads * 8)
    return nxt


def from_pb(shards, lengths):
    """FlashCausalLMBatch.from_pb on each shard: host tensors to the device."""
    t, k = sum(lengths), len(lengths)
    blocks = sum(-(-(n + DECODE_STEPS) // BLOCK) for n in lengths)
    batch = []
    for sh in shards:
        ids = job.upload(sh.s, t * 8, "prefetch")               # input_ids
        meta = [job.upload(sh.s, n, "other") for n in
                (t * 4, (k + 1) * 4, t * 8, k * max(1, blocks // k + 1) * 4, k * 4, k * 8)]
        batch.append((ids, meta))
    return batch


def serve(shards, lengths, decode_steps=DECODE_STEPS):
    batch = from_pb(shards, lengths)
    for sh in shards:
        sh.update_cos_sin(max(lengths) + DECODE_STEPS)
    nxt = forward(shards, sum(lengths), len(lengths))           # prefill
    for sh in shards:                                           # prefill ids dropped
        free(sh.s, batch[sh.s][0])
    for _ in range(decode_steps):
        new = forward(shards, len(lengths), len(lengths))
        for sh in shards:
            free(sh.s, nxt[sh.s])
        nxt = new
    for sh in shards:                                           # the batch finished
        free(sh.s, nxt[sh.s], *batch[sh.s][1])


def main():
    job.start(markers_default=False)
    job.open_devices(SHARDS)
    shards = [Shard(s) for s in range(SHARDS)]
    params = load_model()
    for sh in shards:                                           # warmup: the batch's blocks
        sh.init_kv_cache(WARMUP_TOKENS // BLOCK)
    serve(shards, [WARMUP_TOKENS], decode_steps=0)          # the profile prefill
    for sh in shards:                                           # free memory -> num_blocks
        sh.init_kv_cache(NUM_BLOCKS)
    rng = random.Random(5)
    for _ in range(6):
        lengths = [rng.randint(12, 900) for _ in range(rng.randint(1, 4))]
        serve(shards, lengths)
    for sh in shards:
        free(sh.s, *params[sh.s], *sh.kv, *sh.cos_sin[1:], sh.inv_freq, sh.nccl)
    job.line("no_finding whole_dataset_upload")
    for s in range(SHARDS):
        job.line("finding prefetch_depth %d 1 %d" % (s, WARMUP_TOKENS * 8))
    for s in range(SHARDS):
        job.line("steps %d 0" % s)
    job.finish()


main()
