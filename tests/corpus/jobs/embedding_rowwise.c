/* Recommendation model with a large embedding table (FBGEMM's
 * SplitTableBatchedEmbeddingBagsCodegen, optimizer=EXACT_ROWWISE_ADAGRAD):
 * the table is created on the device (uniform init, no upload), its
 * optimizer state is one float per row (momentum1, allocated in the
 * constructor, before training), and the backward fuses the update: a
 * per-step workspace of the unique rows' gradients, never a dense .grad.
 * The dense MLP on top uses torch.optim.Adam (state lazily in step 0).
 * Input per step: indices and offsets (KeyedJaggedTensor.to(device)), one
 * batch at a time. No step markers. */
#include "vtc.h"

#define MLP 3

int main(int argc, char **argv)
{
	vtc_start(argc, argv, "embedding_rowwise", 1, VTC_DLSYM);
	int steps = (int)vtc_opt_size("--steps", 8);
	const uint64_t rows = 98304, dim = 256;
	const uint64_t table = rows * dim * 4, momentum1 = rows * 4;
	const uint64_t idx = 512 * KIB, offs = 64 * KIB, pooled = 2 * MIB, uniq = 4 * MIB;
	const uint64_t wb[MLP] = {4 * MIB, 2 * MIB, 1 * MIB};
	CUdeviceptr t = vtc_alloc(0, table, VTC_WEIGHTS);
	vtc_zero(0, t, table);
	CUdeviceptr mom = vtc_alloc(0, momentum1, VTC_OPTIMIZER);
	vtc_zero(0, mom, momentum1);
	CUdeviceptr w[MLP], m[MLP], v[MLP];
	for (int l = 0; l < MLP; l++)
		w[l] = vtc_alloc(0, wb[l], VTC_WEIGHTS);
	for (int s = 0; s < steps; s++) {
		if (vtc_markers())
			vtc_step(s);
		CUdeviceptr xi = vtc_alloc(0, idx, VTC_PREFETCH), xo = vtc_alloc(0, offs, VTC_PREFETCH);
		vtc_htod(0, xi, idx);
		vtc_htod(0, xo, offs);
		CUdeviceptr pool = vtc_alloc(0, pooled, VTC_ACTIVATIONS), a[MLP], g[MLP];
		for (int l = 0; l < MLP; l++)
			a[l] = vtc_alloc(0, pooled, VTC_ACTIVATIONS);
		for (int l = MLP - 1; l >= 0; l--) {
			g[l] = vtc_alloc(0, wb[l], VTC_GRADIENTS);
			vtc_free(0, a[l]);
		}
		CUdeviceptr ws = vtc_alloc(0, uniq, VTC_GRADIENTS); /* unique rows' grads, fused update */
		vtc_free(0, ws);
		vtc_free(0, pool);
		if (s == 0)
			for (int l = 0; l < MLP; l++) {
				m[l] = vtc_alloc(0, wb[l], VTC_OPTIMIZER);
				v[l] = vtc_alloc(0, wb[l], VTC_OPTIMIZER);
			}
		for (int l = 0; l < MLP; l++)
			vtc_free(0, g[l]);
		vtc_free(0, xi);
		vtc_free(0, xo);
	}
	for (int l = 0; l < MLP; l++) {
		vtc_free(0, w[l]); vtc_free(0, m[l]); vtc_free(0, v[l]);
	}
	vtc_free(0, mom);
	vtc_free(0, t);
	vtc_line("no_finding whole_dataset_upload");
	vtc_line("finding prefetch_depth 0 1 %llu", (unsigned long long)idx);
	vtc_line("steps 0 %d", steps);
	vtc_finish();
	return 0;
}
