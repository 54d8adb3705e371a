/* TensorFlow's BFC allocator with allow_growth=True
 * (TF_FORCE_GPU_ALLOW_GROWTH): the first region is 2 MiB and every Extend()
 * asks the driver for a region at least the request, doubled until it fits,
 * doubling the next region's size when it did not have to grow
 * (curr_region_allocation_bytes_ *= 2), so regions of 2, 4, 8, ... MiB
 * appear as the job grows and are never given back; a request of more than
 * half a region owns the whole chunk (FindChunkPtr does not split it). A region holds
 * whatever chunks landed in it: one kind (its category) or several (pool,
 * with parts). Keras fit on numpy x (40 MiB) and y: whole upload of both
 * (_EagerConst), weights initialized on the device, RMSprop (one slot),
 * batches gathered on the device. No markers. */
#include "vtc_pool.h"

#define LAYERS 5
#define MAXR 32

static struct vtc_region reg[MAXR];
static int nreg;
static uint64_t next_region = 2 * MIB;

static CUdeviceptr take(uint64_t bytes, enum vtc_cat cat)
{
	for (int i = 0; i < nreg; i++) {
		CUdeviceptr p = vtc_region_take(&reg[i], bytes, cat);
		if (p)
			return p;
	}
	uint64_t size = next_region;
	while (size < bytes)
		size *= 2;
	CUdeviceptr base = vtc_alloc(0, size, VTC_POOL);
	vtc_region_init(&reg[nreg], 0, base, size, vtc_record_of(0, base));
	/* Extend() doubles the next region's size only when it did not have
	 * to grow this one to fit the request */
	next_region = size > next_region ? size : size * 2;
	/* FindChunkPtr splits a chunk only when it is at least twice the
	 * request (or would waste 128 MiB or more): a request of more than
	 * half the new region owns all of it */
	if (bytes * 2 > size && size - bytes < 128 * MIB)
		bytes = size;
	return vtc_region_take(&reg[nreg++], bytes, cat);
}

static void give(CUdeviceptr p)
{
	for (int i = 0; i < nreg; i++)
		if (vtc_region_give(&reg[i], p))
			return;
}

int main(int argc, char **argv)
{
	vtc_start(argc, argv, "tf_bfc_growth", 1, VTC_DLSYM);
	int steps = (int)vtc_opt_size("--steps", 10);
	const uint64_t xb = 40 * MIB, yb = 160 * KIB, batch = 1280 * KIB, act = 1 * MIB;
	const uint64_t wb[LAYERS] = {1 * MIB, 1 * MIB, 512 * KIB, 512 * KIB, 64 * KIB};
	CUdeviceptr w[LAYERS], rms[LAYERS];
	for (int l = 0; l < LAYERS; l++) {
		w[l] = take(wb[l], VTC_WEIGHTS);
		vtc_zero(0, w[l], wb[l]);
	}
	CUdeviceptr x = take(xb, VTC_DATASET);
	vtc_htod(0, x, xb);
	CUdeviceptr y = take(yb, VTC_DATASET);
	vtc_htod(0, y, yb);
	for (int s = 0; s < steps; s++) {
		if (vtc_markers())
			vtc_step(s);
		CUdeviceptr bx = take(batch, VTC_ACTIVATIONS);
		vtc_dtod(0, bx, x + (uint64_t)(s % 30) * batch, batch);
		CUdeviceptr a[LAYERS], g[LAYERS];
		for (int l = 0; l < LAYERS; l++)
			a[l] = take(act, VTC_ACTIVATIONS);
		for (int l = LAYERS - 1; l >= 0; l--) {
			g[l] = take(wb[l], VTC_GRADIENTS);
			give(a[l]);
		}
		if (s == 0)
			for (int l = 0; l < LAYERS; l++)
				rms[l] = take(wb[l], VTC_OPTIMIZER);
		for (int l = 0; l < LAYERS; l++)
			give(g[l]);
		give(bx);
	}
	(void)rms;
	for (int i = 0; i < nreg; i++) {
		vtc_region_settle(&reg[i]);
		vtc_free(0, reg[i].base);
	}
	vtc_line("finding whole_dataset_upload 0 %llu", (unsigned long long)xb);
	vtc_line("finding whole_dataset_upload 0 %llu", (unsigned long long)yb);
	vtc_line("no_finding prefetch_depth");
	vtc_line("steps 0 %d", steps);
	vtc_finish();
	return 0;
}
