/* Initialisation, devices, contexts (a per-thread stack) and streams of the
 * simulated driver. */
#include "sim_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The calling thread's context stack; top = current context. */
static __thread struct CUctx_st *tls_stack[VTSIM_CTX_STACK];
static __thread int tls_depth;

static int initialized(void) { return __atomic_load_n(&sim.initialized, __ATOMIC_ACQUIRE); }

CUresult sim_need_init(void) { return initialized() ? CUDA_SUCCESS : CUDA_ERROR_NOT_INITIALIZED; }

static CUresult init_locked(void)
{
	sim.ndev = sim_env_devices();
	sim.capacity = sim_env_capacity();
	sim.driver_version = sim_env_driver_version();
	sim.nested = sim_env_nested();
	for (int i = 0; i < sim.ndev; i++) {
		struct sim_device *d = &sim.dev[i];
		d->primary = (struct CUctx_st){.device = i, .valid = 1, .primary = 1};
		d->default_pool = (struct CUmemPoolHandle_st){.device = i, .valid = 1, .is_default = 1};
		d->current_pool = &d->default_pool;
	}
	CUresult r = sim_space_init();
	if (r != CUDA_SUCCESS) {
		sim_space_teardown();
		return r;
	}
	__atomic_store_n(&sim.initialized, 1, __ATOMIC_RELEASE);
	return CUDA_SUCCESS;
}

CUresult sim_cuInit(unsigned int flags)
{
	if (flags != 0)
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&sim_lock);
	CUresult r = sim.initialized ? CUDA_SUCCESS : init_locked();
	pthread_mutex_unlock(&sim_lock);
	return r;
}

CUresult sim_cuDriverGetVersion(int *driverVersion)
{
	if (!driverVersion)
		return CUDA_ERROR_INVALID_VALUE;
	/* Works before cuInit, as on the real driver. */
	*driverVersion = initialized() ? sim.driver_version : sim_env_driver_version();
	return CUDA_SUCCESS;
}

/* A context handle is checked by identity against the known contexts, never
 * dereferenced first: a stale handle after vtsim_reset() is just invalid. */
int sim_ctx_valid(struct CUctx_st *ctx)
{
	if (!ctx)
		return 0;
	for (int i = 0; i < sim.ndev; i++)
		if (ctx == &sim.dev[i].primary)
			return 1;
	int ok = 0;
	pthread_mutex_lock(&sim_lock);
	for (struct CUctx_st *c = sim.ctxs; c; c = c->next_all)
		if (c == ctx)
			ok = c->valid;
	pthread_mutex_unlock(&sim_lock);
	return ok;
}

static struct CUctx_st *current(void) { return tls_depth ? tls_stack[tls_depth - 1] : NULL; }

CUresult sim_need_ctx(struct CUctx_st **out)
{
	SIM_TRY(sim_need_init());
	struct CUctx_st *ctx = current();
	if (!sim_ctx_valid(ctx))
		return CUDA_ERROR_INVALID_CONTEXT;
	*out = ctx;
	return CUDA_SUCCESS;
}

void sim_reset_thread(void) { tls_depth = 0; }

static CUresult check_device(CUdevice dev)
{
	SIM_TRY(sim_need_init());
	return dev >= 0 && dev < sim.ndev ? CUDA_SUCCESS : CUDA_ERROR_INVALID_DEVICE;
}

/* ---- devices ------------------------------------------------------------ */

CUresult sim_cuDeviceGet(CUdevice *device, int ordinal)
{
	SIM_TRY(sim_need_init());
	if (!device)
		return CUDA_ERROR_INVALID_VALUE;
	SIM_TRY(check_device(ordinal));
	*device = ordinal;
	return CUDA_SUCCESS;
}

CUresult sim_cuDeviceGetCount(int *count)
{
	SIM_TRY(sim_need_init());
	if (!count)
		return CUDA_ERROR_INVALID_VALUE;
	*count = sim.ndev;
	return CUDA_SUCCESS;
}

CUresult sim_cuDeviceGetName(char *name, int len, CUdevice dev)
{
	SIM_TRY(check_device(dev));
	if (!name || len <= 0)
		return CUDA_ERROR_INVALID_VALUE;
	snprintf(name, (size_t)len, "vramtrace simulated GPU %d", dev);
	return CUDA_SUCCESS;
}

