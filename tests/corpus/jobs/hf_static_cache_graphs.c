/* transformers `generate` with a static KV cache and the compiled decode
 * step captured in CUDA graphs (TinyLlama-1.1B shape, fp16,
 * `cache_implementation="static"`, compile mode "reduce-overhead"), three
 * generate calls of 64 new tokens: batches of 4, 4 and then 8 prompts of
 * 64 tokens, over the CUDACachingAllocator (vtc_cache) and the graphs'
 * private memory pools (a second vtc_cache per captured graph).
 *
 * What is modelled (sources read: transformers generation/utils.py
 * `generate` -> `_prepare_cache_for_generation` / `_get_cache` (a
 * StaticCache kept on the model and `reset()` (zeroed in place) when the
 * batch size and max length still fit, a new one otherwise), `_sample`
 * (prefill run eagerly, the decode step through the compiled forward,
 * `next_token_logits = outputs.logits[:, -1, :].to(copy=True,
 * dtype=torch.float32)`, argmax, `torch.cat` of input_ids and the
 * attention mask per token); cache_utils.py `StaticCache` (per layer key
 * and value `torch.zeros((batch, kv_heads, max_cache_len, head_dim))` made
 * on the device, `index_copy_` in place); modeling_llama.py
 * (`LlamaRotaryEmbedding.inv_freq` buffer, `logits_to_keep`);
 * modeling_utils.py `from_pretrained(device_map="cuda")` (each tensor
 * copied to the device as it is loaded); torch/_inductor/cudagraph_trees.py
 * (one warm-up run, then capture into a private pool; inputs that are not
 * static copied into the graph's own input buffers before each replay;
 * the outputs live in the pool and are overwritten by the next replay);
 * CUDACachingAllocator.cpp `beginAllocateToPool` (a private pool's
 * segments are its own)).
 * No markers, driver linked directly.
 *
 * Truth: parameters weights; the static KV caches and `inv_freq` other
 * (the README's KV cache rule); prompts (input_ids, attention_mask)
 * prefetch (depth 1, 2,048 B each for 4 prompts); every eager temporary
 * and everything in the graphs' pools (their input copies, intermediates
 * and outputs) activations. Segments by kind or pool. No dataset; 0 steps.
 * Coincidences: a layer's k_proj and v_proj (2048 x 256 fp16 = 1 MiB) are
 * each the size of one layer's key cache for 4 prompts (4 x 4 x 512 x 64
 * fp16); the 8-prompt caches are exactly twice that; a captured logits
 * output (4 x 32000 fp32 = 512,000 B) is the same size as the eager
 * float copy of it.
 */
#include "vtc.h"
#include "vtc_pool.h"

#define LAYERS 22
#define DM 2048ull
#define KV 256ull
#define FF 5632ull
#define VOCAB 32000ull
#define MAXLEN 512ull
#define PROMPT 64ull
#define NEW 64

static struct vtc_cache C, G[2];

static CUdeviceptr act(uint64_t bytes)
{
	return vtc_cache_alloc(&C, bytes, VTC_ACTIVATIONS);
}

static void drop(CUdeviceptr p)
{
	vtc_cache_free(&C, p);
}

/* one forward of q tokens for b prompts: intermediates per layer */
static void forward_layers(struct vtc_cache *pool, uint64_t b, uint64_t q)
{
	CUdeviceptr h = vtc_cache_alloc(pool, b * q * DM * 2, VTC_ACTIVATIONS);
	for (int l = 0; l < LAYERS; l++) {
		CUdeviceptr n = vtc_cache_alloc(pool, b * q * DM * 2, VTC_ACTIVATIONS);
		CUdeviceptr qs = vtc_cache_alloc(pool, b * q * DM * 2, VTC_ACTIVATIONS);
		CUdeviceptr ks = vtc_cache_alloc(pool, b * q * KV * 2, VTC_ACTIVATIONS);
		CUdeviceptr vs = vtc_cache_alloc(pool, b * q * KV * 2, VTC_ACTIVATIONS);
		CUdeviceptr sc = vtc_cache_alloc(pool, b * 32 * q * MAXLEN * 2, VTC_ACTIVATIONS);
		CUdeviceptr o = vtc_cache_alloc(pool, b * q * DM * 2, VTC_ACTIVATIONS);
		CUdeviceptr gu = vtc_cache_alloc(pool, b * q * FF * 2 * 2, VTC_ACTIVATIONS);
		CUdeviceptr m = vtc_cache_alloc(pool, b * q * FF * 2, VTC_ACTIVATIONS);
		CUdeviceptr h2 = vtc_cache_alloc(pool, b * q * DM * 2, VTC_ACTIVATIONS);
		CUdeviceptr dead[] = {n, qs, ks, vs, sc, o, gu, m, h};
		for (unsigned i = 0; i < sizeof dead / sizeof dead[0]; i++)
			vtc_cache_free(pool, dead[i]);
		h = h2;
	}
	vtc_cache_free(pool, h);
}

