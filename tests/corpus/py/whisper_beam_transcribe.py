#!/usr/bin/env python3
"""openai-whisper `transcribe` of a 90-second recording with the tiny model,
fp16 decoding, beam search (beam_size=5) and one temperature fallback to
best-of-5 sampling, PYTORCH_NO_CUDA_MEMORY_CACHING=1 (one cudaMalloc per
tensor).

What is modelled (sources read: whisper/__init__.py `load_model`
(`torch.load(fp, map_location=device)`: the fp16 checkpoint's tensors each
put on the device; `Whisper(dims)` built on the host, `load_state_dict`
copying the device tensors into its float32 parameters, `set_alignment_heads`
(a sparse bool buffer), `model.to(device)`; the checkpoint dropped when
`load_model` returns); whisper/model.py (`Linear.forward` and
`Conv1d._conv_forward` cast the float32 weight and bias to the input's
dtype at EVERY call, `LayerNorm.forward` runs in float32 (`x.float()`, then
`.type(x.dtype)`), `MultiHeadAttention.forward` (cross-attention keys and
values computed once per decode and taken from the cache after),
`qkv_attention` (q and k scaled into new tensors, `qk + mask`,
`softmax(qk.float())`, `.to(q.dtype)`), `TextDecoder.forward` (token and
positional embeddings in float32, `.to(xa.dtype)`, logits through
`token_embedding.weight.to(x.dtype)` then `.float()`),
`install_kv_cache_hooks` (`torch.cat([cache, output], dim=1)` per step, the
old tensor freed)); whisper/decoding.py (`DecodingTask.run`:
`audio_features.repeat_interleave(n_group)`, `tokens.repeat_interleave(
n_group).to(device)`; `_main_loop` (`sum_logprobs` zeros); `SuppressBlank`,
`SuppressTokens` (`logits[:, list] = -inf`: the list becomes an index
tensor put on the device), `ApplyTimestampRules` (rows read back, a float32
log-softmax); `BeamSearchDecoder.update` (log-softmax, per beam a row read
back and `topk`, `torch.tensor(next_tokens, device=...)`),
`PyTorchInference.rearrange_kv_cache` (`tensor[source_indices]` for every
cached key and value, cross-attention ones included: new tensors, the list
put on the device); `GreedyDecoder.update` with temperature (`logits /
temperature`, `Categorical(...).sample()`, `logprobs[torch.arange(n),
next_tokens]`); `cleanup_caching` (the cache dropped)); whisper/transcribe.py
(the log-mel spectrogram of the whole file computed on the host; per
30-second window `pad_or_trim(mel_segment).to(model.device).to(dtype)`;
`decode_with_fallback`; the previous window's result, which holds the
repeated audio features, replaced only when the next decode returns)):
  - `load_model("tiny")`: fp16 checkpoint tensors uploaded in state_dict
    order, then the float32 parameters and buffers uploaded by
    `model.to` (children first), then the checkpoint freed;
  - 3 windows: the mel window uploaded (80 x 3000 float32) and cast to
    fp16 (the float32 copy freed), the encoder (conv, 4 blocks), then the
    beam-search decode: 5 beams, 20 token steps (the first over the 4
    initial tokens, or over the prompt from the previous window and them);
    the second window's beam result is rejected (compression ratio) and
    decoded again by best-of-5 sampling at temperature 0.2 (the encoder
    runs again).
No markers, driver by cuGetProcAddress (libcudart).

Truth: the checkpoint's fp16 tensors, the float32 parameters and the
encoder's positional embedding weights; the decoder's causal mask and the
alignment-heads buffer other; the uploaded mel window and its fp16 copy
prefetch (one window on the device at a time: depth 1); the KV cache (self-
and cross-attention keys and values) other (README convention); token
tensors and index lists put on the device other; the per-call fp16 weight
and bias casts (the token embedding's 39.8 MB copy at every decode step
among them) activations, as are every encoder and decoder tensor, the audio
features, logits, log-softmaxes and topk results. No dataset; 0 steps.
Coincidences: each cross-attention key and value (5 x 1500 x 384 fp16) is
exactly the repeated audio features; the fp16 cast of a 384 x 384 weight
is exactly a checkpoint tensor of the same weight and half the float32
parameter; the float32 mel window is exactly twice its fp16 copy."""
import vtc

job = vtc.Job("whisper_beam_transcribe", "getproc", __doc__)
N_MELS, N_FRAMES, A_CTX, T_CTX, V = 80, 3000, 1500, 448, 51865
D, HEADS, LAYERS = 384, 6, 4
BEAMS, TOKENS = 5, 20
INITIAL = 4          # sot, language, task, and the first timestamp rule's prefix
SUPPRESS = 90        # SuppressTokens' list (non-speech tokens and specials)


