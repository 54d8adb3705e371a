/* Lookup path 3: cuGetProcAddress (4 arguments, CUDA 11.3) and
 * cuGetProcAddress_v2 (5 arguments, CUDA 12.0), which is how the CUDA
 * runtime finds every driver function, by base name and version. Their
 * wrappers (hook_wrappers.c) call the real resolver with the caller's
 * arguments unchanged, then vt_proc_address_route.
 *
 * The answer is routed BY POINTER: if it is the real address of an exported
 * variant we wrap, the caller gets that variant's wrapper, which has the same
 * ABI by construction. Only when the pointer matches nothing does the
 * (name, version, flags) ladder decide. */
#define _GNU_SOURCE
#include "proc_address.h"

#define __CUDA_API_VERSION_INTERNAL 1 /* no cuGetProcAddress -> _v2 renaming */
#include <cuda.h>

#include "hooks.h"
#include "record_event.h"
#include "routing.h"

static void *route(const char *symbol, void *fn, int version, cuuint64_t flags, uint8_t path,
                   void *const *wrappers)
{
	uint8_t outcome = VT_LOOKUP_PASSED, api = 0;
	void *out = fn;
	int i = vt_route_by_pointer(fn, wrappers, symbol, version, flags);
	if (i >= 0) {
		outcome = VT_LOOKUP_ROUTED;
	} else if (vt_route_base_known(symbol)) {
		/* a function we wrap, at an address no export has: trust the
		 * driver's own ladder, re-derived from (name, version, flags) */
		i = vt_route_by_request(symbol, version, flags);
		outcome = i >= 0 ? VT_LOOKUP_ROUTED_BY_NAME : VT_LOOKUP_UNROUTED;
	}
	if (i >= 0) {
		out = wrappers[i];
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

void vt_proc_address_route(int result, const char *symbol, void **pfn, int version, uint64_t flags,
                           uint8_t path, void *const *wrappers)
{
	if (result == CUDA_SUCCESS && pfn && *pfn)
		*pfn = route(symbol, *pfn, version, flags, path, wrappers);
	else
		record_failure(symbol, version, flags, path);
}
