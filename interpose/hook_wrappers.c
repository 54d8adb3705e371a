/* The driver wrappers, generated from hooks.def: one function per exported
 * variant, each with exactly the signature of its PFN_..._vNNNN typedef in
 * cudaTypedefs.h (checked below at compile time, and against cuda.h's own
 * prototype of the exported name), exported under the driver's name. */
#define _GNU_SOURCE
/* Declare every ABI variant (the old 32-bit ABI, _v2, _ptds/_ptsz) without
 * cuda.h's renaming macros, as the driver itself sees them. */
#define __CUDA_API_VERSION_INTERNAL 1
#include <cuda.h>
#include <cudaTypedefs.h>

#include <errno.h>

#include "hooks.h"
#include "record_event.h"
#include "self_cost.h"
#include "shim.h"
#include "stack_capture.h"

/* Every row of api.def has a row in hooks.def and the other way round. */
enum {
#define VT_API(id, sym, cls) VT_APIDEF_ROW_##sym,
#include "vramtrace/api.def"
	VT_APIDEF_ROWS
};
_Static_assert((int)VT_APIDEF_ROWS == (int)VT_H_COUNT,
               "hooks.def and api.def must list the same symbols");

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

/* The cuGetProcAddress wrappers live in proc_address.c. */
CUresult vt_w_cuGetProcAddress(const char *, void **, int, cuuint64_t);
CUresult vt_w_cuGetProcAddress_v2(const char *, void **, int, cuuint64_t,
                                  CUdriverProcAddressQueryResult *);
_Static_assert(__builtin_types_compatible_p(__typeof__(&vt_w_cuGetProcAddress),
                                            PFN_cuGetProcAddress_v11030),
               "abi");
_Static_assert(__builtin_types_compatible_p(__typeof__(&vt_w_cuGetProcAddress_v2),
                                            PFN_cuGetProcAddress_v12000),
               "abi");

const struct vt_route vt_routes[VT_ROUTE_COUNT] = {
#define VT_HOOK(sym, base, ver, pt, params, args, describe)                                        \
	[VT_H_##sym] = {#sym, #base, ver, sizeof(#pt) > 1, VT_API_##sym, (void *)vt_w_##sym},
#include "hooks.def"
    [VT_R_GETPROC] = {"cuGetProcAddress", "cuGetProcAddress", 11030, 0, 0,
                      (void *)vt_w_cuGetProcAddress},
    [VT_R_GETPROC_V2] = {"cuGetProcAddress_v2", "cuGetProcAddress", 12000, 0, 0,
                         (void *)vt_w_cuGetProcAddress_v2},
};
