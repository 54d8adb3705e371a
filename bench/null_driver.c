/* A libcuda.so.1 that does nothing: allocations hand out addresses from a
 * counter, frees succeed, there is one device and one context. Used by
 * bench_record to time the shim alone: against the simulated driver (a
 * lock, a tree of ranges, ~350 ns a call that moves by tens of ns from run
 * to run on a shared machine) the shim's ~100 ns is a small difference of
 * two noisy numbers; against this one it is nearly all of the call.
 * Benchmark only: it checks nothing. */
#include <stddef.h>
#include <string.h>

typedef unsigned long long nd_ptr;

static nd_ptr next_address = 0x7f0000000000ull;
static __thread void *current_ctx;

int cuInit(unsigned flags)
{
	(void)flags;
	return 0;
}

int cuDriverGetVersion(int *version)
{
	*version = 13000;
	return 0;
}

int cuDeviceGet(int *device, int ordinal)
{
	*device = ordinal;
	return 0;
}

int cuDeviceGetCount(int *count)
{
	*count = 1;
	return 0;
}

int cuDeviceGetName(char *name, int len, int device)
{
	(void)device;
	if (len > 0) {
		strncpy(name, "do-nothing device", (size_t)len - 1);
		name[len - 1] = '\0';
	}
	return 0;
}

int cuDeviceTotalMem_v2(size_t *bytes, int device)
{
	(void)device;
	*bytes = (size_t)1 << 40;
	return 0;
}

int cuDevicePrimaryCtxRetain(void **ctx, int device)
{
	(void)device;
	*ctx = (void *)0x1000;
	return 0;
}

int cuCtxSetCurrent(void *ctx)
{
	current_ctx = ctx;
	return 0;
}

int cuCtxGetCurrent(void **ctx)
{
	*ctx = current_ctx;
	return 0;
}

int cuCtxGetDevice(int *device)
{
	*device = 0;
	return 0;
}

int cuMemGetInfo_v2(size_t *free_bytes, size_t *total)
{
	*free_bytes = (size_t)1 << 39;
	*total = (size_t)1 << 40;
	return 0;
}

int cuMemAlloc_v2(nd_ptr *dptr, size_t bytes)
{
	(void)bytes;
	*dptr = next_address;
	next_address += 4096;
	return 0;
}

int cuMemFree_v2(nd_ptr dptr)
{
	(void)dptr;
	return 0;
}
