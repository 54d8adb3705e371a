/* An LLM inference server (vLLM-like without its block pool: a KV cache
 * grown per request). Weights load from safetensors, one upload per tensor
 * (a 64 MiB embedding, 6 x 16 MiB layers, the lm_head tied). Each request:
 * the prompt's token ids uploaded (freed after prefill), a KV cache
 * allocation per layer group for the prompt, then one more KV block every
 * 4 decode steps (appended, all freed when the request ends); requests
 * overlap (the next is admitted while the previous decodes). Activations per
 * forward. No training (0 optimizer steps), no markers. The KV cache is
 * "other" (neither weights nor activations of one step). */
#include "vtc.h"

#define LAYERS 6
#define REQS 6
#define MAXKV 32

int main(int argc, char **argv)
{
	vtc_start(argc, argv, "llm_kv_server", 1, VTC_DLSYM);
	const uint64_t emb = 64 * MIB, layer = 16 * MIB, prompt = 16 * KIB, kvb = 2 * MIB,
	               act = 4 * MIB, logits = 1 * MIB;
	CUdeviceptr e = vtc_alloc(0, emb, VTC_WEIGHTS), w[LAYERS];
	vtc_htod(0, e, emb);
	for (int l = 0; l < LAYERS; l++) {
		w[l] = vtc_alloc(0, layer, VTC_WEIGHTS);
		vtc_htod(0, w[l], layer);
	}
	CUdeviceptr kv[REQS][MAXKV];
	int nkv[REQS] = {0};
	int decode[REQS] = {12, 20, 8, 16, 24, 10};
	for (int r = 0; r < REQS; r++) {
		/* prefill */
		CUdeviceptr ids = vtc_alloc(0, prompt, VTC_PREFETCH);
		vtc_htod(0, ids, prompt);
		for (int k = 0; k < 3; k++)
			kv[r][nkv[r]++] = vtc_alloc(0, kvb, VTC_OTHER);
		CUdeviceptr a = vtc_alloc(0, act, VTC_ACTIVATIONS);
		vtc_free(0, ids);
		vtc_free(0, a);
		/* decode, interleaved with the previous request's tail */
		for (int t = 0; t < decode[r]; t++) {
			for (int q = r > 0 ? r - 1 : r; q <= r; q++) {
				if (q < r && t >= 4)
					continue;
				CUdeviceptr x = vtc_alloc(0, act / 4, VTC_ACTIVATIONS);
				if (t % 4 == 3 && nkv[q] < MAXKV)
					kv[q][nkv[q]++] = vtc_alloc(0, kvb, VTC_OTHER);
				CUdeviceptr lg = vtc_alloc(0, logits, VTC_ACTIVATIONS);
				vtc_free(0, x);
				vtc_dtoh(0, lg, 4 * KIB);
				vtc_free(0, lg);
			}
			if (r > 0 && t == 4) { /* the previous request finished */
				for (int k = 0; k < nkv[r - 1]; k++)
					vtc_free(0, kv[r - 1][k]);
				nkv[r - 1] = 0;
			}
		}
	}
	for (int k = 0; k < nkv[REQS - 1]; k++)
		vtc_free(0, kv[REQS - 1][k]);
	for (int l = 0; l < LAYERS; l++)
		vtc_free(0, w[l]);
	vtc_free(0, e);
	vtc_line("no_finding whole_dataset_upload");
	vtc_line("finding prefetch_depth 0 1 %llu", (unsigned long long)prompt);
	vtc_line("steps 0 0");
	vtc_finish();
	return 0;
}
