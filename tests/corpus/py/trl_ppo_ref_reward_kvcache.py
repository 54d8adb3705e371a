#!/usr/bin/env python3
"""RLHF with TRL's (legacy, 0.7-0.10) `PPOTrainer` on one GPU: a GPT-2-shaped
policy (4 layers, d=768, vocabulary 50,257) wrapped as
`AutoModelForCausalLMWithValueHead`, its frozen reference made by
`create_reference_model`, and a frozen GPT-2-shaped reward model
(`GPT2ForSequenceClassification`, 4 layers, one label) loaded beside them;
batch 8, `mini_batch_size=4`, `ppo_epochs=2`, Adam over the policy and its
value head only, 6 PPO iterations, responses of 24 tokens sampled with the
KV cache, under PYTORCH_NO_CUDA_MEMORY_CACHING=1 (one cudaMalloc /
cudaFree per tensor).

What is modelled (sources: trl/trainer/ppo_trainer.py `PPOTrainer.__init__`
(`Adam(filter(lambda p: p.requires_grad, model.parameters()))`),
`generate` -> `_generate_batched` (batches of 4 prompts left-padded by
`tokenizer.pad(...).to(device)`: input_ids and attention_mask uploaded;
the outputs are views of each generation tensor), `step`
(`queries = [tensor.to(device)]` one upload per prompt,
`prepare_model_inputs`: `torch.cat([q, r])` per sample, the collator pads
on the host and the batch is uploaded (input_ids, attention_mask, labels
popped), `batched_forward_pass` for the policy and for the reference
(`mini_batch_size` chunks, `logprobs_from_logits`, masks by `zeros_like`,
chunks concatenated), `compute_rewards` (per sample `kl`,
`non_score_reward`, `clone` + the score), `compute_advantages` (the
reversed GAE loop, `stack`, `masked_whiten`), then per PPO epoch a
`np.random.permutation` and per minibatch `batch_dict[k][mini_batch_inds]`
(a numpy index: uploaded at each indexing), `batched_forward_pass` with
logits, `train_minibatch` -> `loss` (ratio, clipped losses,
`entropy_from_logits`), backward, `optimizer.step()`, `zero_grad()`);
trl/models/modeling_value_head.py (`ValueHead`: Linear(768, 1) on the
last hidden state); trl/models/modeling_base.py `create_reference_model`
(`deepcopy` of the wrapped model on the device, parameters frozen);
transformers models/gpt2/modeling_gpt2.py (`GPT2Attention`: the `bias`
causal-mask buffer, 1 x 1 x 1024 x 1024 bool, and `masked_bias` moved by
`.to(device)`; tied `lm_head`; `GPT2ForSequenceClassification` pooling the
last token); generation/utils.py `_sample` with `DynamicCache` (per layer
key and value `torch.cat`ed every token, the old ones dropped;
`softmax`, `multinomial`, `input_ids` and `attention_mask` re-made by
`cat`); torch/optim/adam.py `_multi_tensor_adam` (states at the first
step, a `_foreach_sqrt` temporary per parameter)). The reward comes from
the user loop: the prompt and response texts re-tokenised and uploaded
for the reward model, its logits kept as the scores. No markers (TRL
calls none), driver by cuGetProcAddress.

Truth: policy, value head, reference (device copies) and reward model
parameters weights; the causal-mask and `masked_bias` buffers (uploaded,
and copied for the reference) other; the KV cache other; Adam states
(policy and value head only) optimizer; `.grad`s gradients; every
per-iteration token upload (the padded prompts for generation, the
reward model's inputs, the per-prompt queries and the collated model
inputs) prefetch (depth 1: each set is freed or kept only through its
own phase, never two at once); the minibatch index uploads other;
generation, forward / backward, reward, advantage and Adam temporaries
activations. No dataset. 24 optimizer steps (6 iterations x 2 epochs x 2
minibatches). Coincidences: each layer's first key and value cache tensors
for a group whose longest prompt is 40 tokens (4 x 12 x 40 x 64 floats,
491,520 B, other) are the prefill's hidden states (4 x 40 x 768 floats,
activations); the value head's weight (3,072
B, weights) is each layer norm's weight and bias, their `.grad`s and
Adam states; a minibatch index upload (4 int64, 32 B, other) is a
4-prompt generation's `unfinished_sequences` (activations)."""
import random

