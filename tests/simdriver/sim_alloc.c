/* Linear device allocations of the simulated driver: plain, pitched, managed,
 * stream-ordered (pools), their frees, capacity queries and pointer queries.
 * Streams are synchronous, so an async allocation or free takes effect at
 * once and a pool never caches freed memory. */
#define _GNU_SOURCE /* RTLD_DEFAULT */
#include "sim_internal.h"

#include <dlfcn.h>
#include <stdlib.h>

CUresult sim_alloc_range(struct CUctx_st *ctx, int dev, size_t size, enum sim_range_kind kind,
			 struct CUmemPoolHandle_st *pool, CUdeviceptr *out)
{
	if (!out || size == 0 || size > ~(size_t)0 - VTSIM_ALIGN)
		return CUDA_ERROR_INVALID_VALUE;
	size_t carved = sim_round_up(size, VTSIM_ALIGN);
	CUdeviceptr addr;
	pthread_mutex_lock(&sim_lock);
	CUresult r = sim_charge(dev, carved);
	if (r == CUDA_SUCCESS) {
		r = sim_va_carve(dev, carved, VTSIM_ALIGN, 0, &addr);
		if (r != CUDA_SUCCESS)
			sim_uncharge(dev, carved);
	}
	if (r == CUDA_SUCCESS) {
		struct sim_device *d = &sim.dev[dev];
		struct sim_range range = {
			.start = addr,
			.size = size,
			.carved = carved,
			.charged = carved,
			.host = d->backing + (addr - d->base),
			.device = dev,
			.kind = kind,
			.ctx = ctx->device == dev ? ctx : &d->primary,
			.pool = pool,
		};
		if (!sim_range_insert(&range)) {
			sim_va_release(dev, addr, carved);
			sim_uncharge(dev, carved);
			r = CUDA_ERROR_OUT_OF_MEMORY;
		} else if (pool) {
			pool->live_bytes += carved;
		}
	}
	pthread_mutex_unlock(&sim_lock);
	if (r == CUDA_SUCCESS)
		*out = addr;
	return r;
}

CUresult sim_free_range(CUdeviceptr ptr)
{
	CUresult r = CUDA_SUCCESS;
	pthread_mutex_lock(&sim_lock);
	struct sim_range *range = sim_range_exact(ptr);
	if (!range || range->kind == SIM_RANGE_MAPPING) {
		r = CUDA_ERROR_INVALID_VALUE;
	} else {
		if (range->pool)
			range->pool->live_bytes -= range->carved;
		sim_va_release(range->device, range->start, range->carved);
		sim_uncharge(range->device, range->charged);
		sim_range_remove(range);
	}
	pthread_mutex_unlock(&sim_lock);
	return r;
}

CUresult sim_cuMemAlloc_v2(CUdeviceptr *dptr, size_t bytesize)
{
	struct CUctx_st *ctx;
	SIM_TRY(sim_need_ctx(&ctx));
	return sim_alloc_range(ctx, ctx->device, bytesize, SIM_RANGE_ALLOC, NULL, dptr);
}

CUresult sim_cuMemAllocPitch_v2(CUdeviceptr *dptr, size_t *pPitch, size_t WidthInBytes, size_t Height,
				unsigned int ElementSizeBytes)
{
	struct CUctx_st *ctx;
	SIM_TRY(sim_need_ctx(&ctx));
	if (!pPitch || !WidthInBytes || !Height ||
	    (ElementSizeBytes != 4 && ElementSizeBytes != 8 && ElementSizeBytes != 16))
		return CUDA_ERROR_INVALID_VALUE;
	size_t pitch = sim_round_up(WidthInBytes, VTSIM_PITCH_ALIGN);
	if (pitch < WidthInBytes || Height > ~(size_t)0 / pitch)
		return CUDA_ERROR_INVALID_VALUE;
	SIM_TRY(sim_alloc_range(ctx, ctx->device, pitch * Height, SIM_RANGE_ALLOC, NULL, dptr));
	*pPitch = pitch;
	return CUDA_SUCCESS;
}

/* Managed memory lives in the device window like any allocation: it is NOT
 * host-accessible in the simulation (documented). */
CUresult sim_cuMemAllocManaged(CUdeviceptr *dptr, size_t bytesize, unsigned int flags)
{
	struct CUctx_st *ctx;
	SIM_TRY(sim_need_ctx(&ctx));
	if (flags != CU_MEM_ATTACH_GLOBAL && flags != CU_MEM_ATTACH_HOST)
		return CUDA_ERROR_INVALID_VALUE;
	return sim_alloc_range(ctx, ctx->device, bytesize, SIM_RANGE_MANAGED, NULL, dptr);
}

