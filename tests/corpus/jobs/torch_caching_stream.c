/* PyTorch with its CUDACachingAllocator (c10/cuda/CUDACachingAllocator.cpp):
 * tensors <= 1 MiB share 2 MiB segments, 1-10 MiB ones 20 MiB segments,
 * larger ones get a segment of their own rounded to 2 MiB; a freed block
 * stays in its segment and serves the next request, so cudaMalloc is rare
 * after the first step. The model is built on the CPU and moved with
 * .to("cuda") (Module._apply: one upload per parameter), Adam state appears
 * in step 0, .grad is freed by zero_grad(set_to_none=True), and each batch
 * comes from a DataLoader(pin_memory=True) and .cuda(non_blocking=True) at
 * the top of the step (one batch on the device). A segment that only ever
 * held one kind of tensor is that kind; a mixed one is pool, with parts. */
#include "vtc_pool.h"

#define LAYERS 6

int main(int argc, char **argv)
{
	vtc_start(argc, argv, "torch_caching_stream", 1, VTC_GETPROC);
	int steps = (int)vtc_opt_size("--steps", 6);
	const uint64_t wb[LAYERS] = {16 * MIB, 4 * MIB, 4 * MIB, 768 * KIB, 256 * KIB, 4 * KIB};
	const uint64_t bias = 4 * KIB, batch = 3 * MIB, act = 4 * MIB, small_act = 512 * KIB;
	struct vtc_cache c;
	vtc_cache_init(&c, 0);
	CUdeviceptr w[LAYERS], b[LAYERS], m[LAYERS], v[LAYERS], mb[LAYERS], vb[LAYERS];
	for (int l = 0; l < LAYERS; l++) { /* Module._apply: weight, then bias */
		w[l] = vtc_cache_alloc(&c, wb[l], VTC_WEIGHTS);
		vtc_htod(0, w[l], wb[l]);
		b[l] = vtc_cache_alloc(&c, bias, VTC_WEIGHTS);
		vtc_htod(0, b[l], bias);
	}
	void *pinned;
	VTC_CHECK(vtc.MemAllocHost(&pinned, batch));
	for (int s = 0; s < steps; s++) {
		if (vtc_markers())
			vtc_step(s);
		CUdeviceptr x = vtc_cache_alloc(&c, batch, VTC_PREFETCH);
		vtc_htod_from(0, x, pinned, batch, 0);
		CUdeviceptr a[LAYERS], g[LAYERS], gb[LAYERS];
		for (int l = 0; l < LAYERS; l++)
			a[l] = vtc_cache_alloc(&c, l < 3 ? act : small_act, VTC_ACTIVATIONS);
		for (int l = LAYERS - 1; l >= 0; l--) {
			g[l] = vtc_cache_alloc(&c, wb[l], VTC_GRADIENTS);
			gb[l] = vtc_cache_alloc(&c, bias, VTC_GRADIENTS);
			vtc_cache_free(&c, a[l]);
		}
		vtc_cache_free(&c, x);
		if (s == 0)
			for (int l = 0; l < LAYERS; l++) {
				m[l] = vtc_cache_alloc(&c, wb[l], VTC_OPTIMIZER);
				v[l] = vtc_cache_alloc(&c, wb[l], VTC_OPTIMIZER);
				mb[l] = vtc_cache_alloc(&c, bias, VTC_OPTIMIZER);
				vb[l] = vtc_cache_alloc(&c, bias, VTC_OPTIMIZER);
			}
		for (int l = 0; l < LAYERS; l++) {
			vtc_cache_free(&c, g[l]);
			vtc_cache_free(&c, gb[l]);
		}
	}
	(void)m; (void)v; (void)mb; (void)vb; (void)w; (void)b;
	vtc_cache_empty(&c); /* process exit / torch.cuda.empty_cache() */
	VTC_CHECK(vtc.MemFreeHost(pinned));
	vtc_line("no_finding whole_dataset_upload");
	vtc_line("finding prefetch_depth 0 1 %llu", (unsigned long long)batch);
	vtc_line("steps 0 %d", steps);
	vtc_finish();
	return 0;
}