int main(int argc, char **argv)
{
	vtc_start(argc, argv, "hf_static_cache_graphs", 1, VTC_DIRECT);
	vtc_cache_init(&C, 0);
	vtc_cache_init(&G[0], 0);
	vtc_cache_init(&G[1], 0);
	/* from_pretrained(device_map="cuda"): safetensors order */
	CUdeviceptr w[2 + LAYERS * 9 + 1];
	int nw = 0;
	uint64_t wb[2 + LAYERS * 9 + 1];
	wb[nw] = VOCAB * DM * 2;
	w[nw] = vtc_cache_alloc(&C, wb[nw], VTC_WEIGHTS), vtc_htod(0, w[nw], wb[nw]), nw++;
	for (int l = 0; l < LAYERS; l++) {
		uint64_t sz[9] = {DM * 2,      DM * FF * 2, DM * FF * 2, FF * DM * 2, DM * 2,
		                  DM * KV * 2, DM * DM * 2, DM * DM * 2, DM * KV * 2};
		for (int i = 0; i < 9; i++) {
			wb[nw] = sz[i];
			w[nw] = vtc_cache_alloc(&C, sz[i], VTC_WEIGHTS);
			vtc_htod(0, w[nw], sz[i]);
			nw++;
		}
	}
	wb[nw] = DM * 2; /* model.norm */
	w[nw] = vtc_cache_alloc(&C, wb[nw], VTC_WEIGHTS), vtc_htod(0, w[nw], wb[nw]), nw++;
	wb[nw] = VOCAB * DM * 2; /* lm_head */
	w[nw] = vtc_cache_alloc(&C, wb[nw], VTC_WEIGHTS), vtc_htod(0, w[nw], wb[nw]), nw++;
	CUdeviceptr inv_freq = vtc_cache_alloc(&C, 32 * 4, VTC_OTHER); /* made on the device */

	CUdeviceptr kv[2 * LAYERS] = {0};
	uint64_t cache_b = 0;
	int graph = -1;
	uint64_t batches[3] = {4, 4, 8};
	CUdeviceptr gin[3] = {0}, glogits = 0;
	for (int call = 0; call < 3; call++) {
		uint64_t b = batches[call];
		CUdeviceptr ids = vtc_cache_alloc(&C, b * PROMPT * 8, VTC_PREFETCH);
		vtc_htod(0, ids, b * PROMPT * 8);
		CUdeviceptr mask = vtc_cache_alloc(&C, b * PROMPT * 8, VTC_PREFETCH);
		vtc_htod(0, mask, b * PROMPT * 8);
		if (cache_b != b) { /* _get_cache: a new StaticCache */
			for (int i = 0; i < 2 * LAYERS; i++)
				if (kv[i])
					vtc_cache_free(&C, kv[i]);
			for (int i = 0; i < 2 * LAYERS; i++) {
				kv[i] = vtc_cache_alloc(&C, b * 4 * MAXLEN * 64 * 2, VTC_OTHER);
				vtc_zero(0, kv[i], b * 4 * MAXLEN * 64 * 2);
			}
			cache_b = b;
		} else {
			for (int i = 0; i < 2 * LAYERS; i++) /* cache.reset() */
				vtc_zero(0, kv[i], b * 4 * MAXLEN * 64 * 2);
		}
		CUdeviceptr pos = act(PROMPT * 8); /* cache_position = arange */
		forward_layers(&C, b, PROMPT);     /* prefill, eager */
		CUdeviceptr logits = act(b * VOCAB * 2), lf = act(b * VOCAB * 4);
		drop(logits);
		CUdeviceptr tok = act(b * 8);
		drop(lf);
		uint64_t len = PROMPT;
		for (int t = 0; t < NEW; t++) {
			CUdeviceptr ids2 = act(b * (len + 1) * 8), mask2 = act(b * (len + 1) * 8);
			drop(ids);
			drop(mask);
			ids = ids2;
			mask = mask2;
			len++;
			CUdeviceptr cpos = act(8);
			if (t == 0 && (call == 0 || call == 2)) {
				if (call == 2) /* batch 8: the decode step recompiled */
					graph = 1;
				else
					graph = 0;
				forward_layers(&C, b, 1); /* cudagraph trees: one eager warm-up */
				for (int i = 0; i < 3; i++) {
					gin[i] = vtc_cache_alloc(&G[graph], b * 8, VTC_ACTIVATIONS);
				}
				forward_layers(&G[graph], b, 1); /* capture */
				glogits =
				    vtc_cache_alloc(&G[graph], b * VOCAB * 4, VTC_ACTIVATIONS);
			}
			for (int i = 0; i < 3; i++) /* inputs copied into the graph's buffers */
				vtc_dtod(0, gin[i], i == 0 ? tok : cpos, b * 8);
			/* replay: no allocation */
			CUdeviceptr nl = act(b * VOCAB * 4); /* logits[:, -1, :].to(copy=True) */
			CUdeviceptr nt = act(b * 8);
			drop(nl);
			drop(tok);
			tok = nt;
			drop(cpos);
		}
		vtc_dtoh(0, ids, b * len * 8); /* sequences back to the tokenizer */
		drop(tok);
		drop(pos);
		drop(ids);
		drop(mask);
	}
	(void)glogits;
	for (int i = 0; i < 2 * LAYERS; i++)
		vtc_cache_free(&C, kv[i]);
	for (int i = 0; i < nw; i++)
		vtc_cache_free(&C, w[i]);
	vtc_cache_free(&C, inv_freq);
	vtc_cache_empty(&C);
	vtc_cache_settle(&G[0]); /* graphs kept to the end: pools released at exit */
	vtc_cache_settle(&G[1]);
	vtc_line("no_finding whole_dataset_upload");
	vtc_line("finding prefetch_depth 0 1 %llu", (unsigned long long)(4 * PROMPT * 8 * 2));
	vtc_line("steps 0 0");
	vtc_finish();
	return 0;
}