def empty(n, cat):
    return job.mem_alloc(0, n, cat)


def free(*ptrs):
    job.mem_free(0, *ptrs)


def block_params(pre, cross):
    attn = [("query.weight", D * D), ("query.bias", D), ("key.weight", D * D),
            ("value.weight", D * D), ("value.bias", D), ("out.weight", D * D), ("out.bias", D)]
    out = [(pre + "attn." + n, e) for n, e in attn]
    out += [(pre + "attn_ln.weight", D), (pre + "attn_ln.bias", D)]
    if cross:
        out += [(pre + "cross_attn." + n, e) for n, e in attn]
        out += [(pre + "cross_attn_ln.weight", D), (pre + "cross_attn_ln.bias", D)]
    out += [(pre + "mlp.0.weight", 4 * D * D), (pre + "mlp.0.bias", 4 * D),
            (pre + "mlp.2.weight", 4 * D * D), (pre + "mlp.2.bias", D),
            (pre + "mlp_ln.weight", D), (pre + "mlp_ln.bias", D)]
    return out


def state_dict_order():
    """(name, elements): each module's own parameters and persistent
    buffers, then its children."""
    out = [("encoder.positional_embedding", A_CTX * D), ("encoder.conv1.weight", D * N_MELS * 3),
           ("encoder.conv1.bias", D), ("encoder.conv2.weight", D * D * 3),
           ("encoder.conv2.bias", D)]
    for i in range(LAYERS):
        out += block_params("encoder.blocks.%d." % i, False)
    out += [("encoder.ln_post.weight", D), ("encoder.ln_post.bias", D),
            ("decoder.positional_embedding", T_CTX * D), ("decoder.token_embedding.weight", V * D)]
    for i in range(LAYERS):
        out += block_params("decoder.blocks.%d." % i, True)
    out += [("decoder.ln.weight", D), ("decoder.ln.bias", D)]
    return out


def apply_order(sd):
    """Module._apply: children first, then the module's own tensors."""
    names = [n for n, _e in sd]
    enc_own = ["encoder.positional_embedding"]
    dec_own = ["decoder.positional_embedding"]
    enc = [n for n in names if n.startswith("encoder.") and n not in enc_own] + enc_own
    dec = [n for n in names if n.startswith("decoder.") and n not in dec_own] + dec_own
    return enc + dec


class Whisper:
    def __init__(self):
        self.sd = state_dict_order()
        self.elems = dict(self.sd)
        self.dev = {}
        self.buffers = []

    def to(self):
        for name in apply_order(self.sd):
            self.dev[name] = job.upload(0, self.elems[name] * 4, "weights")
            if name == "decoder.positional_embedding":
                self.buffers.append(job.upload(0, T_CTX * T_CTX * 4, "other"))  # decoder.mask
        self.buffers.append(job.upload(0, 2 * 8 * 8, "other"))  # alignment_heads: sparse indices
        self.buffers.append(job.upload(0, 8, "other"))  # ... and values
        return self


def linear(n_rows, din, dout, bias=True):
    """whisper Linear: the weight (and bias) cast to fp16 for the call."""
    w = empty(din * dout * 2, "activations")
    b = empty(dout * 2, "activations") if bias else None
    out = empty(n_rows * dout * 2, "activations")
    free(w)
    if b:
        free(b)
    return out


def layer_norm(n_rows):
    f = empty(n_rows * D * 4, "activations")  # x.float()
    y = empty(n_rows * D * 4, "activations")
    out = empty(n_rows * D * 2, "activations")  # .type(x.dtype)
    free(f, y)
    return out


def qkv_attention(batch, q_len, k_len, q, k_bytes, masked=False):
    qs = empty(batch * q_len * D * 2, "activations")  # q * scale
    ks = empty(k_bytes, "activations")  # k * scale (from the cache)
    qk = empty(batch * HEADS * q_len * k_len * 2, "activations")
    tmp = [qs, ks]
    if masked:  # the decoder's self-attention: qk + mask[:n_ctx, :n_ctx]
        m = empty(batch * HEADS * q_len * k_len * 2, "activations")
        free(qk)
        qk = m
    f = empty(batch * HEADS * q_len * k_len * 4, "activations")  # qk.float()
    sm = empty(batch * HEADS * q_len * k_len * 4, "activations")
    w = empty(batch * HEADS * q_len * k_len * 2, "activations")  # .to(q.dtype)
    free(qk, f, sm)
    wv = empty(batch * q_len * D * 2, "activations")
    flat = empty(batch * q_len * D * 2, "activations")  # permute + flatten
    free(w, wv, q, *tmp)
    return flat