CUresult sim_cuMemFree_v2(CUdeviceptr dptr)
{
	struct CUctx_st *ctx;
	SIM_TRY(sim_need_ctx(&ctx));
	return dptr ? sim_free_range(dptr) : CUDA_SUCCESS;
}

/* ---- stream-ordered allocation and pools ------------------------------- */

static int pool_valid_locked(struct CUmemPoolHandle_st *pool)
{
	if (!pool)
		return 0;
	for (int i = 0; i < sim.ndev; i++)
		if (pool == &sim.dev[i].default_pool)
			return 1;
	for (struct CUmemPoolHandle_st *p = sim.pools; p; p = p->next_all)
		if (p == pool)
			return p->valid;
	return 0;
}

static int pool_valid(struct CUmemPoolHandle_st *pool)
{
	pthread_mutex_lock(&sim_lock);
	int ok = pool_valid_locked(pool);
	pthread_mutex_unlock(&sim_lock);
	return ok;
}

/* VT_SIM_NESTED: a driver whose entry points call its other exported entry
 * points, as real drivers (and layers between a job and its driver) do. The
 * export is found by name in the global scope, so a preloaded tracer's
 * wrapper of it is what gets called; and the call is the entry point's last
 * act, so the compiler may make it a jump that returns straight into the
 * tracer's outer wrapper. */
static void *nested_export(const char *symbol)
{
	return sim.nested ? dlsym(RTLD_DEFAULT, symbol) : NULL;
}

CUresult sim_cuMemAllocAsync(CUdeviceptr *dptr, size_t bytesize, CUstream hStream)
{
	PFN_cuMemAlloc_v3020 next = (PFN_cuMemAlloc_v3020)nested_export("cuMemAlloc_v2");
	if (next)
		return next(dptr, bytesize);
	struct CUctx_st *ctx;
	SIM_TRY(sim_stream_ctx(hStream, &ctx));
	pthread_mutex_lock(&sim_lock);
	struct CUmemPoolHandle_st *pool = sim.dev[ctx->device].current_pool;
	pthread_mutex_unlock(&sim_lock);
	return sim_alloc_range(ctx, ctx->device, bytesize, SIM_RANGE_POOL, pool, dptr);
}

CUresult sim_cuMemAllocAsync_ptsz(CUdeviceptr *dptr, size_t bytesize, CUstream hStream)
{
	PFN_cuMemAllocAsync_v11020 next =
	    (PFN_cuMemAllocAsync_v11020)nested_export("cuMemAllocAsync");
	if (next)
		return next(dptr, bytesize, hStream);
	return sim_cuMemAllocAsync(dptr, bytesize, hStream);
}

CUresult sim_cuMemAllocFromPoolAsync(CUdeviceptr *dptr, size_t bytesize, CUmemoryPool pool, CUstream hStream)
{
	struct CUctx_st *ctx;
	SIM_TRY(sim_stream_ctx(hStream, &ctx));
	if (!pool_valid(pool))
		return CUDA_ERROR_INVALID_VALUE;
	return sim_alloc_range(ctx, pool->device, bytesize, SIM_RANGE_POOL, pool, dptr);
}

CUresult sim_cuMemAllocFromPoolAsync_ptsz(CUdeviceptr *dptr, size_t bytesize, CUmemoryPool pool,
					  CUstream hStream)
{
	return sim_cuMemAllocFromPoolAsync(dptr, bytesize, pool, hStream);
}

CUresult sim_cuMemFreeAsync(CUdeviceptr dptr, CUstream hStream)
{
	struct CUctx_st *ctx;
	SIM_TRY(sim_stream_ctx(hStream, &ctx));
	return sim_free_range(dptr);
}

CUresult sim_cuMemFreeAsync_ptsz(CUdeviceptr dptr, CUstream hStream) { return sim_cuMemFreeAsync(dptr, hStream); }

CUresult sim_cuMemPoolCreate(CUmemoryPool *pool, const CUmemPoolProps *poolProps)
{
	SIM_TRY(sim_need_init());
	if (!pool || !poolProps || poolProps->allocType != CU_MEM_ALLOCATION_TYPE_PINNED ||
	    poolProps->location.type != CU_MEM_LOCATION_TYPE_DEVICE || poolProps->location.id < 0 ||
	    poolProps->location.id >= sim.ndev)
		return CUDA_ERROR_INVALID_VALUE;
	struct CUmemPoolHandle_st *p = calloc(1, sizeof *p);
	if (!p)
		return CUDA_ERROR_OUT_OF_MEMORY;
	p->device = poolProps->location.id;
	p->valid = 1;
	pthread_mutex_lock(&sim_lock);
	p->next_all = sim.pools;
	sim.pools = p;
	pthread_mutex_unlock(&sim_lock);
	*pool = p;
	return CUDA_SUCCESS;
}

