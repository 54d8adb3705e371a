/* The driver wrappers (hook_wrappers.h), generated from hooks.def: one
 * function per exported variant, each with exactly the signature of its
 * PFN_..._vNNNN typedef in cudaTypedefs.h (checked below at compile time, and
 * against cuda.h's own prototype of the exported name), exported under the
 * driver's name; and the two cuGetProcAddress ABIs. The macro makes the
 * wrappers and their table; what a wrapper does around the real call is in
 * ordinary functions: the call's record (record_event.h), its stack
 * (stack_capture.h), the shim's own time (self_cost.h), the routing of a
 * resolved pointer (proc_address.h). */
#define _GNU_SOURCE
/* Declare every ABI variant (the old 32-bit ABI, _v2, _ptds/_ptsz) without
 * cuda.h's renaming macros, as the driver itself sees them. */
#define __CUDA_API_VERSION_INTERNAL 1
#include <cuda.h>
#include <cudaTypedefs.h>

#include <errno.h>

#include "hook_wrappers.h"
#include "proc_address.h"
#include "record_event.h"
#include "self_cost.h"
#include "stack_capture.h"

/* Result when the driver does not have the function at all (no driver
 * loaded, or an older driver without this entry point). The job could not
 * have called it without the shim either. */
static CUresult no_real_function(void)
{
	return vt_driver() ? CUDA_ERROR_NOT_SUPPORTED : CUDA_ERROR_NOT_INITIALIZED;
}

#define VT_PFN(base, ver, pt) PFN_##base##_v##ver##pt

#define VT_HOOK(sym, base, ver, pt, params, args, describe)                                        \
	static CUresult vt_w_##sym params                                                          \
	{                                                                                          \
		VT_PFN(base, ver, pt) real = (VT_PFN(base, ver, pt))vt_hook_real(VT_H_##sym);      \
		if (!real)                                                                         \
			return no_real_function();                                                 \
		if (!vt_hook_may_record(__builtin_return_address(0)))                              \
			return real args;                                                          \
		int outer = vt_guard;                                                              \
		vt_guard = VT_GUARD_SHIM;                                                          \
		uint64_t self_t0 = vt_self_begin(); /* 0 unless this call is timed */              \
		struct vt_call call = describe;                                                    \
		int *err = &errno; /* one lookup: the job sees the real call's errno only */       \
		int saved_errno = *err;                                                            \
		if (vt_call_begin(&call, VT_H_##sym)) {                                            \
			if (!vt_shape_is_release(call.shape) || vt_stack_free_stacks())            \
				call.stack_id =                                                    \
				    vt_stack_capture_here(); /* first: nothing shared yet */       \
			vt_call_before(&call);                                                     \
		}                                                                                  \
		*err = saved_errno;                                                                \
		uint64_t self_t1 = vt_self_mark(self_t0);                                          \
		vt_guard = VT_GUARD_DRIVER;                                                        \
		CUresult result = real args;                                                       \
		vt_guard = VT_GUARD_SHIM;                                                          \
		uint64_t self_t2 = vt_self_mark(self_t0);                                          \
		saved_errno = *err;                                                                \
		vt_call_after(&call, result);                                                      \
		vt_self_end(self_t0, self_t1, self_t2);                                            \
		*err = saved_errno;                                                                \
		vt_guard = outer;                                                                  \
		return result;                                                                     \
	}                                                                                          \
	_Static_assert(                                                                            \
	    __builtin_types_compatible_p(__typeof__(&vt_w_##sym), VT_PFN(base, ver, pt)),          \
	    #sym " has the ABI of PFN_" #base "_v" #ver #pt);                                      \
	_Static_assert(VT_API_##sym > 0, #sym " is in api.def");                                   \
	extern __typeof__(vt_w_##sym) sym                                                          \
	    __attribute__((alias("vt_w_" #sym), visibility("default")));
#include "hooks.def"

/* cuGetProcAddress and cuGetProcAddress_v2: the real resolver is called
 * with the caller's arguments unchanged (inside the guard's DRIVER level:
 * the driver's own lookups pass through), then what it returned is routed. */
static CUresult vt_w_cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion,
                                      cuuint64_t flags)
{
	PFN_cuGetProcAddress_v11030 real = (PFN_cuGetProcAddress_v11030)vt_hook_real(VT_R_GETPROC);
	if (!real)
		return no_real_function();
	if (!vt_hook_may_record(__builtin_return_address(0)))
		return real(symbol, pfn, cudaVersion, flags);
	int outer = vt_guard;
	vt_guard = VT_GUARD_DRIVER;
	CUresult r = real(symbol, pfn, cudaVersion, flags);
	vt_guard = VT_GUARD_SHIM;
	int saved_errno = errno;
	vt_proc_address_route(r, symbol, pfn, cudaVersion, flags, VT_LOOKUP_GET_PROC,
	                      vt_route_wrappers);
	vt_guard = outer;
	errno = saved_errno;
	return r;
}

static CUresult vt_w_cuGetProcAddress_v2(const char *symbol, void **pfn, int cudaVersion,
                                         cuuint64_t flags,
                                         CUdriverProcAddressQueryResult *symbolStatus)
{
	PFN_cuGetProcAddress_v12000 real = (PFN_cuGetProcAddress_v12000)vt_hook_real(VT_R_GETPROC_V2);
	if (!real)
		return no_real_function();
	if (!vt_hook_may_record(__builtin_return_address(0)))
		return real(symbol, pfn, cudaVersion, flags, symbolStatus);
	int outer = vt_guard;
	vt_guard = VT_GUARD_DRIVER;
	CUresult r = real(symbol, pfn, cudaVersion, flags, symbolStatus);
	vt_guard = VT_GUARD_SHIM;
	int saved_errno = errno;
	vt_proc_address_route(r, symbol, pfn, cudaVersion, flags, VT_LOOKUP_GET_PROC_V2,
	                      vt_route_wrappers);
	vt_guard = outer;
	errno = saved_errno;
	return r;
}

_Static_assert(__builtin_types_compatible_p(__typeof__(&vt_w_cuGetProcAddress),
                                            PFN_cuGetProcAddress_v11030),
               "abi");
_Static_assert(__builtin_types_compatible_p(__typeof__(&vt_w_cuGetProcAddress_v2),
                                            PFN_cuGetProcAddress_v12000),
               "abi");
extern __typeof__(vt_w_cuGetProcAddress) cuGetProcAddress
	__attribute__((alias("vt_w_cuGetProcAddress"), visibility("default")));
extern __typeof__(vt_w_cuGetProcAddress_v2) cuGetProcAddress_v2
	__attribute__((alias("vt_w_cuGetProcAddress_v2"), visibility("default")));

void *const vt_route_wrappers[VT_ROUTE_COUNT] = {
#define VT_HOOK(sym, base, ver, pt, params, args, describe) [VT_H_##sym] = (void *)vt_w_##sym,
#include "hooks.def"
    [VT_R_GETPROC] = (void *)vt_w_cuGetProcAddress,
    [VT_R_GETPROC_V2] = (void *)vt_w_cuGetProcAddress_v2,
};