def out_residual(rows, a, h):
    """x + attn.out(a): the projection, then the sum (x and a freed)."""
    o = linear(rows, D, D)
    free(a)
    out = empty(rows * D * 2, "activations")
    free(o, h)
    return out


def mlp_residual(rows, h):
    """x + mlp(mlp_ln(x)): Linear, GELU, Linear, then the sum (x freed)."""
    ln = layer_norm(rows)
    m1 = linear(rows, D, 4 * D)
    free(ln)
    g = empty(rows * 4 * D * 2, "activations")
    free(m1)
    m2 = linear(rows, 4 * D, D)
    free(g)
    out = empty(rows * D * 2, "activations")
    free(m2, h)
    return out


def encoder(n):
    x1 = empty(n * D * N_FRAMES * 2, "activations")  # conv1 (casts inside)
    cw = empty(D * N_MELS * 3 * 2, "activations")
    free(cw)
    g1 = empty(n * D * N_FRAMES * 2, "activations")  # gelu
    free(x1)
    cw = empty(D * D * 3 * 2, "activations")
    x2 = empty(n * D * A_CTX * 2, "activations")  # conv2
    free(cw, g1)
    g2 = empty(n * D * A_CTX * 2, "activations")
    free(x2)
    x = empty(n * A_CTX * D * 4, "activations")  # + positional_embedding (float32)
    free(g2)
    h = empty(n * A_CTX * D * 2, "activations")  # .to(x.dtype)
    free(x)
    rows = n * A_CTX
    for _i in range(LAYERS):
        ln = layer_norm(rows)
        q = linear(rows, D, D)
        k = linear(rows, D, D, bias=False)
        v = linear(rows, D, D)
        a = qkv_attention(n, A_CTX, A_CTX, q, rows * D * 2)
        free(k, v, ln)
        h = mlp_residual(rows, out_residual(rows, a, h))
    out = layer_norm(rows)  # ln_post
    free(h)
    return out