import vtc

job = vtc.Job("trl_ppo_ref_reward_kvcache", "getproc", __doc__)
F32, I64 = 4, 8
D, HEADS, HD, LAYERS, VOCAB, NPOS = 768, 12, 64, 4, 50257, 1024
BATCH, MINI, EPOCHS, ITERS, NEW_TOKENS, GEN_BS = 8, 4, 2, 6, 24, 4


def alloc(n, cat="activations"):
    return job.mem_alloc(0, n, cat)


def free(*ptrs):
    job.mem_free(0, *ptrs)


def upload(n, cat):
    p = alloc(n, cat)
    job.htod(0, p, n)
    return p


def layer_sizes():
    return [D * F32, D * F32,                               # ln_1
            D * 3 * D * F32, 3 * D * F32,                   # attn.c_attn
            D * D * F32, D * F32,                           # attn.c_proj
            D * F32, D * F32,                               # ln_2
            D * 4 * D * F32, 4 * D * F32,                   # mlp.c_fc
            4 * D * D * F32, D * F32]                       # mlp.c_proj


class GPT2:
    def __init__(self, head):
        self.sizes = [VOCAB * D * F32, NPOS * D * F32]      # wte (tied lm_head), wpe
        for _ in range(LAYERS):
            self.sizes += layer_sizes()
        self.sizes += [D * F32, D * F32]                    # ln_f
        self.sizes += head                                  # v_head or score
        self.buf_sizes = [NPOS * NPOS, F32] * LAYERS        # attn.bias, attn.masked_bias
        self.ptrs, self.bufs, self.grads = [], [], []

    def to(self):
        self.ptrs = [upload(n, "weights") for n in self.sizes]
        self.bufs = [upload(n, "other") for n in self.buf_sizes]

    def deepcopy(self, other):
        """create_reference_model: device clones of every tensor."""
        self.ptrs = [alloc(n, "weights") for n in other.sizes]
        self.bufs = [alloc(n, "other") for n in other.buf_sizes]
        for dst, src, n in zip(self.ptrs + self.bufs, other.ptrs + other.bufs,
                               other.sizes + other.buf_sizes):
            job.dtod(0, dst, src, n)

    def blocks(self, B, L, Lk, saved, kv=None):
        """The embeddings and the blocks over B x L new tokens attending to Lk."""
        rows = B * L
        x = alloc(rows * D * F32)                           # wte(ids) + wpe(pos)
        pos = alloc(L * I64)                                # position_ids (arange)
        free(pos)
        for layer in range(LAYERS):
            ln1 = alloc(rows * D * F32)
            qkv = alloc(rows * 3 * D * F32)
            if kv is not None:                              # DynamicCache.update: cat
                for j in (0, 1):
                    new = alloc(B * HEADS * Lk * HD * F32, "other")
                    if kv[layer][j] is not None:
                        free(kv[layer][j])
                    kv[layer][j] = new
            scores = alloc(B * HEADS * L * Lk * F32)        # q @ k^T, masked by attn.bias
            probs = alloc(B * HEADS * L * Lk * F32)         # softmax
            ctx = alloc(rows * D * F32)                     # probs @ v, merged heads
            attn = alloc(rows * D * F32)                    # c_proj
            h = alloc(rows * D * F32)                       # residual
            ln2 = alloc(rows * D * F32)
            fc = alloc(rows * 4 * D * F32)
            act = alloc(rows * 4 * D * F32)                 # gelu_new
            mlp = alloc(rows * D * F32)
            out = alloc(rows * D * F32)
            if saved is None:
                free(x, ln1, qkv, scores, probs, ctx, attn, h, ln2, fc, act, mlp)
            else:
                saved += [x, ln1, qkv, probs, ctx, h, ln2, fc, act]
                free(scores, attn, mlp)
            x = out
        hf = alloc(rows * D * F32)                          # ln_f
        if saved is None:
            free(x)
        else:
            saved.append(x)
        return hf


