/* Fine-tuning with frozen embeddings (model.embeddings.requires_grad_(False)
 * in a transformers fine-tune): the 48 MiB embedding and four 4 MiB encoder
 * layers load from the checkpoint (one upload each), the classifier head is
 * new (initialized on the device). Only the encoder and head train: .grad
 * and AdamW state for them only, the embedding has neither. Each step: token
 * ids uploaded (256 KiB, two batches on the device), the embedding output is
 * 4 MiB - the size of an encoder weight - and the encoder activations too. */
#include "vtc.h"

#define ENC 4

int main(int argc, char **argv)
{
	vtc_start(argc, argv, "frozen_embed_finetune", 1, VTC_GETPROC);
	int steps = (int)vtc_opt_size("--steps", 8);
	const uint64_t emb = 48 * MIB, enc = 4 * MIB, head = 64 * KIB, ids = 256 * KIB, act = 4 * MIB;
	CUdeviceptr e = vtc_alloc(0, emb, VTC_WEIGHTS), w[ENC + 1], m[ENC + 1], v[ENC + 1];
	vtc_htod(0, e, emb);
	for (int l = 0; l < ENC; l++) {
		w[l] = vtc_alloc(0, enc, VTC_WEIGHTS);
		vtc_htod(0, w[l], enc);
	}
	w[ENC] = vtc_alloc(0, head, VTC_WEIGHTS);
	vtc_zero(0, w[ENC], head);
	CUdeviceptr ring[64] = {0};
	ring[0] = vtc_alloc(0, ids, VTC_PREFETCH);
	vtc_htod(0, ring[0], ids);
	for (int s = 0; s < steps; s++) {
		if (vtc_markers())
			vtc_step(s);
		if (s + 1 < steps) {
			ring[(s + 1) % 64] = vtc_alloc(0, ids, VTC_PREFETCH);
			vtc_htod(0, ring[(s + 1) % 64], ids);
		}
		CUdeviceptr x = vtc_alloc(0, act, VTC_ACTIVATIONS), a[ENC], g[ENC + 1];
		for (int l = 0; l < ENC; l++)
			a[l] = vtc_alloc(0, act, VTC_ACTIVATIONS);
		g[ENC] = vtc_alloc(0, head, VTC_GRADIENTS);
		for (int l = ENC - 1; l >= 0; l--) {
			g[l] = vtc_alloc(0, enc, VTC_GRADIENTS);
			vtc_free(0, a[l]);
		}
		vtc_free(0, x); /* no grad flows into the frozen embedding */
		if (s == 0)
			for (int l = 0; l <= ENC; l++) {
				uint64_t n = l == ENC ? head : enc;
				m[l] = vtc_alloc(0, n, VTC_OPTIMIZER);
				v[l] = vtc_alloc(0, n, VTC_OPTIMIZER);
			}
		for (int l = 0; l <= ENC; l++)
			vtc_free(0, g[l]);
		vtc_free(0, ring[s % 64]);
	}
	for (int l = 0; l <= ENC; l++) {
		vtc_free(0, w[l]); vtc_free(0, m[l]); vtc_free(0, v[l]);
	}
	vtc_free(0, e);
	vtc_line("no_finding whole_dataset_upload");
	vtc_line("finding prefetch_depth 0 2 %llu", (unsigned long long)ids);
	vtc_line("steps 0 %d", steps);
	vtc_finish();
	return 0;
}