static CUresult device_uuid(CUuuid *uuid, CUdevice dev)
{
	SIM_TRY(check_device(dev));
	if (!uuid)
		return CUDA_ERROR_INVALID_VALUE;
	static const char tag[16] = "vramtrace-sim-0";
	memcpy(uuid->bytes, tag, sizeof uuid->bytes);
	uuid->bytes[15] = (char)('0' + dev);
	return CUDA_SUCCESS;
}

CUresult sim_cuDeviceGetUuid(CUuuid *uuid, CUdevice dev) { return device_uuid(uuid, dev); }
CUresult sim_cuDeviceGetUuid_v2(CUuuid *uuid, CUdevice dev) { return device_uuid(uuid, dev); }

CUresult sim_cuDeviceTotalMem_v2(size_t *bytes, CUdevice dev)
{
	SIM_TRY(check_device(dev));
	if (!bytes)
		return CUDA_ERROR_INVALID_VALUE;
	*bytes = sim.dev[dev].capacity;
	return CUDA_SUCCESS;
}

/* The 32-bit ABI: clamped, like a 32-bit quantity must be. */
CUresult sim_cuDeviceTotalMem(unsigned int *bytes, CUdevice dev)
{
	size_t total;
	if (!bytes)
		return CUDA_ERROR_INVALID_VALUE;
	SIM_TRY(sim_cuDeviceTotalMem_v2(&total, dev));
	*bytes = total > 0xffffffffu ? 0xffffffffu : (unsigned int)total;
	return CUDA_SUCCESS;
}

/* Attributes a framework asks for at start-up; every other valid attribute
 * reads 0. An H100-like device: compute capability 9.0. */
static const struct {
	CUdevice_attribute attr;
	int value;
} attributes[] = {
	{CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK, 1024},
	{CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X, 1024},
	{CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y, 1024},
	{CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z, 64},
	{CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X, 2147483647},
	{CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y, 65535},
	{CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z, 65535},
	{CU_DEVICE_ATTRIBUTE_WARP_SIZE, 32},
	{CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, 132},
	{CU_DEVICE_ATTRIBUTE_TEXTURE_ALIGNMENT, 512},
	{CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH, 5120},
	{CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING, 1},
	{CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, 9},
	{CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, 0},
	{CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY, 1},
	{CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS, 1},
	{CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED, 1},
	{CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED, 1},
	{CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY, 1},
	{CU_DEVICE_ATTRIBUTE_ASYNC_ENGINE_COUNT, 2},
	{CU_DEVICE_ATTRIBUTE_CONCURRENT_KERNELS, 1},
	{CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID, 0},
	{CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID, 0},
};

CUresult sim_cuDeviceGetAttribute(int *pi, CUdevice_attribute attrib, CUdevice dev)
{
	SIM_TRY(check_device(dev));
	if (!pi || (int)attrib <= 0 || attrib >= CU_DEVICE_ATTRIBUTE_MAX)
		return CUDA_ERROR_INVALID_VALUE;
	*pi = 0;
	if (attrib == CU_DEVICE_ATTRIBUTE_PCI_BUS_ID)
		*pi = dev + 1;
	for (size_t i = 0; i < sizeof attributes / sizeof attributes[0]; i++)
		if (attributes[i].attr == attrib)
			*pi = attributes[i].value;
	return CUDA_SUCCESS;
}

CUresult sim_cuDeviceComputeCapability(int *major, int *minor, CUdevice dev)
{
	SIM_TRY(check_device(dev));
	if (!major || !minor)
		return CUDA_ERROR_INVALID_VALUE;
	*major = 9;
	*minor = 0;
	return CUDA_SUCCESS;
}

CUresult sim_cuDeviceGetPCIBusId(char *pciBusId, int len, CUdevice dev)
{
	SIM_TRY(check_device(dev));
	if (!pciBusId || len <= 0)
		return CUDA_ERROR_INVALID_VALUE;
	snprintf(pciBusId, (size_t)len, "0000:%02x:00.0", dev + 1);
	return CUDA_SUCCESS;
}

