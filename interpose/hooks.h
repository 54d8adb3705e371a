/* The hook table as data (hooks.c): one index per row of hooks.def (same
 * order as include/vramtrace/api.def), plus the two cuGetProcAddress ABIs,
 * which are routed like any other driver function but carry no event. The
 * wrapper of each row is in hook_wrappers.h (vt_route_wrappers). */
#ifndef VT_HOOKS_H
#define VT_HOOKS_H

#include <stdint.h>

/* hooks.def passes symbol names through helper macros, where cuda.h's
 * renaming macros (cuMemAlloc -> cuMemAlloc_v2) would rewrite them. */
#if defined(cuMemAlloc) || defined(cuMemcpyHtoD)
#error "include cuda.h with __CUDA_API_VERSION_INTERNAL defined (or after hooks.h)"
#endif

enum vt_hook_index {
#define VT_HOOK(sym, base, ver, pt, params, args, describe) VT_H_##sym,
#include "hooks.def"
	VT_H_COUNT,
	VT_R_GETPROC = VT_H_COUNT, /* cuGetProcAddress (4 args, 11.3) */
	VT_R_GETPROC_V2,           /* cuGetProcAddress_v2 (5 args, 12.0) */
	VT_ROUTE_COUNT
};

/* VT_API_<symbol> = the id the log stores (api.def). */
enum vt_api_id {
#define VT_API(id, sym, cls) VT_API_##sym = id,
#include "vramtrace/api.def"
};

struct vt_route {
	const char *name;    /* exported symbol */
	const char *base;    /* name given to cuGetProcAddress */
	uint32_t version;    /* CUDA version that introduced this ABI */
	uint8_t per_thread;  /* _ptds/_ptsz variant */
	uint8_t api;         /* VT_API_* (0 for cuGetProcAddress itself) */
};

extern const struct vt_route vt_routes[VT_ROUTE_COUNT];

#endif
