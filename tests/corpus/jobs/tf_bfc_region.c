/* TensorFlow's BFC allocator (tensorflow/core/common_runtime/bfc_allocator.cc)
 * without allow_growth: one region of the memory limit taken from the
 * driver at the first allocation, every tensor a chunk at an offset.
 * Keras Model.fit(x, y) on numpy arrays: the adapter converts both arrays
 * (convert_to_tensor -> an _EagerConst op placed on the GPU: one copy each
 * into the region), the model's weights come from model.load_weights (h5:
 * one upload per variable), Adam's m/v slots are made at the first
 * apply_gradients, and every step gathers a batch from the on-device arrays
 * (a device-to-device slice), so there is no per-step upload. The driver
 * sees one allocation: the region (pool); its parts are in the truth. */
#include "vtc_pool.h"

#define LAYERS 4

int main(int argc, char **argv)
{
	vtc_start(argc, argv, "tf_bfc_region", 1, VTC_DLSYM);
	int steps = (int)vtc_opt_size("--steps", 8);
	const uint64_t region_bytes = 512 * MIB;
	const uint64_t xb = 64 * MIB, yb = 256 * KIB, batch = 2 * MIB, act = 2 * MIB;
	const uint64_t wb[LAYERS] = {8 * MIB, 4 * MIB, 2 * MIB, 256 * KIB};
	struct vtc_region r;
	CUdeviceptr base = vtc_alloc(0, region_bytes, VTC_POOL);
	vtc_region_init(&r, 0, base, region_bytes, vtc_record_of(0, base));
	CUdeviceptr w[LAYERS], m[LAYERS], v[LAYERS];
	for (int l = 0; l < LAYERS; l++) { /* build(): add_weight, then load_weights() */
		w[l] = vtc_region_take(&r, wb[l], VTC_WEIGHTS);
		vtc_htod(0, w[l], wb[l]);
	}
	CUdeviceptr x = vtc_region_take(&r, xb, VTC_DATASET); /* convert_to_tensor(x) */
	vtc_htod(0, x, xb);
	CUdeviceptr y = vtc_region_take(&r, yb, VTC_DATASET);
	vtc_htod(0, y, yb);
	for (int s = 0; s < steps; s++) {
		if (vtc_markers())
			vtc_step(s);
		CUdeviceptr bx = vtc_region_take(&r, batch, VTC_ACTIVATIONS); /* gather */
		vtc_dtod(0, bx, x + (uint64_t)(s % 32) * batch, batch);
		CUdeviceptr a[LAYERS], g[LAYERS];
		for (int l = 0; l < LAYERS; l++)
			a[l] = vtc_region_take(&r, act, VTC_ACTIVATIONS);
		for (int l = LAYERS - 1; l >= 0; l--) {
			g[l] = vtc_region_take(&r, wb[l], VTC_GRADIENTS);
			vtc_region_give(&r, a[l]);
		}
		if (s == 0)
			for (int l = 0; l < LAYERS; l++) {
				m[l] = vtc_region_take(&r, wb[l], VTC_OPTIMIZER);
				v[l] = vtc_region_take(&r, wb[l], VTC_OPTIMIZER);
				vtc_zero(0, m[l], wb[l]);
				vtc_zero(0, v[l], wb[l]);
			}
		for (int l = 0; l < LAYERS; l++)
			vtc_region_give(&r, g[l]);
		vtc_region_give(&r, bx);
	}
	vtc_region_settle(&r);
	vtc_free(0, base);
	vtc_line("finding whole_dataset_upload 0 %llu", (unsigned long long)xb);
	vtc_line("finding whole_dataset_upload 0 %llu", (unsigned long long)yb);
	vtc_line("no_finding prefetch_depth");
	vtc_line("steps 0 %d", steps);
	vtc_finish();
	return 0;
}
