/* Keras fit(x, y, validation_data=(xv, yv)) on numpy arrays, TensorFlow with
 * TF_GPU_ALLOCATOR=cuda_malloc_async (GpuCudaMallocAsyncAllocator: one
 * stream-ordered allocation per tensor): the data adapter converts all four
 * arrays (convert_to_tensor -> _EagerConst on the GPU), the datasets are
 * made BEFORE the model is built (fit's first lines), weights are
 * initialized on the device, RMSprop has one slot per weight. Each epoch:
 * steps gathering training batches on the device, then a validation pass
 * over xv. No markers. */
#include "vtc.h"

#define LAYERS 3

int main(int argc, char **argv)
{
	vtc_start(argc, argv, "multi_dataset_train_val", 1, VTC_DLSYM);
	int epochs = 2, per_epoch = (int)vtc_opt_size("--steps", 6);
	const uint64_t xb = 40 * MIB, yb = 160 * KIB, xvb = 10 * MIB, yvb = 40 * KIB;
	const uint64_t wb[LAYERS] = {5 * MIB, 2 * MIB, 40 * KIB}, batch = 640 * KIB, act = 2 * MIB;
	CUstream s0 = 0;
	CUdeviceptr x = vtc_alloc_async(0, xb, VTC_DATASET, s0);
	vtc_htod(0, x, xb);
	CUdeviceptr y = vtc_alloc_async(0, yb, VTC_DATASET, s0);
	vtc_htod(0, y, yb);
	CUdeviceptr xv = vtc_alloc_async(0, xvb, VTC_DATASET, s0);
	vtc_htod(0, xv, xvb);
	CUdeviceptr yv = vtc_alloc_async(0, yvb, VTC_DATASET, s0);
	vtc_htod(0, yv, yvb);
	CUdeviceptr w[LAYERS], rms[LAYERS];
	for (int l = 0; l < LAYERS; l++) {
		w[l] = vtc_alloc_async(0, wb[l], VTC_WEIGHTS, s0);
		vtc_zero(0, w[l], wb[l]);
	}
	int step = 0;
	for (int e = 0; e < epochs; e++) {
		for (int s = 0; s < per_epoch; s++, step++) {
			if (vtc_markers())
				vtc_step(step);
			CUdeviceptr bx = vtc_alloc_async(0, batch, VTC_ACTIVATIONS, s0);
			vtc_dtod(0, bx, x + (uint64_t)s * batch, batch);
			CUdeviceptr a[LAYERS], g[LAYERS];
			for (int l = 0; l < LAYERS; l++)
				a[l] = vtc_alloc_async(0, act, VTC_ACTIVATIONS, s0);
			for (int l = LAYERS - 1; l >= 0; l--) {
				g[l] = vtc_alloc_async(0, wb[l], VTC_GRADIENTS, s0);
				vtc_free_async(0, a[l], s0);
			}
			if (step == 0)
				for (int l = 0; l < LAYERS; l++) {
					rms[l] = vtc_alloc_async(0, wb[l], VTC_OPTIMIZER, s0);
					vtc_zero(0, rms[l], wb[l]);
				}
			for (int l = 0; l < LAYERS; l++)
				vtc_free_async(0, g[l], s0);
			vtc_free_async(0, bx, s0);
		}
		for (int b = 0; b < 4; b++) { /* validation: no grads */
			CUdeviceptr bx = vtc_alloc_async(0, batch * 2, VTC_ACTIVATIONS, s0);
			vtc_dtod(0, bx, xv + (uint64_t)b * batch * 2, batch * 2);
			CUdeviceptr a = vtc_alloc_async(0, act * 2, VTC_ACTIVATIONS, s0);
			vtc_free_async(0, a, s0);
			vtc_free_async(0, bx, s0);
		}
	}
	for (int l = 0; l < LAYERS; l++) {
		vtc_free_async(0, w[l], s0);
		vtc_free_async(0, rms[l], s0);
	}
	vtc_free_async(0, x, s0); vtc_free_async(0, y, s0);
	vtc_free_async(0, xv, s0); vtc_free_async(0, yv, s0);
	vtc_line("finding whole_dataset_upload 0 %llu", (unsigned long long)xb);
	vtc_line("finding whole_dataset_upload 0 %llu", (unsigned long long)yb);
	vtc_line("finding whole_dataset_upload 0 %llu", (unsigned long long)xvb);
	vtc_line("finding whole_dataset_upload 0 %llu", (unsigned long long)yvb);
	vtc_line("no_finding prefetch_depth");
	vtc_line("steps 0 %d", epochs * per_epoch);
	vtc_finish();
	return 0;
}
