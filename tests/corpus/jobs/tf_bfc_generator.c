/* TensorFlow 2 / Keras with the default GPU allocator: GPUBFCAllocator
 * without allow_growth. gpu_device.cc sizes the memory limit from
 * cuMemGetInfo (free memory less MinSystemMemory: max(300 MiB, 5 %)), and
 * BFCAllocator::Extend takes it from the driver in ONE region at the first
 * allocation; every tensor is a chunk at an offset (256-byte rounded,
 * first fit here), freed chunks are reused by whatever fits.
 *
 * model.build: the variables are made and initialised on the device
 * (glorot_uniform / zeros kernels: no upload); model.load_weights(ckpt)
 * (tf.train.Checkpoint): RestoreV2 runs on the CPU, each AssignVariableOp
 * gets its value copied to the GPU (a new chunk, one upload) and the
 * variable takes that buffer, the initialised chunk is freed. Input:
 * tf.data.Dataset.from_generator(gen).batch(64).prefetch(2): the two
 * prefetched batches wait in HOST memory (tf.data runs on the CPU); each
 * train step's GetNext output is copied into new chunks (x and y), one
 * batch on the device at a time. Keras metrics (Mean, SparseCategorical
 * Accuracy: total/count) are device scalars; Adam's m/v slots and its
 * `iterations` counter are made at the first apply_gradients; per step the
 * gradients and activations are chunks, the logs (loss, accuracy) read back.
 * 2 epochs x 10 steps. No markers, driver by dlsym.
 *
 * Truth: the region is a pool (parts recorded): variables weights (the
 * initialised chunks too), Adam slots and iterations optimizer, gradients,
 * per-step x and y prefetch (depth 1: prefetch(2) buffers on the host, not
 * the device), activations, metric scalars other; no dataset; 20 steps.
 * Coincidence: an x batch (64 x 64 x 64 x 3 float32 = 3 MiB) is exactly the
 * dense kernel (12288 x 64 float32). */
#include <stdio.h>
#include <stdlib.h>

#include "vtc_pool.h"

#define NVARS 10

static const uint64_t var_bytes[NVARS] = {
    3 * 3 * 3 * 48 * 4,   48 * 4,  /* conv1 */
    3 * 3 * 48 * 96 * 4,  96 * 4,  /* conv2 */
    3 * 3 * 96 * 192 * 4, 192 * 4, /* conv3 */
    12288 * 64 * 4,       64 * 4,  /* dense */
    64 * 200 * 4,         200 * 4, /* head */
};

static struct vtc_region region;

static uint64_t memory_limit(void)
{
	size_t free_b = 0, total_b = 0;
	VTC_CHECK(vtc.MemGetInfo(&free_b, &total_b));
	uint64_t reserve = total_b / 20 > 300 * MIB ? total_b / 20 : 300 * MIB;
	return (free_b - reserve) & ~(uint64_t)255;
}

static CUdeviceptr chunk(uint64_t bytes, enum vtc_cat cat)
{
	CUdeviceptr p = vtc_region_take(&region, bytes, cat);
	if (!p) {
		fprintf(stderr, "tf_bfc_generator: region full\n");
		exit(1);
	}
	return p;
}

/* build(), then load_weights(): each restored value a new chunk */
static void build_and_restore(CUdeviceptr *var)
{
	for (int i = 0; i < NVARS; i++) {
		var[i] = chunk(var_bytes[i], VTC_WEIGHTS);
		vtc_zero(0, var[i], var_bytes[i]);
	}
	for (int i = 0; i < NVARS; i++) {
		CUdeviceptr restored = chunk(var_bytes[i], VTC_WEIGHTS);
		vtc_htod(0, restored, var_bytes[i]);
		vtc_region_give(&region, var[i]);
		var[i] = restored;
	}
}

static void train_step(int s, CUdeviceptr *slots, CUdeviceptr *iterations, uint64_t xb, uint64_t yb)
{
	CUdeviceptr x = chunk(xb, VTC_PREFETCH), y = chunk(yb, VTC_PREFETCH);
	vtc_htod(0, x, xb);
	vtc_htod(0, y, yb);
	const uint64_t act[5] = {64 * 64 * 64 * 48 * 4ull, 64 * 32 * 32 * 96 * 4ull,
	                         64 * 16 * 16 * 192 * 4ull, 64 * 64 * 4, 64 * 200 * 4};
	CUdeviceptr a[5], g[NVARS];
	for (int k = 0; k < 5; k++)
		a[k] = chunk(act[k], VTC_ACTIVATIONS);
	for (int i = NVARS - 1; i >= 0; i--) {
		g[i] = chunk(var_bytes[i], VTC_GRADIENTS);
		if (i % 2 == 0 && i / 2 < 5)
			vtc_region_give(&region, a[i / 2]);
	}
	if (s == 0) { /* _create_all_weights: iterations, then m and v per variable */
		*iterations = chunk(8, VTC_OPTIMIZER);
		vtc_zero(0, *iterations, 8);
		for (int i = 0; i < 2 * NVARS; i++) {
			slots[i] = chunk(var_bytes[i / 2], VTC_OPTIMIZER);
			vtc_zero(0, slots[i], var_bytes[i / 2]);
		}
	}
	for (int i = 0; i < NVARS; i++)
		vtc_region_give(&region, g[i]);
	CUdeviceptr loss = chunk(4, VTC_ACTIVATIONS);
	vtc_dtoh(0, loss, 4); /* sync_to_numpy_or_python_type(logs) */
	vtc_region_give(&region, loss);
	vtc_region_give(&region, y);
	vtc_region_give(&region, x);
}

int main(int argc, char **argv)
{
	vtc_start(argc, argv, "tf_bfc_generator", 1, VTC_DLSYM);
	const int epochs = 2, steps_per_epoch = 10;
	const uint64_t xb = 64 * 64 * 64 * 3 * 4ull, yb = 64 * 8;
	uint64_t limit = memory_limit();
	CUdeviceptr base = vtc_alloc(0, limit, VTC_POOL);
	vtc_region_init(&region, 0, base, limit, vtc_record_of(0, base));
	CUdeviceptr var[NVARS], slots[2 * NVARS], iterations = 0, metrics[4];
	build_and_restore(var);
	for (int k = 0; k < 4; k++) { /* compile(): Mean and Accuracy total/count */
		metrics[k] = chunk(4, VTC_OTHER);
		vtc_zero(0, metrics[k], 4);
	}
	for (int e = 0; e < epochs; e++)
		for (int s = 0; s < steps_per_epoch; s++) {
			if (vtc_markers())
				vtc_step(e * steps_per_epoch + s);
			train_step(e * steps_per_epoch + s, slots, &iterations, xb, yb);
		}
	/* the process ends: every tensor released, then the region */
	for (int i = 0; i < NVARS; i++) {
		vtc_region_give(&region, var[i]);
		vtc_region_give(&region, slots[2 * i]);
		vtc_region_give(&region, slots[2 * i + 1]);
	}
	vtc_region_give(&region, iterations);
	for (int k = 0; k < 4; k++)
		vtc_region_give(&region, metrics[k]);
	vtc_region_settle(&region);
	vtc_free(0, base);
	vtc_line("no_finding whole_dataset_upload");
	vtc_line("finding prefetch_depth 0 1 %llu", (unsigned long long)(xb + yb));
	vtc_line("steps 0 %d", epochs * steps_per_epoch);
	vtc_finish();
	return 0;
}