def generate(policy, qlens):
    """_generate_batched: returns the generation tensors (responses are views)."""
    gens = []
    for g in range(0, BATCH, GEN_BS):
        Lq = max(qlens[g:g + GEN_BS])
        ids = upload(GEN_BS * Lq * I64, "prefetch")         # tokenizer.pad(...).to(device)
        mask = upload(GEN_BS * Lq * I64, "prefetch")
        unfinished = alloc(GEN_BS * I64)                    # unfinished_sequences
        kv = [[None, None] for _ in range(LAYERS)]
        L = Lq
        for t in range(NEW_TOKENS):
            new = Lq if t == 0 else 1
            h = policy.blocks(GEN_BS, new, L, None, kv)
            logits = alloc(GEN_BS * new * VOCAB * F32)      # lm_head
            free(h)
            last = alloc(GEN_BS * VOCAB * F32)              # logits[:, -1, :].float()
            probs = alloc(GEN_BS * VOCAB * F32)             # softmax
            nxt = alloc(GEN_BS * I64)                       # multinomial
            free(logits, last, probs)
            ids2 = alloc(GEN_BS * (L + 1) * I64)            # cat([input_ids, next_tokens])
            mask2 = alloc(GEN_BS * (L + 1) * I64)           # cat attention_mask
            eos = alloc(GEN_BS)                             # stopping criteria
            free(nxt, eos, ids, mask)
            ids, mask = ids2, mask2
            L += 1
        for layer in kv:
            free(*layer)
        free(mask, unfinished)
        gens.append(ids)
    return gens


def reward(rm, Lr):
    """The user loop: texts re-tokenised for the reward model, scores kept."""
    ids = upload(BATCH * Lr * I64, "prefetch")
    mask = upload(BATCH * Lr * I64, "prefetch")
    h = rm.blocks(BATCH, Lr, Lr, None)
    logits = alloc(BATCH * Lr * F32)                        # score(hidden)
    seq_len = alloc(BATCH * I64)                            # last non-pad token per row
    pooled = alloc(BATCH * F32)
    free(h, logits, seq_len, ids, mask)
    return pooled


