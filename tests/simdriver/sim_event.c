/* Events and the remaining stream/context queries. Streams are synchronous,
 * so an event is complete as soon as it is recorded; elapsed time is host
 * wall-clock time between the two records. */
#include "sim_internal.h"

#include <stdlib.h>
#include <time.h>

static unsigned long long now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (unsigned long long)ts.tv_sec * 1000000000ull + (unsigned long long)ts.tv_nsec;
}

/* Identity check first, as for contexts: a stale handle is just invalid. */
static int event_valid(CUevent ev)
{
	int ok = 0;
	pthread_mutex_lock(&sim_lock);
	for (struct CUevent_st *e = sim.events; e; e = e->next_all)
		if (e == ev)
			ok = e->valid;
	pthread_mutex_unlock(&sim_lock);
	return ok;
}

CUresult sim_cuEventCreate(CUevent *phEvent, unsigned int Flags)
{
	struct CUctx_st *ctx;
	SIM_TRY(sim_need_ctx(&ctx));
	if (!phEvent)
		return CUDA_ERROR_INVALID_VALUE;
	struct CUevent_st *e = calloc(1, sizeof *e);
	if (!e)
		return CUDA_ERROR_OUT_OF_MEMORY;
	*e = (struct CUevent_st){.ctx = ctx, .valid = 1, .flags = Flags};
	pthread_mutex_lock(&sim_lock);
	e->next_all = sim.events;
	sim.events = e;
	pthread_mutex_unlock(&sim_lock);
	*phEvent = e;
	return CUDA_SUCCESS;
}

CUresult sim_cuEventRecord(CUevent hEvent, CUstream hStream)
{
	struct CUctx_st *ctx;
	SIM_TRY(sim_stream_ctx(hStream, &ctx));
	if (!event_valid(hEvent))
		return CUDA_ERROR_INVALID_HANDLE;
	pthread_mutex_lock(&sim_lock);
	hEvent->recorded_ns = now_ns();
	pthread_mutex_unlock(&sim_lock);
	return CUDA_SUCCESS;
}

CUresult sim_cuEventRecord_ptsz(CUevent hEvent, CUstream hStream) { return sim_cuEventRecord(hEvent, hStream); }

