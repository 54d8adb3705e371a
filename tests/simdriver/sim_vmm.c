/* Virtual memory management of the simulated driver. As on the real driver,
 * physical memory is charged at cuMemCreate; cuMemAddressReserve takes VA
 * only; cuMemMap makes a reserved range hold the handle's bytes; the physical
 * memory is freed at cuMemRelease once the last mapping is gone. */
#include "sim_internal.h"

#include <stdlib.h>
#include <sys/mman.h>

static CUresult check_prop(const CUmemAllocationProp *prop)
{
	if (!prop || prop->type != CU_MEM_ALLOCATION_TYPE_PINNED ||
	    prop->location.type != CU_MEM_LOCATION_TYPE_DEVICE)
		return CUDA_ERROR_INVALID_VALUE;
	return prop->location.id >= 0 && prop->location.id < sim.ndev ? CUDA_SUCCESS : CUDA_ERROR_INVALID_DEVICE;
}

CUresult sim_cuMemGetAllocationGranularity(size_t *granularity, const CUmemAllocationProp *prop,
					   CUmemAllocationGranularity_flags option)
{
	SIM_TRY(sim_need_init());
	if (!granularity || (option != CU_MEM_ALLOC_GRANULARITY_MINIMUM && option != CU_MEM_ALLOC_GRANULARITY_RECOMMENDED))
		return CUDA_ERROR_INVALID_VALUE;
	SIM_TRY(check_prop(prop));
	*granularity = VTSIM_GRANULARITY;
	return CUDA_SUCCESS;
}

static struct sim_handle *handle_find_locked(CUmemGenericAllocationHandle handle)
{
	for (struct sim_handle *h = sim.handles; h; h = h->next_all)
		if ((CUmemGenericAllocationHandle)(uintptr_t)h == handle && !h->released)
			return h;
	return NULL;
}

static void handle_destroy_locked(struct sim_handle *h)
{
	struct sim_handle **link = &sim.handles;
	while (*link != h)
		link = &(*link)->next_all;
	*link = h->next_all;
	sim_uncharge(h->device, h->size);
	munmap(h->backing, h->size);
	free(h);
}

CUresult sim_cuMemCreate(CUmemGenericAllocationHandle *handle, size_t size, const CUmemAllocationProp *prop,
			 unsigned long long flags)
{
	SIM_TRY(sim_need_init());
	if (!handle || flags || !size || size % VTSIM_GRANULARITY)
		return CUDA_ERROR_INVALID_VALUE;
	SIM_TRY(check_prop(prop));
	struct sim_handle *h = calloc(1, sizeof *h);
	if (!h)
		return CUDA_ERROR_OUT_OF_MEMORY;
	h->device = prop->location.id;
	h->size = size;
	pthread_mutex_lock(&sim_lock);
	CUresult r = sim_charge(h->device, size);
	if (r == CUDA_SUCCESS) {
		void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
		if (p == MAP_FAILED) {
			sim_uncharge(h->device, size);
			r = CUDA_ERROR_OUT_OF_MEMORY;
		} else {
			h->backing = p;
			h->next_all = sim.handles;
			sim.handles = h;
		}
	}
	pthread_mutex_unlock(&sim_lock);
	if (r != CUDA_SUCCESS) {
		free(h);
		return r;
	}
	*handle = (CUmemGenericAllocationHandle)(uintptr_t)h;
	return CUDA_SUCCESS;
}

CUresult sim_cuMemRelease(CUmemGenericAllocationHandle handle)
{
	SIM_TRY(sim_need_init());
	CUresult r = CUDA_SUCCESS;
	pthread_mutex_lock(&sim_lock);
	struct sim_handle *h = handle_find_locked(handle);
	if (!h)
		r = CUDA_ERROR_INVALID_VALUE;
	else if (h->maps)
		h->released = 1; /* freed when the last mapping goes */
	else
		handle_destroy_locked(h);
	pthread_mutex_unlock(&sim_lock);
	return r;
}

/* Reserve VA in the window of the device the hint points into, else of the
 * current context's device, else device 0 (VA is process-wide under UVA). */
static int reserve_device(CUdeviceptr addr)
{
	int dev = addr ? sim_window_of(addr) : -1;
	struct CUctx_st *ctx;
	if (dev < 0 && sim_need_ctx(&ctx) == CUDA_SUCCESS)
		dev = ctx->device;
	return dev < 0 ? 0 : dev;
}