CUresult sim_cuMemPoolDestroy(CUmemoryPool pool)
{
	SIM_TRY(sim_need_init());
	CUresult r = CUDA_SUCCESS;
	pthread_mutex_lock(&sim_lock);
	if (!pool_valid_locked(pool) || pool->is_default) {
		r = CUDA_ERROR_INVALID_VALUE;
	} else {
		pool->valid = 0;
		struct sim_device *d = &sim.dev[pool->device];
		if (d->current_pool == pool)
			d->current_pool = &d->default_pool;
	}
	pthread_mutex_unlock(&sim_lock);
	return r;
}

/* Nothing is cached, so there is nothing to trim. */
CUresult sim_cuMemPoolTrimTo(CUmemoryPool pool, size_t minBytesToKeep)
{
	(void)minBytesToKeep;
	SIM_TRY(sim_need_init());
	return pool_valid(pool) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

CUresult sim_cuDeviceGetDefaultMemPool(CUmemoryPool *pool_out, CUdevice dev)
{
	SIM_TRY(sim_need_init());
	if (!pool_out)
		return CUDA_ERROR_INVALID_VALUE;
	if (dev < 0 || dev >= sim.ndev)
		return CUDA_ERROR_INVALID_DEVICE;
	*pool_out = &sim.dev[dev].default_pool;
	return CUDA_SUCCESS;
}

CUresult sim_cuDeviceGetMemPool(CUmemoryPool *pool, CUdevice dev)
{
	SIM_TRY(sim_need_init());
	if (!pool)
		return CUDA_ERROR_INVALID_VALUE;
	if (dev < 0 || dev >= sim.ndev)
		return CUDA_ERROR_INVALID_DEVICE;
	pthread_mutex_lock(&sim_lock);
	*pool = sim.dev[dev].current_pool;
	pthread_mutex_unlock(&sim_lock);
	return CUDA_SUCCESS;
}

CUresult sim_cuDeviceSetMemPool(CUdevice dev, CUmemoryPool pool)
{
	SIM_TRY(sim_need_init());
	if (dev < 0 || dev >= sim.ndev)
		return CUDA_ERROR_INVALID_DEVICE;
	CUresult r = CUDA_SUCCESS;
	pthread_mutex_lock(&sim_lock);
	if (!pool_valid_locked(pool) || pool->device != dev)
		r = CUDA_ERROR_INVALID_VALUE;
	else
		sim.dev[dev].current_pool = pool;
	pthread_mutex_unlock(&sim_lock);
	return r;
}

/* ---- capacity and pointer queries --------------------------------------- */

/* Every cuMemGetInfo call, whoever made it (vtsim_meminfo_calls). */
VTSIM_HIDDEN unsigned long sim_meminfo_calls;

CUresult sim_cuMemGetInfo_v2(size_t *free_bytes, size_t *total)
{
	__atomic_fetch_add(&sim_meminfo_calls, 1, __ATOMIC_RELAXED);
	struct CUctx_st *ctx;
	SIM_TRY(sim_need_ctx(&ctx));
	if (!free_bytes || !total)
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&sim_lock);
	const struct sim_device *d = &sim.dev[ctx->device];
	*free_bytes = d->capacity - d->charged;
	*total = d->capacity;
	pthread_mutex_unlock(&sim_lock);
	return CUDA_SUCCESS;
}

static unsigned int clamp32(size_t v) { return v > 0xffffffffu ? 0xffffffffu : (unsigned int)v; }

CUresult sim_cuMemGetInfo(unsigned int *free_bytes, unsigned int *total)
{
	size_t f, t;
	if (!free_bytes || !total)
		return CUDA_ERROR_INVALID_VALUE;
	SIM_TRY(sim_cuMemGetInfo_v2(&f, &t));
	*free_bytes = clamp32(f);
	*total = clamp32(t);
	return CUDA_SUCCESS;
}

CUresult sim_cuMemGetAddressRange_v2(CUdeviceptr *pbase, size_t *psize, CUdeviceptr dptr)
{
	SIM_TRY(sim_need_init());
	CUresult r = CUDA_ERROR_NOT_FOUND;
	pthread_mutex_lock(&sim_lock);
	const struct sim_range *range = sim_range_find(dptr);
	if (range) {
		if (pbase)
			*pbase = range->start;
		if (psize)
			*psize = range->size;
		r = CUDA_SUCCESS;
	}
	pthread_mutex_unlock(&sim_lock);
	return r;
}

