/* One routing table for the three lookup paths (exported symbols, dlsym,
 * cuGetProcAddress): route index -> the driver's real function and our
 * wrapper of the same ABI.
 *
 * The real pointers are resolved lazily, each exactly like the dynamic
 * linker would (dlsym on the driver's handle), and published with one atomic
 * store: the table is filled once and read without locks. A thread that
 * finds an entry unresolved resolves it itself (idempotent) instead of waiting
 * for another, so a dlsym re-entered from a library constructor (loader lock
 * held) can never deadlock against us. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdatomic.h>
#include <string.h>

#include "hooks.h"
#include "real_dl.h"
#include "routing.h"
#include "shim_state.h"

#define VT_PER_THREAD_FLAG 2u /* CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM */
static _Atomic(void *) driver_handle;
_Atomic(void *) vt_real_fn[VT_ROUTE_COUNT];

void *vt_driver(void)
{
	void *h = atomic_load_explicit(&driver_handle, memory_order_acquire);
	if (h)
		return h;
	/* Never load the driver ourselves: only find it once the job has.
	 * NODELETE pins it, so the addresses in real_fn stay valid even if the
	 * job dlcloses it. The real dlopen: the shim's own dlopen wrapper is
	 * for the job's loads. */
	h = vt_own_dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD | RTLD_NODELETE);
	if (!h)
		h = vt_own_dlopen("libcuda.so", RTLD_LAZY | RTLD_NOLOAD | RTLD_NODELETE);
	if (!h)
		return NULL;
	void *expected = NULL;
	const struct vt_real_dl *dl = vt_real_dl();
	if (!atomic_compare_exchange_strong(&driver_handle, &expected, h) && dl->dlclose)
		dl->dlclose(h); /* another thread won: drop our extra reference */
	return atomic_load_explicit(&driver_handle, memory_order_acquire);
}

void *vt_driver_symbol(const char *name)
{
	void *h = vt_driver();
	if (!h)
		return NULL;
	int saved = vt_guard;
	vt_guard = VT_GUARD_SHIM; /* our own lookup: the dlsym hook passes it through */
	void *p = vt_own_dlsym(h, name);
	vt_guard = saved;
	return p;
}

void *vt_next_symbol(const char *name)
{
	int saved = vt_guard;
	vt_guard = VT_GUARD_SHIM;
	void *p = vt_own_dlsym(RTLD_NEXT, name); /* next after the shim */
	vt_guard = saved;
	return p;
}

void *vt_driver_symbol_cached(_Atomic(void *) *slot, const char *name)
{
	void *p = atomic_load_explicit(slot, memory_order_acquire);
	if (p)
		return p == VT_ABSENT ? NULL : p;
	if (!vt_driver())
		return NULL; /* no driver yet: try again next time */
	p = vt_driver_symbol(name);
	atomic_store_explicit(slot, p ? p : VT_ABSENT, memory_order_release);
	return p;
}

void *vt_hook_real_slow(int index)
{
	return vt_driver_symbol_cached(&vt_real_fn[index], vt_routes[index].name);
}

int vt_is_driver_address(const void *p)
{
	void *any = NULL;
	for (int i = 0; !any && i < VT_ROUTE_COUNT; i++)
		any = vt_hook_real(i);
	return vt_same_object(p, any);
}

static int same_base(int i, const char *base)
{
	return base && !strcmp(vt_routes[i].base, base);
}

int vt_route_by_pointer(const void *p, void *const *wrappers, const char *base, int version,
                        uint64_t flags)
{
	if (!p)
		return -1;
	int found = -1;
	for (int i = 0; i < VT_ROUTE_COUNT; i++) {
		if (wrappers[i] == p)
			return i; /* already ours (found through our own export) */
		if (vt_hook_real(i) != p)
			continue;
		if (found < 0)
			found = i;
		else if (base) /* one function exported under several names */
			found = vt_route_by_request(base, version, flags) == i ? i : found;
	}
	return found;
}

int vt_route_by_symbol(const char *name)
{
	if (!name || name[0] != 'c' || name[1] != 'u')
		return -1;
	for (int i = 0; i < VT_ROUTE_COUNT; i++)
		if (!strcmp(vt_routes[i].name, name))
			return i;
	return -1;
}

int vt_route_base_known(const char *base)
{
	for (int i = 0; base && i < VT_ROUTE_COUNT; i++)
		if (same_base(i, base))
			return 1;
	return 0;
}

/* The newest variant of `base` not newer than `version`, per-thread or not. */
static int best_variant(const char *base, int version, int per_thread)
{
	int best = -1;
	for (int i = 0; i < VT_ROUTE_COUNT; i++) {
		if (!same_base(i, base) || vt_routes[i].per_thread != per_thread ||
		    vt_routes[i].version > (uint32_t)version)
			continue;
		if (best < 0 || vt_routes[i].version > vt_routes[best].version)
			best = i;
	}
	return best;
}

int vt_route_by_request(const char *base, int version, uint64_t flags)
{
	if (!base || version < 0)
		return -1;
	int r = -1;
	if (flags & VT_PER_THREAD_FLAG)
		r = best_variant(base, version, 1);
	return r >= 0 ? r : best_variant(base, version, 0);
}
