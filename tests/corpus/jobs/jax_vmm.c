/* JAX/XLA over a virtual-memory arena (tsl's GpuVirtualMemAllocator under
 * the BFC allocator): one large VA reservation (cuMemAddressReserve), and
 * each time the BFC allocator extends it maps a new physical chunk
 * (cuMemCreate + cuMemMap + cuMemSetAccess) right after the last one, the
 * chunk sizes doubling (2, 4, 8, ... MiB, at least the request). Buffers are
 * chunks of the arena at offsets. Flax/optax: params device_put leaf by leaf
 * (uploads), optax.adam init before the first step (mu, nu zeros), a jitted
 * step with donate_argnums (outputs reuse the param/state buffers), XLA's
 * per-step temp buffer (activations and gradients in one allocation), and
 * flax.jax_utils.prefetch_to_device(it, 2) (two batches on the device).
 * Truth: each physical chunk (ADDR = its handle) by what it held. */
#include "vtc_pool.h"

#define LAYERS 4
#define MAXC 24

static struct vtc_region chunk[MAXC];
static int nchunk;
static CUdeviceptr va_base, va_next;
static uint64_t next_size = 2 * MIB;
static const uint64_t va_size = 1024 * MIB;

static CUdeviceptr take(uint64_t bytes, enum vtc_cat cat)
{
	for (int i = 0; i < nchunk; i++) {
		CUdeviceptr p = vtc_region_take(&chunk[i], bytes, cat);
		if (p)
			return p;
	}
	uint64_t size = next_size;
	while (size < bytes)
		size *= 2;
	CUmemGenericAllocationHandle h = vtc_vmm_create(0, size, VTC_POOL);
	vtc_vmm_map(0, va_next, size, h);
	vtc_region_init(&chunk[nchunk], 0, va_next, size, vtc_record_of(0, (uint64_t)h));
	va_next += size;
	next_size = size * 2;
	return vtc_region_take(&chunk[nchunk++], bytes, cat);
}

static void give(CUdeviceptr p)
{
	for (int i = 0; i < nchunk; i++)
		if (vtc_region_give(&chunk[i], p))
			return;
}

int main(int argc, char **argv)
{
	vtc_start(argc, argv, "jax_vmm", 1, VTC_GETPROC);
	int steps = (int)vtc_opt_size("--steps", 8);
	const uint64_t wb[LAYERS] = {8 * MIB, 4 * MIB, 4 * MIB, 128 * KIB};
	const uint64_t batch = 2 * MIB, temp = 24 * MIB;
	VTC_CHECK(vtc.MemAddressReserve(&va_base, va_size, 2 * MIB, 0, 0));
	va_next = va_base;
	CUdeviceptr w[LAYERS], mu[LAYERS], nu[LAYERS], ring[64] = {0};
	for (int l = 0; l < LAYERS; l++) {
		w[l] = take(wb[l], VTC_WEIGHTS);
		vtc_htod(0, w[l], wb[l]);
	}
	for (int l = 0; l < LAYERS; l++) {
		mu[l] = take(wb[l], VTC_OPTIMIZER);
		vtc_zero(0, mu[l], wb[l]);
		nu[l] = take(wb[l], VTC_OPTIMIZER);
		vtc_zero(0, nu[l], wb[l]);
	}
	for (int s = 0; s < 2; s++) {
		ring[s] = take(batch, VTC_PREFETCH);
		vtc_htod(0, ring[s], batch);
	}
	for (int s = 0; s < steps; s++) {
		if (vtc_markers())
			vtc_step(s);
		/* the temp buffer: gradients first, then activations, in one chunk */
		uint64_t gbytes = wb[0] + wb[1] + wb[2] + wb[3];
		CUdeviceptr tg = take(gbytes, VTC_GRADIENTS);
		CUdeviceptr ta = take(temp - gbytes, VTC_ACTIVATIONS);
		give(ta);
		give(tg);
		give(ring[s % 64]);
		if (s + 2 < steps) {
			ring[(s + 2) % 64] = take(batch, VTC_PREFETCH);
			vtc_htod(0, ring[(s + 2) % 64], batch);
		}
	}
	for (int i = 0; i < nchunk; i++)
		vtc_region_settle(&chunk[i]);
	vtc_line("no_finding whole_dataset_upload");
	vtc_line("finding prefetch_depth 0 2 %llu", (unsigned long long)batch);
	vtc_line("steps 0 %d", steps);
	vtc_finish();
	return 0;
}
