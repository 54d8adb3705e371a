/* PyTorch, the whole dataset moved once: x = torch.from_numpy(X).cuda()
 * (48 MiB: a segment of its own) and y (256 KiB: a block in a 2 MiB segment
 * shared with the biases), then every step indexes a shuffled batch
 * (x[perm[i:i+B]]: a gather into a new tensor from the caching allocator).
 * SGD with momentum (momentum_buffer in step 0), grads kept across steps
 * (zero_grad(set_to_none=False): created by the first backward, zeroed in
 * place). Model built on the device (torch.device("cuda") context: no
 * upload). No markers; linked against libcuda. */
#include "vtc_pool.h"

#define LAYERS 4

int main(int argc, char **argv)
{
	vtc_start(argc, argv, "torch_caching_whole", 1, VTC_DIRECT);
	int steps = (int)vtc_opt_size("--steps", 8);
	const uint64_t xb = 48 * MIB, yb = 256 * KIB, batch = 1536 * KIB, act = 1536 * KIB, bias = 2 * KIB;
	const uint64_t wb[LAYERS] = {6 * MIB, 3 * MIB, 3 * MIB, 64 * KIB};
	struct vtc_cache c;
	vtc_cache_init(&c, 0);
	CUdeviceptr w[LAYERS], b[LAYERS], g[LAYERS], gb[LAYERS], mom[LAYERS], momb[LAYERS];
	for (int l = 0; l < LAYERS; l++) {
		w[l] = vtc_cache_alloc(&c, wb[l], VTC_WEIGHTS);
		vtc_zero(0, w[l], wb[l]);
		b[l] = vtc_cache_alloc(&c, bias, VTC_WEIGHTS);
		vtc_zero(0, b[l], bias);
	}
	CUdeviceptr x = vtc_cache_alloc(&c, xb, VTC_DATASET);
	vtc_htod(0, x, xb);
	CUdeviceptr y = vtc_cache_alloc(&c, yb, VTC_DATASET);
	vtc_htod(0, y, yb);
	for (int s = 0; s < steps; s++) {
		if (vtc_markers())
			vtc_step(s);
		CUdeviceptr perm = vtc_cache_alloc(&c, 8 * KIB, VTC_ACTIVATIONS); /* randperm slice */
		CUdeviceptr bx = vtc_cache_alloc(&c, batch, VTC_ACTIVATIONS);
		vtc_dtod(0, bx, x + (uint64_t)s * batch, batch);
		CUdeviceptr a[LAYERS];
		for (int l = 0; l < LAYERS; l++)
			a[l] = vtc_cache_alloc(&c, act, VTC_ACTIVATIONS);
		for (int l = LAYERS - 1; l >= 0; l--) {
			if (s == 0) {
				g[l] = vtc_cache_alloc(&c, wb[l], VTC_GRADIENTS);
				gb[l] = vtc_cache_alloc(&c, bias, VTC_GRADIENTS);
			}
			vtc_cache_free(&c, a[l]);
		}
		if (s == 0)
			for (int l = 0; l < LAYERS; l++) {
				mom[l] = vtc_cache_alloc(&c, wb[l], VTC_OPTIMIZER);
				momb[l] = vtc_cache_alloc(&c, bias, VTC_OPTIMIZER);
			}
		vtc_cache_free(&c, bx);
		vtc_cache_free(&c, perm);
	}
	(void)w; (void)b; (void)g; (void)gb; (void)mom; (void)momb; (void)y;
	vtc_cache_empty(&c);
	vtc_line("finding whole_dataset_upload 0 %llu", (unsigned long long)xb);
	vtc_line("finding whole_dataset_upload 0 %llu", (unsigned long long)yb);
	vtc_line("no_finding prefetch_depth");
	vtc_line("steps 0 %d", steps);
	vtc_finish();
	return 0;
}
