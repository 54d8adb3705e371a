/* Speculative (assisted) decoding with Hugging Face transformers: a
 * Pythia-160m target and a Pythia-70m assistant in fp16, greedy, one prompt
 * at a time, over PyTorch's caching allocator.
 *
 * What is modelled (sources read: transformers generation/utils.py
 * `_assisted_decoding` (per round: candidates from the assistant, ONE target
 * forward over the last token and the candidates, `new_logits` cast to
 * float32, `argmax`, the number of matches read back with `.item()`,
 * `input_ids = torch.cat((input_ids, valid_tokens), dim=-1)`, the target's
 * cache cropped to the accepted length); generation/candidate_generator.py
 * `AssistedCandidateGenerator.get_candidates` (the assistant's cache cropped
 * with `_crop_past_key_values`, `assistant_model.generate(...)` for
 * `num_assistant_tokens` new tokens, 5 at first), `update_candidate_strategy`
 * ("heuristic": +2 after a round that accepted every candidate, -1 after
 * one that did not); cache_utils.py `DynamicCache.update`
 * (`torch.cat([self.key_cache[layer_idx], key_states], dim=-2)`: a new key
 * and a new value tensor per layer at every forward, the old ones dropped)
 * and `DynamicCache.crop` (`self.key_cache[idx][..., :max_length, :]`: a
 * view, nothing freed until the next cat replaces it);
 * models/gpt_neox/modeling_gpt_neox.py (`embed_in`, per layer
 * `input_layernorm`, fused `query_key_value`, the rotary embedding computed
 * per forward from `inv_freq`, SDPA, `dense`, `post_attention_layernorm`,
 * `mlp`, the parallel residual; `final_layer_norm`, `embed_out`);
 * modeling_utils.py `from_pretrained(torch_dtype=torch.float16)` then
 * `.to("cuda")`: one block and one upload per tensor; the tokenizer's
 * `input_ids` and `attention_mask` moved `.to("cuda")`; vtc_cache for the
 * allocator):
 *  - both models loaded (target, then assistant), each one's non-persistent
 *    rotary `inv_freq` buffer with it;
 *  - 3 prompts (96, 40 and 160 tokens), 64 new tokens each: the prompt's
 *    ids and mask uploaded; rounds of assistant forwards (the first over
 *    what its cache lacks, then one token each) and one target forward;
 *    acceptance varies by round; both caches and every tensor of the
 *    generate call dropped when it returns; the output read back.
 * No markers, driver by dlsym.
 *
 * Truth: caching segments by what they held (one kind, else pool with
 * parts): both models' parameters weights; `inv_freq` other (a constant
 * table); the KV caches of both models other (README convention); the
 * uploaded ids and mask prefetch (one prompt on the device at a time:
 * depth 1); ids made on the device, rotary tables, every forward tensor
 * and the logits activations. No dataset; 0 steps. Coincidences: the
 * target's embed_in and embed_out are one size (50304 x 768 fp16), as are
 * the assistant's; a layer's key and value tensors are always one size;
 * the assistant's mlp weights (2048 x 512 fp16) are exactly 2 MiB. */
#include "vtc_pool.h"

#define MAXL 12
#define MAXN 256

struct model {
	const char *name;
	uint64_t layers, d, vocab;
	CUdeviceptr param[MAXN], inv_freq;
	uint64_t pbytes[MAXN];
	int np;
	/* DynamicCache: per layer a key and a value tensor of `kv_len` tokens
	 * (after a crop the tensor is larger than its view) */
	CUdeviceptr key[MAXL], val[MAXL];
	uint64_t kv_len;
};

static struct vtc_cache cache;
static const uint64_t VOCAB = 50304, MAX_NEW = 64;

static CUdeviceptr act(uint64_t bytes)
{
	return vtc_cache_alloc(&cache, bytes, VTC_ACTIVATIONS);
}

static void drop(CUdeviceptr p)
{
	vtc_cache_free(&cache, p);
}

static void add(struct model *m, uint64_t elems)
{
	m->pbytes[m->np++] = elems * 2;
}

/* from_pretrained(torch_dtype=float16).to("cuda"): parameters in module
 * order; the model's one rotary embedding (after final_layer_norm) brings
 * its non-persistent `inv_freq` buffer, and embed_out comes last */