def batched_forward_pass(model, L, keep_values):
    """No-grad chunks of MINI, concatenated: logprobs (and values, masks)."""
    parts = []
    for _ in range(BATCH // MINI):
        h = model.blocks(MINI, L, L, None)
        logits = alloc(MINI * L * VOCAB * F32)
        values = alloc(MINI * L * F32)                      # v_head
        lsm = alloc(MINI * (L - 1) * VOCAB * F32)           # log_softmax
        lp = alloc(MINI * (L - 1) * F32)                    # gather
        free(lsm, logits, h)
        masks = alloc(MINI * L * I64)                       # zeros_like(attention_mask)
        parts.append((lp, values, masks))
    out = [alloc(BATCH * (L - 1) * F32)]                    # cat(all_logprobs)
    if keep_values:
        out += [alloc(BATCH * (L - 1) * F32), alloc(BATCH * (L - 1) * I64)]
    for p in parts:
        free(*p)
    return out


def main():
    job.start(markers_default=False)
    job.open_devices(1)
    rng = random.Random(2024)
    vhead = [D * F32, F32]
    policy = GPT2(vhead)
    policy.to()                                             # from_pretrained(...).to(device)
    ref = GPT2(vhead)
    ref.deepcopy(policy)                                    # create_reference_model
    rm = GPT2([D * F32])                                    # score: Linear(768, 1, bias=False)
    rm.to()
    adam = None
    steps = 0
    first = None
    for it in range(ITERS):
        qlens = [rng.randrange(16, 41) for _ in range(BATCH)]
        qlens[0] = qlens[GEN_BS] = 40
        gens = generate(policy, qlens)
        if first is None:
            first = 2 * GEN_BS * max(qlens[:GEN_BS]) * I64
        scores = reward(rm, max(qlens) + NEW_TOKENS + 2)    # the texts re-tokenised
        # step(): queries moved one by one, model inputs collated and uploaded
        queries = [upload(q * I64, "prefetch") for q in qlens]
        cats = [alloc((q + NEW_TOKENS) * I64) for q in qlens]   # torch.cat([q, r])
        for c in cats:
            job.dtoh(0, c, 8)                               # the collator reads them back
        L = max(qlens) + NEW_TOKENS
        inputs = [upload(BATCH * L * I64, "prefetch"), upload(BATCH * L * I64, "prefetch")]
        labels = upload(BATCH * L * I64, "prefetch")        # popped
        free(labels, *cats)
        stacked = alloc(BATCH * F32)                        # the scores stacked
        logprobs, values, masks = batched_forward_pass(policy, L, True)
        (ref_logprobs,) = batched_forward_pass(ref, L, False)
        # compute_rewards
        per = []
        for _ in range(BATCH):
            kl = alloc((L - 1) * F32)
            nsr = alloc((L - 1) * F32)                      # -kl_ctl.value * kl
            r = alloc((L - 1) * F32)                        # clone, + score at the end
            free(kl)
            per += [nsr, r]
        rewards = alloc(BATCH * (L - 1) * F32)              # stack
        nsr_all = alloc(BATCH * (L - 1) * F32)
        free(*per)
        # compute_advantages: the reversed GAE loop
        tmp = []
        for _ in range(L - 1):
            tmp += [alloc(BATCH * F32), alloc(BATCH * F32)]     # delta, lastgaelam
        adv = alloc(BATCH * (L - 1) * F32)                  # stack(...).transpose(0, 1)
        free(*tmp)
        returns = alloc(BATCH * (L - 1) * F32)              # advantages + values
        white = alloc(BATCH * (L - 1) * F32)                # masked_whiten
        free(adv)
        adv = white
        batch_dict = [logprobs, values, masks, adv, returns]
        for epoch in range(EPOCHS):
            for mb in range(BATCH // MINI):
                picked = []
                for _ in batch_dict + inputs:               # batch_dict[k][mini_batch_inds]
                    idx = upload(MINI * I64, "other")
                    picked.append(alloc(MINI * L * I64))
                    free(idx)
                saved = []
                h = policy.blocks(MINI, L, L, saved)
                logits = alloc(MINI * L * VOCAB * F32)
                vpred = alloc(MINI * L * F32)
                lsm = alloc(MINI * (L - 1) * VOCAB * F32)   # logprobs_from_logits
                lp = alloc(MINI * (L - 1) * F32)
                saved += [h, logits, vpred, lsm, lp]
                loss_t = [alloc(MINI * (L - 1) * F32) for _ in range(8)]   # ratio, pg / vf losses
                ent_p = alloc(MINI * L * VOCAB * F32)       # entropy_from_logits: softmax
                ent_l = alloc(MINI * L * F32)               # logsumexp
                loss = alloc(F32)
                free(ent_p, ent_l)
                # backward
                if not policy.grads:
                    policy.grads = [alloc(n, "gradients") for n in reversed(policy.sizes)]
                g1 = alloc(MINI * L * VOCAB * F32)
                g2 = alloc(MINI * L * D * F32)
                free(g1)
                for _ in range(LAYERS):
                    ga = alloc(MINI * L * 4 * D * F32)
                    gb = alloc(MINI * L * D * F32)
                    free(g2, ga)
                    g2 = gb
                free(g2, *saved, *loss_t, loss, *picked)
                if adam is None:
                    adam = [alloc(n, "optimizer") for n in policy.sizes for _ in (0, 1)]
                sq = [alloc(n) for n in policy.sizes]       # _foreach_sqrt
                free(*sq)
                free(*policy.grads)                         # zero_grad()
                policy.grads = []
                steps += 1
        free(logprobs, values, masks, adv, returns, ref_logprobs, rewards, nsr_all, stacked,
             scores, *queries, *inputs, *gens)
    free(*policy.ptrs, *policy.bufs, *ref.ptrs, *ref.bufs, *rm.ptrs, *rm.bufs, *adam)
    job.line("no_finding whole_dataset_upload")
    job.line("finding prefetch_depth 0 1 %d" % first)
    job.line("steps 0 %d" % steps)
    job.finish()


main()