CUresult sim_cuMemAddressReserve(CUdeviceptr *ptr, size_t size, size_t alignment, CUdeviceptr addr,
				 unsigned long long flags)
{
	SIM_TRY(sim_need_init());
	if (!ptr || !size || size % VTSIM_GRANULARITY || flags || (alignment & (alignment - 1)))
		return CUDA_ERROR_INVALID_VALUE;
	if (alignment < VTSIM_GRANULARITY)
		alignment = VTSIM_GRANULARITY;
	int dev = reserve_device(addr);
	struct sim_reservation resv = {.size = size, .device = dev};
	pthread_mutex_lock(&sim_lock);
	CUresult r = sim_va_carve(dev, size, alignment, addr, &resv.start);
	if (r == CUDA_SUCCESS) {
		r = sim_resv_insert(&resv);
		if (r != CUDA_SUCCESS)
			sim_va_release(dev, resv.start, size);
	}
	pthread_mutex_unlock(&sim_lock);
	if (r == CUDA_SUCCESS)
		*ptr = resv.start;
	return r;
}

CUresult sim_cuMemAddressFree(CUdeviceptr ptr, size_t size)
{
	SIM_TRY(sim_need_init());
	CUresult r = CUDA_SUCCESS;
	pthread_mutex_lock(&sim_lock);
	struct sim_reservation *resv = sim_resv_find(ptr);
	if (!resv || resv->start != ptr || resv->size != size || sim_range_overlaps(ptr, size)) {
		r = CUDA_ERROR_INVALID_VALUE; /* unknown, partial, or still mapped */
	} else {
		sim_va_release(resv->device, ptr, size);
		sim_resv_remove(resv);
	}
	pthread_mutex_unlock(&sim_lock);
	return r;
}

CUresult sim_cuMemMap(CUdeviceptr ptr, size_t size, size_t offset, CUmemGenericAllocationHandle handle,
		      unsigned long long flags)
{
	SIM_TRY(sim_need_init());
	if (flags || !size || size % VTSIM_GRANULARITY || ptr % VTSIM_GRANULARITY)
		return CUDA_ERROR_INVALID_VALUE;
	CUresult r = CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&sim_lock);
	struct sim_handle *h = handle_find_locked(handle);
	struct sim_reservation *resv = sim_resv_find(ptr);
	if (h && resv && offset <= h->size && size <= h->size - offset &&
	    size <= resv->start + resv->size - ptr && !sim_range_overlaps(ptr, size)) {
		struct sim_range range = {
			.start = ptr,
			.size = size,
			.host = h->backing + offset,
			.device = h->device,
			.kind = SIM_RANGE_MAPPING,
			.handle = h,
		};
		if (sim_range_insert(&range)) {
			h->maps++;
			r = CUDA_SUCCESS;
		} else {
			r = CUDA_ERROR_OUT_OF_MEMORY;
		}
	}
	pthread_mutex_unlock(&sim_lock);
	return r;
}

/* [ptr, ptr+size) must be exactly a run of whole mappings. */
static int unmap_span_ok(CUdeviceptr ptr, size_t size)
{
	CUdeviceptr cur = ptr, end = ptr + size;
	while (cur < end) {
		const struct sim_range *r = sim_range_exact(cur);
		if (!r || r->kind != SIM_RANGE_MAPPING || r->size > end - cur)
			return 0;
		cur += r->size;
	}
	return 1;
}

CUresult sim_cuMemUnmap(CUdeviceptr ptr, size_t size)
{
	SIM_TRY(sim_need_init());
	if (!size)
		return CUDA_ERROR_INVALID_VALUE;
	CUresult r = CUDA_SUCCESS;
	pthread_mutex_lock(&sim_lock);
	if (!unmap_span_ok(ptr, size)) {
		r = CUDA_ERROR_INVALID_VALUE;
	} else {
		CUdeviceptr cur = ptr;
		while (cur < ptr + size) {
			struct sim_range *range = sim_range_exact(cur);
			struct sim_handle *h = range->handle;
			cur += range->size;
			sim_range_remove(range);
			if (--h->maps == 0 && h->released)
				handle_destroy_locked(h);
		}
	}
	pthread_mutex_unlock(&sim_lock);
	return r;
}

/* Access is not enforced; the range must be mapped. */
CUresult sim_cuMemSetAccess(CUdeviceptr ptr, size_t size, const CUmemAccessDesc *desc, size_t count)
{
	SIM_TRY(sim_need_init());
	if (!desc || !count || !size)
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&sim_lock);
	const struct sim_range *range = sim_range_find(ptr);
	int ok = range && range->kind == SIM_RANGE_MAPPING;
	pthread_mutex_unlock(&sim_lock);
	return ok ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}