static void load(struct model *m)
{
	uint64_t d = m->d;
	add(m, m->vocab * d); /* embed_in */
	for (uint64_t l = 0; l < m->layers; l++) {
		add(m, d), add(m, d);             /* input_layernorm */
		add(m, d), add(m, d);             /* post_attention_layernorm */
		add(m, 3 * d * d), add(m, 3 * d); /* attention.query_key_value */
		add(m, d * d), add(m, d);         /* attention.dense */
		add(m, 4 * d * d), add(m, 4 * d); /* mlp.dense_h_to_4h */
		add(m, 4 * d * d), add(m, d);     /* mlp.dense_4h_to_h */
	}
	add(m, d), add(m, d); /* final_layer_norm */
	add(m, m->vocab * d); /* embed_out */
	for (int i = 0; i < m->np; i++) {
		m->param[i] = vtc_cache_alloc(&cache, m->pbytes[i], VTC_WEIGHTS);
		vtc_htod(0, m->param[i], m->pbytes[i]);
		if (i ==
		    m->np - 2) { /* gpt_neox.rotary_emb.inv_freq: 8 float32 (rotary_pct 0.25) */
			m->inv_freq = vtc_cache_alloc(&cache, 8 * 4, VTC_OTHER);
			vtc_htod(0, m->inv_freq, 8 * 4);
		}
	}
}

static void unload(struct model *m)
{
	for (int i = 0; i < m->np; i++)
		drop(m->param[i]);
	drop(m->inv_freq);
}

/* DynamicCache.update: cat the n new tokens to each layer's key and value */
static void cache_cat(struct model *m, int l, uint64_t n)
{
	uint64_t bytes = (m->kv_len + n) * m->d * 2;
	CUdeviceptr k = vtc_cache_alloc(&cache, bytes, VTC_OTHER);
	CUdeviceptr v = vtc_cache_alloc(&cache, bytes, VTC_OTHER);
	if (m->key[l]) {
		drop(m->key[l]);
		drop(m->val[l]);
	}
	m->key[l] = k;
	m->val[l] = v;
}

static void cache_drop(struct model *m)
{
	for (uint64_t l = 0; l < m->layers; l++)
		if (m->key[l]) {
			drop(m->key[l]);
			drop(m->val[l]);
			m->key[l] = m->val[l] = 0;
		}
	m->kv_len = 0;
}

/* one forward over n new tokens; returns the float32 logits of the tokens
 * the caller reads (last_only: the last one, else all n) */
static CUdeviceptr forward(struct model *m, uint64_t n, int last_only)
{
	uint64_t d = m->d, h = n * d * 2;
	CUdeviceptr pos = act(n * 8); /* cache_position / position_ids: arange */
	CUdeviceptr x = act(h);       /* embed_in */
	/* rotary: inv_freq @ positions, cat, cos, sin (shared by the layers) */
	CUdeviceptr fr = act(n * 8 * 4), emb = act(n * 16 * 4);
	CUdeviceptr cosv = act(n * 16 * 2), sinv = act(n * 16 * 2);
	drop(fr);
	drop(emb);
	for (uint64_t l = 0; l < m->layers; l++) {
		CUdeviceptr ln = act(h), qkv = act(3 * h);
		CUdeviceptr q = act(h), k = act(h); /* apply_rotary_pos_emb: new q, k */
		cache_cat(m, (int)l, n);
		CUdeviceptr o = act(h); /* scaled_dot_product_attention */
		drop(q);
		drop(k);
		drop(qkv);
		drop(ln);
		CUdeviceptr a = act(h); /* dense */
		drop(o);
		CUdeviceptr ln2 = act(h), f = act(4 * h), g = act(4 * h); /* mlp */
		drop(ln2);
		drop(f);
		CUdeviceptr mo = act(h);
		drop(g);
		CUdeviceptr y = act(h); /* x + attn + mlp (use_parallel_residual) */
		drop(mo);
		drop(a);
		drop(x);
		x = y;
	}
	m->kv_len += n;
	CUdeviceptr fl = act(h);
	drop(x);
	CUdeviceptr logits = act(n * m->vocab * 2); /* embed_out */
	drop(fl);
	uint64_t rows = last_only ? 1 : n;
	CUdeviceptr f32 = act(rows * m->vocab * 4); /* [:, -rows:].float() */
	drop(logits);
	drop(pos);
	drop(cosv);
	drop(sinv);
	return f32;
}