CUresult sim_cuDeviceCanAccessPeer(int *canAccessPeer, CUdevice dev, CUdevice peerDev)
{
	SIM_TRY(check_device(dev));
	SIM_TRY(check_device(peerDev));
	if (!canAccessPeer)
		return CUDA_ERROR_INVALID_VALUE;
	*canAccessPeer = dev != peerDev;
	return CUDA_SUCCESS;
}

/* ---- primary contexts ----------------------------------------------------- */

/* A device's first context holds VT_SIM_CONTEXT_RESERVE bytes back (as much
 * as is free), as a real context does; under sim_lock. */
static void charge_context_locked(CUdevice dev)
{
	struct sim_device *d = &sim.dev[dev];
	if (d->context_charged)
		return;
	size_t want = sim_env_context_reserve(), room = d->capacity - d->charged;
	d->charged += want < room ? want : room;
	d->context_charged = 1;
}

CUresult sim_cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice dev)
{
	SIM_TRY(check_device(dev));
	if (!pctx)
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&sim_lock);
	charge_context_locked(dev);
	sim.dev[dev].primary.retains++;
	pthread_mutex_unlock(&sim_lock);
	*pctx = &sim.dev[dev].primary;
	return CUDA_SUCCESS;
}

CUresult sim_cuDevicePrimaryCtxRelease_v2(CUdevice dev)
{
	SIM_TRY(check_device(dev));
	CUresult r = CUDA_SUCCESS;
	pthread_mutex_lock(&sim_lock);
	if (sim.dev[dev].primary.retains > 0)
		sim.dev[dev].primary.retains--;
	else
		r = CUDA_ERROR_INVALID_CONTEXT;
	pthread_mutex_unlock(&sim_lock);
	return r;
}

CUresult sim_cuDevicePrimaryCtxRelease(CUdevice dev) { return sim_cuDevicePrimaryCtxRelease_v2(dev); }

CUresult sim_cuDevicePrimaryCtxSetFlags_v2(CUdevice dev, unsigned int flags)
{
	SIM_TRY(check_device(dev));
	pthread_mutex_lock(&sim_lock);
	sim.dev[dev].primary.flags = flags;
	pthread_mutex_unlock(&sim_lock);
	return CUDA_SUCCESS;
}

CUresult sim_cuDevicePrimaryCtxSetFlags(CUdevice dev, unsigned int flags)
{
	return sim_cuDevicePrimaryCtxSetFlags_v2(dev, flags);
}

CUresult sim_cuDevicePrimaryCtxGetState(CUdevice dev, unsigned int *flags, int *active)
{
	SIM_TRY(check_device(dev));
	if (!flags || !active)
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&sim_lock);
	*flags = sim.dev[dev].primary.flags;
	*active = sim.dev[dev].primary.retains > 0;
	pthread_mutex_unlock(&sim_lock);
	return CUDA_SUCCESS;
}

/* Resets flags only: allocations survive (documented simplification). */
CUresult sim_cuDevicePrimaryCtxReset_v2(CUdevice dev) { return sim_cuDevicePrimaryCtxSetFlags_v2(dev, 0); }
CUresult sim_cuDevicePrimaryCtxReset(CUdevice dev) { return sim_cuDevicePrimaryCtxReset_v2(dev); }

/* ---- the context stack ------------------------------------------------------ */

static CUresult push(struct CUctx_st *ctx)
{
	if (tls_depth == VTSIM_CTX_STACK)
		return CUDA_ERROR_OUT_OF_MEMORY;
	tls_stack[tls_depth++] = ctx;
	return CUDA_SUCCESS;
}

static CUresult ctx_create(CUcontext *pctx, unsigned int flags, CUdevice dev)
{
	SIM_TRY(check_device(dev));
	if (!pctx)
		return CUDA_ERROR_INVALID_VALUE;
	struct CUctx_st *ctx = calloc(1, sizeof *ctx);
	if (!ctx)
		return CUDA_ERROR_OUT_OF_MEMORY;
	*ctx = (struct CUctx_st){.device = dev, .valid = 1, .flags = flags};
	pthread_mutex_lock(&sim_lock);
	charge_context_locked(dev);
	ctx->next_all = sim.ctxs;
	sim.ctxs = ctx;
	pthread_mutex_unlock(&sim_lock);
	SIM_TRY(push(ctx));
	*pctx = ctx;
	return CUDA_SUCCESS;
}

