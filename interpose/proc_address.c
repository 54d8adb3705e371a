/* Lookup path 3: cuGetProcAddress (4 arguments, CUDA 11.3) and
 * cuGetProcAddress_v2 (5 arguments, CUDA 12.0), which is how the CUDA
 * runtime finds every driver function, by base name and version.
 *
 * The real resolver is called with the caller's arguments unchanged; its
 * answer is then routed BY POINTER: if it is the real address of an exported
 * variant we wrap, the caller gets that variant's wrapper, which has the same
 * ABI by construction. Only when the pointer matches nothing does the
 * (name, version, flags) ladder decide. */
#define _GNU_SOURCE
#define __CUDA_API_VERSION_INTERNAL 1 /* no cuGetProcAddress -> _v2 renaming */
#include <cuda.h>
#include <cudaTypedefs.h>
#include <errno.h>

#include "hooks.h"
#include "record_event.h"
#include "shim.h"

static void *route(const char *symbol, void *fn, int version, cuuint64_t flags, uint8_t path)
{
	uint8_t outcome = VT_LOOKUP_PASSED, api = 0;
	void *out = fn;
	int i = vt_route_by_pointer(fn, symbol, version, flags);
	if (i >= 0) {
		outcome = VT_LOOKUP_ROUTED;
	} else if (vt_route_base_known(symbol)) {
		/* a function we wrap, at an address no export has: trust the
		 * driver's own ladder, re-derived from (name, version, flags) */
		i = vt_route_by_request(symbol, version, flags);
		outcome = i >= 0 ? VT_LOOKUP_ROUTED_BY_NAME : VT_LOOKUP_UNROUTED;
	}
	if (i >= 0) {
		out = vt_routes[i].wrapper;
		api = vt_routes[i].api;
	}
	if (symbol && symbol[0] == 'c' && symbol[1] == 'u')
		vt_record_lookup(path, outcome, api, (uint32_t)version, flags, symbol);
	return out;
}

static void record_failure(const char *symbol, int version, cuuint64_t flags, uint8_t path)
{
	if (symbol && symbol[0] == 'c' && symbol[1] == 'u')
		vt_record_lookup(path, VT_LOOKUP_FAILED, 0, (uint32_t)version, flags, symbol);
}

CUresult vt_w_cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags)
{
	PFN_cuGetProcAddress_v11030 real = (PFN_cuGetProcAddress_v11030)vt_hook_real(VT_R_GETPROC);
	if (!real)
		return vt_driver() ? CUDA_ERROR_NOT_SUPPORTED : CUDA_ERROR_NOT_INITIALIZED;
	if (!vt_hook_may_record(__builtin_return_address(0)))
		return real(symbol, pfn, cudaVersion, flags);
	int outer = vt_guard;
	vt_guard = VT_GUARD_DRIVER;
	CUresult r = real(symbol, pfn, cudaVersion, flags);
	vt_guard = VT_GUARD_SHIM;
	int saved_errno = errno;
	if (r == CUDA_SUCCESS && pfn && *pfn)
		*pfn = route(symbol, *pfn, cudaVersion, flags, VT_LOOKUP_GET_PROC);
	else
		record_failure(symbol, cudaVersion, flags, VT_LOOKUP_GET_PROC);
	vt_guard = outer;
	errno = saved_errno;
	return r;
}

CUresult vt_w_cuGetProcAddress_v2(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags,
				  CUdriverProcAddressQueryResult *symbolStatus)
{
	PFN_cuGetProcAddress_v12000 real = (PFN_cuGetProcAddress_v12000)vt_hook_real(VT_R_GETPROC_V2);
	if (!real)
		return vt_driver() ? CUDA_ERROR_NOT_SUPPORTED : CUDA_ERROR_NOT_INITIALIZED;
	if (!vt_hook_may_record(__builtin_return_address(0)))
		return real(symbol, pfn, cudaVersion, flags, symbolStatus);
	int outer = vt_guard;
	vt_guard = VT_GUARD_DRIVER;
	CUresult r = real(symbol, pfn, cudaVersion, flags, symbolStatus);
	vt_guard = VT_GUARD_SHIM;
	int saved_errno = errno;
	if (r == CUDA_SUCCESS && pfn && *pfn)
		*pfn = route(symbol, *pfn, cudaVersion, flags, VT_LOOKUP_GET_PROC_V2);
	else
		record_failure(symbol, cudaVersion, flags, VT_LOOKUP_GET_PROC_V2);
	vt_guard = outer;
	errno = saved_errno;
	return r;
}

extern __typeof__(vt_w_cuGetProcAddress) cuGetProcAddress
	__attribute__((alias("vt_w_cuGetProcAddress"), visibility("default")));
extern __typeof__(vt_w_cuGetProcAddress_v2) cuGetProcAddress_v2
	__attribute__((alias("vt_w_cuGetProcAddress_v2"), visibility("default")));
