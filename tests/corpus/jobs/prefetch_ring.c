/* A fixed prefetch ring (NVIDIA DALI's / a hand-written CUDA prefetcher's
 * shape): K device batch buffers allocated once and refilled from pinned
 * host memory with cuMemcpyHtoDAsync on a copy stream, batch s into slot
 * s % K, so K batches are on the device at once. The buffers are long-lived
 * and filled from the host many times over: data in flight, not a dataset.
 * Model: 3 layers made on the device, Adam state in the first step. */
#include "vtc.h"

#define K 3
#define LAYERS 3

int main(int argc, char **argv)
{
	vtc_start(argc, argv, "prefetch_ring", 1, VTC_DLSYM);
	int steps = (int)vtc_opt_size("--steps", 10);
	const uint64_t batch = 4 * MIB, act = 3 * MIB;
	const uint64_t wb[LAYERS] = {6 * MIB, 3 * MIB, 512 * KIB};
	CUdeviceptr ring[K], w[LAYERS], m[LAYERS], v[LAYERS];
	CUstream copy;
	VTC_CHECK(vtc.StreamCreate(&copy, 1));
	void *pinned;
	VTC_CHECK(vtc.MemAllocHost(&pinned, batch));
	for (int k = 0; k < K; k++)
		ring[k] = vtc_alloc(0, batch, VTC_PREFETCH);
	for (int l = 0; l < LAYERS; l++) {
		w[l] = vtc_alloc(0, wb[l], VTC_WEIGHTS);
		vtc_zero(0, w[l], wb[l]);
	}
	for (int k = 0; k < K - 1; k++)
		vtc_htod_from(0, ring[k], pinned, batch, copy);
	for (int s = 0; s < steps; s++) {
		if (vtc_markers())
			vtc_step(s);
		/* refill the slot that the step after next will read */
		vtc_htod_from(0, ring[(s + K - 1) % K], pinned, batch, copy);
		CUdeviceptr x[LAYERS], g[LAYERS];
		for (int l = 0; l < LAYERS; l++)
			x[l] = vtc_alloc(0, act, VTC_ACTIVATIONS);
		for (int l = LAYERS - 1; l >= 0; l--) {
			g[l] = vtc_alloc(0, wb[l], VTC_GRADIENTS);
			vtc_free(0, x[l]);
		}
		if (s == 0)
			for (int l = 0; l < LAYERS; l++) {
				m[l] = vtc_alloc(0, wb[l], VTC_OPTIMIZER);
				v[l] = vtc_alloc(0, wb[l], VTC_OPTIMIZER);
			}
		for (int l = 0; l < LAYERS; l++)
			vtc_free(0, g[l]);
	}
	for (int l = 0; l < LAYERS; l++) {
		vtc_free(0, w[l]); vtc_free(0, m[l]); vtc_free(0, v[l]);
	}
	for (int k = 0; k < K; k++)
		vtc_free(0, ring[k]);
	VTC_CHECK(vtc.MemFreeHost(pinned));
	vtc_line("no_finding whole_dataset_upload");
	vtc_line("finding prefetch_depth 0 %d %llu", K, (unsigned long long)batch);
	vtc_line("steps 0 %d", steps);
	vtc_finish();
	return 0;
}
