/* Train / evaluate alternation (a PyTorch training script's epoch loop:
 * model.train(); for batch in train_loader: ...; model.eval(); with
 * torch.no_grad(): for batch in val_loader: ...). Training batches are
 * prefetched two deep; evaluation uses a larger batch (4x), one at a time,
 * activations without grads, no optimizer step. Adam (lazy state), grads
 * freed per step. Markers at training steps only. Linked against libcuda. */
#include "vtc.h"

#define LAYERS 4

int main(int argc, char **argv)
{
	vtc_start(argc, argv, "eval_between_epochs", 1, VTC_DIRECT);
	int epochs = (int)vtc_opt_size("--epochs", 2), per_epoch = (int)vtc_opt_size("--steps", 5);
	const uint64_t wb[LAYERS] = {6 * MIB, 6 * MIB, 2 * MIB, 256 * KIB};
	const uint64_t tb = 2 * MIB, eb = 8 * MIB, act = 3 * MIB, eact = 12 * MIB;
	CUdeviceptr w[LAYERS], m[LAYERS], v[LAYERS];
	for (int l = 0; l < LAYERS; l++) {
		w[l] = vtc_alloc(0, wb[l], VTC_WEIGHTS);
		vtc_zero(0, w[l], wb[l]);
	}
	int step = 0;
	for (int e = 0; e < epochs; e++) {
		CUdeviceptr ring[2];
		ring[0] = vtc_alloc(0, tb, VTC_PREFETCH);
		vtc_htod(0, ring[0], tb);
		for (int s = 0; s < per_epoch; s++, step++) {
			if (vtc_markers())
				vtc_step(step);
			if (s + 1 < per_epoch) {
				ring[(s + 1) % 2] = vtc_alloc(0, tb, VTC_PREFETCH);
				vtc_htod(0, ring[(s + 1) % 2], tb);
			}
			CUdeviceptr a[LAYERS], g[LAYERS];
			for (int l = 0; l < LAYERS; l++)
				a[l] = vtc_alloc(0, act, VTC_ACTIVATIONS);
			for (int l = LAYERS - 1; l >= 0; l--) {
				g[l] = vtc_alloc(0, wb[l], VTC_GRADIENTS);
				vtc_free(0, a[l]);
			}
			if (step == 0)
				for (int l = 0; l < LAYERS; l++) {
					m[l] = vtc_alloc(0, wb[l], VTC_OPTIMIZER);
					v[l] = vtc_alloc(0, wb[l], VTC_OPTIMIZER);
				}
			for (int l = 0; l < LAYERS; l++)
				vtc_free(0, g[l]);
			vtc_free(0, ring[s % 2]);
		}
		vtc_mark("eval");
		for (int b = 0; b < 3; b++) {
			CUdeviceptr x = vtc_alloc(0, eb, VTC_PREFETCH);
			vtc_htod(0, x, eb);
			CUdeviceptr a0 = vtc_alloc(0, eact, VTC_ACTIVATIONS);
			CUdeviceptr a1 = vtc_alloc(0, eact, VTC_ACTIVATIONS);
			vtc_free(0, a0);
			CUdeviceptr out = vtc_alloc(0, 64 * KIB, VTC_ACTIVATIONS);
			vtc_free(0, a1);
			vtc_dtoh(0, out, 64 * KIB);
			vtc_free(0, out);
			vtc_free(0, x);
		}
	}
	for (int l = 0; l < LAYERS; l++) {
		vtc_free(0, w[l]); vtc_free(0, m[l]); vtc_free(0, v[l]);
	}
	vtc_line("no_finding whole_dataset_upload");
	vtc_line("finding prefetch_depth 0 2 %llu", (unsigned long long)tb);
	vtc_line("steps 0 %d", epochs * per_epoch);
	vtc_finish();
	return 0;
}