/* the assistant's candidates: its cache cropped to what was accepted, a
 * first forward over the tokens it lacks, then one token per forward */
static CUdeviceptr get_candidates(struct model *a, uint64_t cur_len, uint64_t k)
{
	if (a->kv_len > cur_len - 1)
		a->kv_len = cur_len - 1; /* _crop_past_key_values: views */
	uint64_t n = cur_len - a->kv_len;
	CUdeviceptr ids = 0;
	for (uint64_t t = 0; t < k; t++) {
		CUdeviceptr lg = forward(a, t == 0 ? n : 1, 1);
		CUdeviceptr nt = act(8); /* argmax */
		drop(lg);
		CUdeviceptr grown = act((cur_len + t + 1) * 8); /* torch.cat((input_ids, next)) */
		if (ids)
			drop(ids);
		drop(nt);
		ids = grown;
	}
	return ids;
}

static void generate(struct model *t, struct model *a, uint64_t prompt, const int *accept,
                     int naccept)
{
	/* tokenizer(..., return_tensors="pt").to("cuda") */
	CUdeviceptr ids = vtc_cache_alloc(&cache, prompt * 8, VTC_PREFETCH);
	vtc_htod(0, ids, prompt * 8);
	CUdeviceptr mask = vtc_cache_alloc(&cache, prompt * 8, VTC_PREFETCH);
	vtc_htod(0, mask, prompt * 8);
	uint64_t cur = prompt, k = 5;
	int round = 0;
	CUdeviceptr out = ids;
	while (cur < prompt + MAX_NEW) {
		if (cur + k > prompt + MAX_NEW)
			k = prompt + MAX_NEW - cur;
		CUdeviceptr cand = get_candidates(a, cur, k);
		/* the target over what its cache lacks: the last token and the
		 * candidates (the whole prompt at the first round) */
		uint64_t n = cur + k - t->kv_len;
		CUdeviceptr lg = forward(t, n, 0);
		CUdeviceptr sel = act(n * 8);              /* new_logits.argmax(dim=-1) */
		CUdeviceptr eq = act(k), cum = act(k * 8); /* ~(candidates == selected)).cumsum */
		vtc_dtoh(0, cum, 8);                       /* n_matches.item() */
		uint64_t matches = (uint64_t)accept[round % naccept];
		if (matches > k)
			matches = k;
		drop(eq);
		drop(cum);
		drop(lg);
		CUdeviceptr grown = act((cur + matches + 1) * 8); /* cat(input_ids, valid_tokens) */
		drop(sel);
		drop(cand);
		if (out != ids)
			drop(out);
		out = grown;
		cur += matches + 1;
		if (t->kv_len > cur - 1)
			t->kv_len = cur - 1; /* the target's cache cropped: views */
		k = matches == k ? k + 2 : (k > 1 ? k - 1 : 1);
		round++;
	}
	vtc_dtoh(0, out, cur * 8); /* tokenizer.decode(output[0]) */
	drop(out);
	drop(ids);
	drop(mask);
	cache_drop(t);
	cache_drop(a);
}

int main(int argc, char **argv)
{
	vtc_start(argc, argv, "spec_decode_draft", 1, VTC_DLSYM);
	vtc_cache_init(&cache, 0);
	static struct model target = {.name = "pythia-160m", .layers = 12, .d = 768};
	static struct model assistant = {.name = "pythia-70m", .layers = 6, .d = 512};
	target.vocab = assistant.vocab = VOCAB;
	load(&target);
	load(&assistant);
	static const int accept[] = {5, 2, 7, 7, 0, 3, 9, 1, 4, 6, 2, 8};
	const uint64_t prompts[] = {96, 40, 160};
	for (int p = 0; p < 3; p++)
		generate(&target, &assistant, prompts[p], accept + p, 12 - p);
	unload(&assistant);
	unload(&target);
	vtc_cache_empty(&cache);
	vtc_line("no_finding whole_dataset_upload");
	vtc_line("finding prefetch_depth 0 1 %llu", (unsigned long long)(2 * 160 * 8));
	vtc_line("steps 0 0");
	vtc_finish();
	return 0;
}
