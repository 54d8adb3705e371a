/* JAX with XLA_PYTHON_CLIENT_ALLOCATOR=platform (one cuMemAlloc per buffer,
 * freed when the array dies) and a jitted train step WITHOUT donate_argnums:
 * every step returns new parameter and momentum buffers and the old ones are
 * freed, so weights and optimizer state are NOT long-lived at any address.
 * The dataset is device_put whole (x 32 MiB, y 256 KiB) and sliced in the
 * step (lax.dynamic_slice); XLA's temp buffer per step holds the
 * activations and gradients (one allocation: pool, with parts). No markers,
 * linked against libcuda. */
#include "vtc.h"

#define LAYERS 3

int main(int argc, char **argv)
{
	vtc_start(argc, argv, "jax_platform_nodonate", 1, VTC_DIRECT);
	int steps = (int)vtc_opt_size("--steps", 8);
	const uint64_t xb = 32 * MIB, yb = 256 * KIB;
	const uint64_t wb[LAYERS] = {4 * MIB, 2 * MIB, 64 * KIB};
	const uint64_t gsum = wb[0] + wb[1] + wb[2], acts = 6 * MIB;
	CUdeviceptr w[LAYERS], mom[LAYERS];
	CUdeviceptr x = vtc_alloc(0, xb, VTC_DATASET);
	vtc_htod(0, x, xb);
	CUdeviceptr y = vtc_alloc(0, yb, VTC_DATASET);
	vtc_htod(0, y, yb);
	for (int l = 0; l < LAYERS; l++) { /* init(rng) on the device */
		w[l] = vtc_alloc(0, wb[l], VTC_WEIGHTS);
		mom[l] = vtc_alloc(0, wb[l], VTC_OPTIMIZER);
		vtc_zero(0, mom[l], wb[l]);
	}
	for (int s = 0; s < steps; s++) {
		if (vtc_markers())
			vtc_step(s);
		CUdeviceptr temp = vtc_alloc(0, gsum + acts, VTC_POOL);
		vtc_part(0, temp, acts, VTC_ACTIVATIONS);
		vtc_part(0, temp + acts, gsum, VTC_GRADIENTS);
		CUdeviceptr nw[LAYERS], nm[LAYERS];
		for (int l = 0; l < LAYERS; l++) { /* outputs: new params, new momentum */
			nw[l] = vtc_alloc(0, wb[l], VTC_WEIGHTS);
			nm[l] = vtc_alloc(0, wb[l], VTC_OPTIMIZER);
		}
		vtc_part_free(0, temp);
		vtc_part_free(0, temp + acts);
		vtc_free(0, temp);
		for (int l = 0; l < LAYERS; l++) { /* the old arrays die */
			vtc_free(0, w[l]);
			vtc_free(0, mom[l]);
			w[l] = nw[l];
			mom[l] = nm[l];
		}
	}
	vtc_line("finding whole_dataset_upload 0 %llu", (unsigned long long)xb);
	vtc_line("finding whole_dataset_upload 0 %llu", (unsigned long long)yb);
	vtc_line("no_finding prefetch_depth");
	vtc_line("steps 0 %d", steps);
	vtc_finish();
	return 0;
}