class Decode:
    """DecodingTask.run for one 30-second window."""

    def __init__(self, model, beam, prompt):
        self.model = model
        self.beam = beam
        self.initial = INITIAL + prompt
        self.cache = {}  # (layer, kind) -> (ptr, bytes)

    def save_to_cache(self, key, out, nbytes):
        if key not in self.cache:
            self.cache[key] = (out, nbytes)
            return
        old, ob = self.cache[key]
        new = empty(ob + nbytes, "other")  # torch.cat([cache, output], dim=1)
        free(old, out)
        self.cache[key] = (new, ob + nbytes)

    def decoder(self, tokens_len, audio):
        n = BEAMS
        q_len = tokens_len
        rows = n * q_len
        emb = empty(rows * D * 4, "activations")  # token_embedding(x)
        x = empty(rows * D * 4, "activations")  # + positional_embedding[...]
        free(emb)
        h = empty(rows * D * 2, "activations")  # .to(xa.dtype)
        free(x)
        for i in range(LAYERS):
            ln = layer_norm(rows)
            q = linear(rows, D, D)
            k = linear(rows, D, D, bias=False)  # the hook keeps it in the cache
            self.save_to_cache((i, "k"), k, rows * D * 2)
            v = linear(rows, D, D)
            self.save_to_cache((i, "v"), v, rows * D * 2)
            k_len = self.cache[(i, "k")][1] // (n * D * 2)
            a = qkv_attention(n, q_len, k_len, q, self.cache[(i, "k")][1], masked=True)
            free(ln)
            h = out_residual(rows, a, h)
            ln = layer_norm(rows)
            q = linear(rows, D, D)
            if (i, "xk") not in self.cache:  # cross-attention: once per decode
                self.cache[(i, "xk")] = (linear(n * A_CTX, D, D, bias=False), n * A_CTX * D * 2)
                self.cache[(i, "xv")] = (linear(n * A_CTX, D, D), n * A_CTX * D * 2)
            a = qkv_attention(n, q_len, A_CTX, q, n * A_CTX * D * 2)
            free(ln)
            h = mlp_residual(rows, out_residual(rows, a, h))
        ln = layer_norm(rows)
        free(h)
        wt = empty(V * D * 2, "activations")  # token_embedding.weight.to(x.dtype)
        lg = empty(rows * V * 2, "activations")
        free(wt, ln)
        logits = empty(rows * V * 4, "activations")  # .float()
        free(lg)
        return logits

    def run(self, mel):
        audio = encoder(1)
        rep = empty(BEAMS * A_CTX * D * 2, "activations")  # repeat_interleave(n_group)
        free(audio)
        tokens = job.upload(0, BEAMS * self.initial * 8, "other")  # .to(audio_features.device)
        sum_logprobs = empty(BEAMS * 4, "activations")
        job.zero(0, sum_logprobs, BEAMS * 4)
        length = self.initial
        for i in range(TOKENS):
            logits = self.decoder(length if i == 0 else 1, rep)
            # logit filters on logits[:, -1]
            if i == 0:
                blank = job.upload(0, 2 * 8, "other")  # SuppressBlank: encode(" ") + [eot]
                free(blank)
            idx = job.upload(0, SUPPRESS * 8, "other")  # SuppressTokens
            free(idx)
            job.dtoh(0, tokens, BEAMS * length * 8)  # timestamp rules: rows .tolist()
            ts = empty(BEAMS * V * 4, "activations")  # log_softmax(logits.float())
            free(ts)
            lp = empty(BEAMS * V * 4, "activations")  # log_softmax in update
            if self.beam:
                for b in range(BEAMS):
                    job.dtoh(0, tokens + b * length * 8, length * 8)  # tokens[idx].tolist()
                    vals = empty((BEAMS + 1) * 4, "activations")
                    inds = empty((BEAMS + 1) * 8, "activations")
                    job.dtoh(0, vals, (BEAMS + 1) * 4)
                    free(vals, inds)
                # torch.tensor(next_tokens, device=tokens.device)
                new = job.upload(0, BEAMS * (length + 1) * 8, "other")
                free(tokens)
                tokens = new
                for key in list(self.cache):  # rearrange_kv_cache
                    old, nb = self.cache[key]
                    sel = job.upload(0, BEAMS * 8, "other")  # source_indices
                    g = empty(nb, "other")
                    free(sel, old)
                    self.cache[key] = (g, nb)
            else:  # GreedyDecoder at temperature 0.2, best_of=5
                scaled = empty(BEAMS * V * 4, "activations")  # logits / temperature
                probs = empty(BEAMS * V * 4, "activations")  # Categorical(logits=...)
                nxt = empty(BEAMS * 8, "activations")  # .sample()
                free(scaled, probs)
                ar = job.upload(0, BEAMS * 8, "other")  # torch.arange(n) indexing on the device
                cur = empty(BEAMS * 4, "activations")
                free(ar)
                ne = empty(BEAMS, "activations")  # tokens[:, -1] != eot
                prod = empty(BEAMS * 4, "activations")
                free(ne, prod, cur)
                new = empty(BEAMS * (length + 1) * 8, "activations")  # torch.cat([tokens, next])
                free(tokens, nxt)
                tokens = new
            free(lp, logits)
            length += 1
        job.dtoh(0, sum_logprobs, BEAMS * 4)
        free(tokens, sum_logprobs)
        for p, _nb in self.cache.values():  # cleanup_caching
            free(p)
        self.cache = {}
        return rep  # the result's audio_features keep the repeated tensor


def load_model():
    sd = state_dict_order()
    ckpt = [job.upload(0, e * 2, "weights") for _n, e in sd]  # torch.load(map_location="cuda")
    model = Whisper()
    for p, (_n, e) in zip(ckpt, sd):  # load_state_dict into the host model
        job.dtoh(0, p, e * 2)
    model.to()
    free(*ckpt)  # the checkpoint goes when load_model returns
    return model


def main():
    job.start(markers_default=False)
    job.open_devices(1)
    model = load_model()
    pinned = job.pinned(N_MELS * N_FRAMES * 4)
    result = None
    prompt = 0
    for window in range(3):
        seg32 = job.upload(0, N_MELS * N_FRAMES * 4, "prefetch")  # .to(model.device)
        mel = empty(N_MELS * N_FRAMES * 2, "prefetch")  # .to(dtype)
        free(seg32)
        passes = [True, False] if window == 1 else [True]  # decode_with_fallback
        decoded = None
        for beam in passes:
            out = Decode(model, beam, prompt).run(mel)
            if decoded is not None:
                free(decoded)
            decoded = out
        free(mel)
        if result is not None:
            free(result)
        result = decoded
        prompt = min(prompt + TOKENS, 60)
    free(result)
    job.call("cuMemFreeHost", pinned)
    free(*model.dev.values(), *model.buffers)
    job.line("no_finding whole_dataset_upload")
    job.line("finding prefetch_depth 0 1 %d" % (N_MELS * N_FRAMES * 4))
    job.line("steps 0 0")
    job.finish()


main()