CUresult sim_cuCtxCreate(CUcontext *pctx, unsigned int flags, CUdevice dev)
{
	return ctx_create(pctx, flags, dev);
}

CUresult sim_cuCtxCreate_v2(CUcontext *pctx, unsigned int flags, CUdevice dev)
{
	return ctx_create(pctx, flags, dev);
}

CUresult sim_cuCtxCreate_v3(CUcontext *pctx, CUexecAffinityParam *paramsArray, int numParams,
			    unsigned int flags, CUdevice dev)
{
	(void)paramsArray;
	(void)numParams;
	return ctx_create(pctx, flags, dev);
}

CUresult sim_cuCtxCreate_v4(CUcontext *pctx, CUctxCreateParams *ctxCreateParams, unsigned int flags,
			    CUdevice dev)
{
	(void)ctxCreateParams;
	return ctx_create(pctx, flags, dev);
}

CUresult sim_cuCtxDestroy_v2(CUcontext ctx)
{
	SIM_TRY(sim_need_init());
	if (!sim_ctx_valid(ctx) || ctx->primary)
		return CUDA_ERROR_INVALID_CONTEXT;
	pthread_mutex_lock(&sim_lock);
	ctx->valid = 0;
	pthread_mutex_unlock(&sim_lock);
	/* Drop it from this thread's stack; other threads see it invalid. */
	int kept = 0;
	for (int i = 0; i < tls_depth; i++)
		if (tls_stack[i] != ctx)
			tls_stack[kept++] = tls_stack[i];
	tls_depth = kept;
	return CUDA_SUCCESS;
}

CUresult sim_cuCtxDestroy(CUcontext ctx) { return sim_cuCtxDestroy_v2(ctx); }

CUresult sim_cuCtxPushCurrent_v2(CUcontext ctx)
{
	SIM_TRY(sim_need_init());
	if (!sim_ctx_valid(ctx))
		return CUDA_ERROR_INVALID_CONTEXT;
	return push(ctx);
}

CUresult sim_cuCtxPushCurrent(CUcontext ctx) { return sim_cuCtxPushCurrent_v2(ctx); }

CUresult sim_cuCtxPopCurrent_v2(CUcontext *pctx)
{
	SIM_TRY(sim_need_init());
	if (!tls_depth)
		return CUDA_ERROR_INVALID_CONTEXT;
	struct CUctx_st *ctx = tls_stack[--tls_depth];
	if (pctx)
		*pctx = ctx;
	return CUDA_SUCCESS;
}

CUresult sim_cuCtxPopCurrent(CUcontext *pctx) { return sim_cuCtxPopCurrent_v2(pctx); }

CUresult sim_cuCtxSetCurrent(CUcontext ctx)
{
	SIM_TRY(sim_need_init());
	if (!ctx) { /* unbind */
		if (tls_depth)
			tls_depth--;
		return CUDA_SUCCESS;
	}
	if (!sim_ctx_valid(ctx))
		return CUDA_ERROR_INVALID_CONTEXT;
	if (!tls_depth)
		return push(ctx);
	tls_stack[tls_depth - 1] = ctx;
	return CUDA_SUCCESS;
}

CUresult sim_cuCtxGetCurrent(CUcontext *pctx)
{
	SIM_TRY(sim_need_init());
	if (!pctx)
		return CUDA_ERROR_INVALID_VALUE;
	*pctx = current();
	return CUDA_SUCCESS;
}

CUresult sim_cuCtxGetDevice(CUdevice *device)
{
	struct CUctx_st *ctx;
	SIM_TRY(sim_need_ctx(&ctx));
	if (!device)
		return CUDA_ERROR_INVALID_VALUE;
	*device = ctx->device;
	return CUDA_SUCCESS;
}

CUresult sim_cuCtxGetDevice_v2(CUdevice *device, CUcontext ctx)
{
	if (!ctx)
		return sim_cuCtxGetDevice(device);
	SIM_TRY(sim_need_init());
	if (!sim_ctx_valid(ctx))
		return CUDA_ERROR_INVALID_CONTEXT;
	if (!device)
		return CUDA_ERROR_INVALID_VALUE;
	*device = ctx->device;
	return CUDA_SUCCESS;
}