static CUresult pointer_attribute(void *data, CUpointer_attribute attribute, CUdeviceptr ptr,
				  const struct sim_range *range)
{
	int is_mapping = range->kind == SIM_RANGE_MAPPING;
	switch (attribute) {
	case CU_POINTER_ATTRIBUTE_CONTEXT:
		*(CUcontext *)data = is_mapping ? NULL : range->ctx;
		return CUDA_SUCCESS;
	case CU_POINTER_ATTRIBUTE_MEMORY_TYPE:
		*(unsigned int *)data = CU_MEMORYTYPE_DEVICE;
		return CUDA_SUCCESS;
	case CU_POINTER_ATTRIBUTE_DEVICE_POINTER:
		*(CUdeviceptr *)data = ptr;
		return CUDA_SUCCESS;
	case CU_POINTER_ATTRIBUTE_BUFFER_ID:
		*(unsigned long long *)data = range->buffer_id;
		return CUDA_SUCCESS;
	case CU_POINTER_ATTRIBUTE_IS_MANAGED:
		*(int *)data = range->kind == SIM_RANGE_MANAGED;
		return CUDA_SUCCESS;
	case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL:
		*(int *)data = range->device;
		return CUDA_SUCCESS;
	case CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE:
		*(int *)data = range->kind == SIM_RANGE_ALLOC;
		return CUDA_SUCCESS;
	case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR:
	case CU_POINTER_ATTRIBUTE_MAPPING_BASE_ADDR:
		*(CUdeviceptr *)data = range->start;
		return CUDA_SUCCESS;
	case CU_POINTER_ATTRIBUTE_RANGE_SIZE:
	case CU_POINTER_ATTRIBUTE_MAPPING_SIZE:
		*(size_t *)data = range->size;
		return CUDA_SUCCESS;
	case CU_POINTER_ATTRIBUTE_MAPPED:
	case CU_POINTER_ATTRIBUTE_SYNC_MEMOPS:
		*(int *)data = 1;
		return CUDA_SUCCESS;
	case CU_POINTER_ATTRIBUTE_ACCESS_FLAGS:
		*(int *)data = CU_POINTER_ATTRIBUTE_ACCESS_FLAG_READWRITE;
		return CUDA_SUCCESS;
	case CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE:
		*(CUmemoryPool *)data = range->pool;
		return CUDA_SUCCESS;
	case CU_POINTER_ATTRIBUTE_ALLOWED_HANDLE_TYPES:
		*(unsigned long long *)data = 0;
		return CUDA_SUCCESS;
	default:
		return CUDA_ERROR_INVALID_VALUE; /* incl. HOST_POINTER: none here */
	}
}

/* Pinned host memory from cuMemAllocHost/cuMemHostAlloc. */
static CUresult host_attribute(void *data, CUpointer_attribute attribute, CUdeviceptr ptr, const struct sim_host *h)
{
	switch (attribute) {
	case CU_POINTER_ATTRIBUTE_CONTEXT:
		*(CUcontext *)data = h->ctx;
		return CUDA_SUCCESS;
	case CU_POINTER_ATTRIBUTE_MEMORY_TYPE:
		*(unsigned int *)data = CU_MEMORYTYPE_HOST;
		return CUDA_SUCCESS;
	case CU_POINTER_ATTRIBUTE_DEVICE_POINTER:
	case CU_POINTER_ATTRIBUTE_HOST_POINTER:
		*(void **)data = (void *)(uintptr_t)ptr;
		return CUDA_SUCCESS;
	case CU_POINTER_ATTRIBUTE_IS_MANAGED:
		*(int *)data = 0;
		return CUDA_SUCCESS;
	case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR:
		*(CUdeviceptr *)data = (CUdeviceptr)(uintptr_t)h->ptr;
		return CUDA_SUCCESS;
	case CU_POINTER_ATTRIBUTE_RANGE_SIZE:
		*(size_t *)data = h->size;
		return CUDA_SUCCESS;
	default:
		return CUDA_ERROR_INVALID_VALUE;
	}
}

CUresult sim_cuPointerGetAttribute(void *data, CUpointer_attribute attribute, CUdeviceptr ptr)
{
	SIM_TRY(sim_need_init());
	if (!data)
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&sim_lock);
	const struct sim_range *range = sim_range_find(ptr);
	const struct sim_host *host = range ? NULL : sim_host_find((const void *)(uintptr_t)ptr);
	CUresult r = CUDA_ERROR_INVALID_VALUE; /* unknown (pageable) host memory */
	if (range)
		r = pointer_attribute(data, attribute, ptr, range);
	else if (host)
		r = host_attribute(data, attribute, ptr, host);
	pthread_mutex_unlock(&sim_lock);
	return r;
}