CUresult sim_cuEventQuery(CUevent hEvent)
{
	SIM_TRY(sim_need_init());
	return event_valid(hEvent) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

CUresult sim_cuEventSynchronize(CUevent hEvent) { return sim_cuEventQuery(hEvent); }

CUresult sim_cuEventDestroy_v2(CUevent hEvent)
{
	SIM_TRY(sim_need_init());
	if (!event_valid(hEvent))
		return CUDA_ERROR_INVALID_HANDLE;
	pthread_mutex_lock(&sim_lock);
	hEvent->valid = 0;
	pthread_mutex_unlock(&sim_lock);
	return CUDA_SUCCESS;
}

CUresult sim_cuEventDestroy(CUevent hEvent) { return sim_cuEventDestroy_v2(hEvent); }

CUresult sim_cuEventElapsedTime_v2(float *pMilliseconds, CUevent hStart, CUevent hEnd)
{
	SIM_TRY(sim_need_init());
	if (!pMilliseconds)
		return CUDA_ERROR_INVALID_VALUE;
	if (!event_valid(hStart) || !event_valid(hEnd))
		return CUDA_ERROR_INVALID_HANDLE;
	pthread_mutex_lock(&sim_lock);
	unsigned long long a = hStart->recorded_ns, b = hEnd->recorded_ns;
	unsigned timing_off = (hStart->flags | hEnd->flags) & CU_EVENT_DISABLE_TIMING;
	pthread_mutex_unlock(&sim_lock);
	if (timing_off || !a || !b)
		return CUDA_ERROR_INVALID_HANDLE;
	*pMilliseconds = (float)((double)((long long)(b - a)) / 1e6);
	return CUDA_SUCCESS;
}

CUresult sim_cuEventElapsedTime(float *pMilliseconds, CUevent hStart, CUevent hEnd)
{
	return sim_cuEventElapsedTime_v2(pMilliseconds, hStart, hEnd);
}

CUresult sim_cuStreamWaitEvent(CUstream hStream, CUevent hEvent, unsigned int Flags)
{
	struct CUctx_st *ctx;
	(void)Flags;
	SIM_TRY(sim_stream_ctx(hStream, &ctx));
	return event_valid(hEvent) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

CUresult sim_cuStreamWaitEvent_ptsz(CUstream hStream, CUevent hEvent, unsigned int Flags)
{
	return sim_cuStreamWaitEvent(hStream, hEvent, Flags);
}

/* ---- stream queries ----------------------------------------------------- */

static int special(CUstream s) { return s == NULL || s == CU_STREAM_LEGACY || s == CU_STREAM_PER_THREAD; }

CUresult sim_cuStreamCreateWithPriority(CUstream *phStream, unsigned int flags, int priority)
{
	if (priority > 0)
		priority = 0; /* clamped to the range [-5, 0], as the driver does */
	if (priority < -5)
		priority = -5;
	return sim_stream_create(phStream, flags, priority);
}

CUresult sim_cuStreamGetCtx(CUstream hStream, CUcontext *pctx)
{
	struct CUctx_st *ctx;
	SIM_TRY(sim_stream_ctx(hStream, &ctx));
	if (!pctx)
		return CUDA_ERROR_INVALID_VALUE;
	*pctx = ctx;
	return CUDA_SUCCESS;
}

CUresult sim_cuStreamGetCtx_ptsz(CUstream hStream, CUcontext *pctx) { return sim_cuStreamGetCtx(hStream, pctx); }

CUresult sim_cuStreamGetFlags(CUstream hStream, unsigned int *flags)
{
	struct CUctx_st *ctx;
	SIM_TRY(sim_stream_ctx(hStream, &ctx));
	if (!flags)
		return CUDA_ERROR_INVALID_VALUE;
	*flags = special(hStream) ? 0 : hStream->flags;
	return CUDA_SUCCESS;
}

CUresult sim_cuStreamGetFlags_ptsz(CUstream hStream, unsigned int *flags) { return sim_cuStreamGetFlags(hStream, flags); }

CUresult sim_cuStreamGetPriority(CUstream hStream, int *priority)
{
	struct CUctx_st *ctx;
	SIM_TRY(sim_stream_ctx(hStream, &ctx));
	if (!priority)
		return CUDA_ERROR_INVALID_VALUE;
	*priority = special(hStream) ? 0 : hStream->priority;
	return CUDA_SUCCESS;
}

CUresult sim_cuStreamGetPriority_ptsz(CUstream hStream, int *priority)
{
	return sim_cuStreamGetPriority(hStream, priority);
}

CUresult sim_cuStreamGetId(CUstream hStream, unsigned long long *streamId)
{
	struct CUctx_st *ctx;
	SIM_TRY(sim_stream_ctx(hStream, &ctx));
	if (!streamId)
		return CUDA_ERROR_INVALID_VALUE;
	*streamId = special(hStream) ? (unsigned long long)(uintptr_t)hStream : hStream->id;
	return CUDA_SUCCESS;
}

CUresult sim_cuStreamGetId_ptsz(CUstream hStream, unsigned long long *streamId)
{
	return sim_cuStreamGetId(hStream, streamId);
}

/* ---- context queries ------------------------------------------------------ */

CUresult sim_cuCtxGetFlags(unsigned int *flags)
{
	struct CUctx_st *ctx;
	SIM_TRY(sim_need_ctx(&ctx));
	if (!flags)
		return CUDA_ERROR_INVALID_VALUE;
	*flags = ctx->flags;
	return CUDA_SUCCESS;
}

CUresult sim_cuCtxGetApiVersion(CUcontext ctx, unsigned int *version)
{
	struct CUctx_st *cur;
	if (!ctx)
		SIM_TRY(sim_need_ctx(&cur));
	else if (!sim_ctx_valid(ctx))
		return CUDA_ERROR_INVALID_CONTEXT;
	if (!version)
		return CUDA_ERROR_INVALID_VALUE;
	*version = 3020; /* what every context since CUDA 3.2 reports */
	return CUDA_SUCCESS;
}

/* Limits are accepted and read back as fixed, plausible values. */
CUresult sim_cuCtxGetLimit(size_t *pvalue, CUlimit limit)
{
	static const size_t values[] = {
		[CU_LIMIT_STACK_SIZE] = 1024,
		[CU_LIMIT_PRINTF_FIFO_SIZE] = 1 << 20,
		[CU_LIMIT_MALLOC_HEAP_SIZE] = 8 << 20,
		[CU_LIMIT_DEV_RUNTIME_SYNC_DEPTH] = 2,
		[CU_LIMIT_DEV_RUNTIME_PENDING_LAUNCH_COUNT] = 2048,
		[CU_LIMIT_MAX_L2_FETCH_GRANULARITY] = 64,
		[CU_LIMIT_PERSISTING_L2_CACHE_SIZE] = 0,
	};
	struct CUctx_st *ctx;
	SIM_TRY(sim_need_ctx(&ctx));
	if (!pvalue || (unsigned)limit >= sizeof values / sizeof values[0])
		return CUDA_ERROR_INVALID_VALUE;
	*pvalue = values[limit];
	return CUDA_SUCCESS;
}

CUresult sim_cuCtxSetLimit(CUlimit limit, size_t value)
{
	size_t old;
	(void)value;
	return sim_cuCtxGetLimit(&old, limit);
}

CUresult sim_cuCtxGetStreamPriorityRange(int *leastPriority, int *greatestPriority)
{
	struct CUctx_st *ctx;
	SIM_TRY(sim_need_ctx(&ctx));
	if (leastPriority)
		*leastPriority = 0;
	if (greatestPriority)
		*greatestPriority = -5;
	return CUDA_SUCCESS;
}

CUresult sim_cuCtxGetId(CUcontext ctx, unsigned long long *ctxId)
{
	struct CUctx_st *cur = ctx;
	if (!ctx)
		SIM_TRY(sim_need_ctx(&cur));
	else if (!sim_ctx_valid(ctx))
		return CUDA_ERROR_INVALID_CONTEXT;
	if (!ctxId)
		return CUDA_ERROR_INVALID_VALUE;
	*ctxId = (unsigned long long)(uintptr_t)cur;
	return CUDA_SUCCESS;
}
