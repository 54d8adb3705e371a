/* The driver and the routing table (routing.c): libcuda's handle, the
 * driver's real function for each route (hooks.h), the shim's own lookups
 * of the driver and of the next object, and the route of a pointer, a
 * symbol name or a cuGetProcAddress request. */
#ifndef VT_ROUTING_H
#define VT_ROUTING_H

#include <stdint.h>

/* libcuda's handle, opened RTLD_NOLOAD|RTLD_NODELETE when first needed; NULL
 * while no driver is loaded. */
void *vt_driver(void);
/* The driver's own function for route index i (NULL if absent): one load
 * once resolved (inline: every wrapper asks first). */
#define VT_ABSENT ((void *)1) /* the driver lacks this entry point */
extern _Atomic(void *) vt_real_fn[];
void *vt_hook_real_slow(int index);
static inline void *vt_hook_real(int index)
{
	void *p = __atomic_load_n((void *const *)&vt_real_fn[index], __ATOMIC_ACQUIRE);
	if (__builtin_expect(p != NULL && p != VT_ABSENT, 1))
		return p;
	return vt_hook_real_slow(index);
}
/* A driver function the shim calls for itself (not hooked): by name. */
void *vt_driver_symbol(const char *name);
/* The same, remembered in *slot: the pointer, or VT_ABSENT once the loaded
 * driver is known to lack it (a failed lookup is not repeated at every
 * event); NULL while no driver is loaded (asked again next time). */
void *vt_driver_symbol_cached(_Atomic(void *) *slot, const char *name);
/* A function of the next object after the shim (libc, libcudart...). */
void *vt_next_symbol(const char *name);

/* Is p inside the driver's own code? */
int vt_is_driver_address(const void *p);

/* Route index of a pointer (a driver function we wrap, or one of the
 * wrappers in `wrappers`, indexed by route), or -1. `base`/`version`/`flags`
 * break ties when the driver exports several variants at one address (may
 * be NULL/0). */
int vt_route_by_pointer(const void *p, void *const *wrappers, const char *base, int version,
                        uint64_t flags);
/* Route index of an exported symbol name, or -1. */
int vt_route_by_symbol(const char *name);
/* cuGetProcAddress's own ladder: the variant of `base` the driver would hand
 * out at `version` with `flags` (CU_GET_PROC_ADDRESS_*), or -1. */
int vt_route_by_request(const char *base, int version, uint64_t flags);
/* Does any row have this base name? */
int vt_route_base_known(const char *base);

#endif