/* Streams are synchronous here: there is never anything to wait for. */
CUresult sim_cuCtxSynchronize(void)
{
	struct CUctx_st *ctx;
	return sim_need_ctx(&ctx);
}

CUresult sim_cuCtxSynchronize_v2(CUcontext ctx)
{
	if (!ctx)
		return sim_cuCtxSynchronize();
	SIM_TRY(sim_need_init());
	return sim_ctx_valid(ctx) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_CONTEXT;
}

CUresult sim_cuCtxEnablePeerAccess(CUcontext peerContext, unsigned int Flags)
{
	struct CUctx_st *ctx;
	SIM_TRY(sim_need_ctx(&ctx));
	if (Flags != 0)
		return CUDA_ERROR_INVALID_VALUE;
	return sim_ctx_valid(peerContext) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_CONTEXT;
}

CUresult sim_cuCtxDisablePeerAccess(CUcontext peerContext)
{
	struct CUctx_st *ctx;
	SIM_TRY(sim_need_ctx(&ctx));
	return sim_ctx_valid(peerContext) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_CONTEXT;
}

/* ---- streams -------------------------------------------------------------- */

static int is_special_stream(CUstream s)
{
	return s == NULL || s == CU_STREAM_LEGACY || s == CU_STREAM_PER_THREAD;
}

CUresult sim_stream_ctx(CUstream stream, struct CUctx_st **out)
{
	if (is_special_stream(stream))
		return sim_need_ctx(out);
	SIM_TRY(sim_need_init());
	int ok = 0;
	pthread_mutex_lock(&sim_lock);
	for (struct CUstream_st *s = sim.streams; s; s = s->next_all)
		if (s == stream && s->valid) {
			ok = 1;
			*out = s->ctx;
		}
	pthread_mutex_unlock(&sim_lock);
	if (!ok)
		return CUDA_ERROR_INVALID_HANDLE;
	return sim_ctx_valid(*out) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_CONTEXT;
}

CUresult sim_stream_create(CUstream *phStream, unsigned int flags, int priority)
{
	struct CUctx_st *ctx;
	SIM_TRY(sim_need_ctx(&ctx));
	if (!phStream || (flags & ~(unsigned)CU_STREAM_NON_BLOCKING))
		return CUDA_ERROR_INVALID_VALUE;
	struct CUstream_st *s = calloc(1, sizeof *s);
	if (!s)
		return CUDA_ERROR_OUT_OF_MEMORY;
	*s = (struct CUstream_st){.ctx = ctx, .valid = 1, .flags = flags, .priority = priority};
	pthread_mutex_lock(&sim_lock);
	s->id = ++sim.next_stream_id + 2; /* 0-2: null, legacy, per-thread */
	s->next_all = sim.streams;
	sim.streams = s;
	pthread_mutex_unlock(&sim_lock);
	*phStream = s;
	return CUDA_SUCCESS;
}

CUresult sim_cuStreamCreate(CUstream *phStream, unsigned int Flags) { return sim_stream_create(phStream, Flags, 0); }

CUresult sim_cuStreamDestroy_v2(CUstream hStream)
{
	struct CUctx_st *ctx;
	if (is_special_stream(hStream))
		return CUDA_ERROR_INVALID_HANDLE;
	SIM_TRY(sim_stream_ctx(hStream, &ctx));
	pthread_mutex_lock(&sim_lock);
	hStream->valid = 0;
	pthread_mutex_unlock(&sim_lock);
	return CUDA_SUCCESS;
}

CUresult sim_cuStreamDestroy(CUstream hStream) { return sim_cuStreamDestroy_v2(hStream); }

CUresult sim_cuStreamSynchronize(CUstream hStream)
{
	struct CUctx_st *ctx;
	return sim_stream_ctx(hStream, &ctx);
}

CUresult sim_cuStreamSynchronize_ptsz(CUstream hStream) { return sim_cuStreamSynchronize(hStream); }
CUresult sim_cuStreamQuery(CUstream hStream) { return sim_cuStreamSynchronize(hStream); }
CUresult sim_cuStreamQuery_ptsz(CUstream hStream) { return sim_cuStreamSynchronize(hStream); }
