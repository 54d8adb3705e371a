/* Lookup path 2: dlsym. TensorFlow and XLA dlopen libcuda and dlsym every
 * entry point; a dlsym with a handle never searches the preloaded shim, so we
 * wrap dlsym itself and hand back our wrapper when the answer is a driver
 * function we wrap (routed by pointer, like cuGetProcAddress).
 *
 * Two things must not change for the caller:
 * - dlsym(RTLD_NEXT, name) means "next after the CALLER's object". glibc
 *   finds the caller from its return address, which would now be the shim;
 *   so we find the caller's link_map ourselves (dladdr1 on our return
 *   address) and search the objects after it, taking the first that defines
 *   the name itself.
 * - a name that only the shim exports (the driver is not loaded) is not
 *   found, exactly as without the shim.
 * dlvsym is not wrapped: driver symbols are unversioned, and an unwrapped
 * dlvsym keeps its own RTLD_NEXT right.
 *
 * The real dlsym is real_dl.c's; the shim's own lookups call it directly,
 * never this wrapper.
 *
 * Sanitizer runtimes call dlsym(RTLD_NEXT, ...) while they initialise, before
 * any instrumented code may run: sanitizer builds compile this file (and
 * real_dl.c, dlsym_elf.c) without instrumentation (interpose/CMakeLists.txt),
 * and the path they take here calls only libc. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <string.h>

#include "dlsym_elf.h"
#include "hook_wrappers.h" /* vt_route_wrappers */
#include "hooks.h"
#include "real_dl.h"
#include "record_event.h"
#include "routing.h"
#include "shim.h"
#include "shim_state.h"

static struct link_map *map_of(const void *addr)
{
	Dl_info info;
	struct link_map *map = NULL;
	if (!addr || !dladdr1(addr, &info, (void **)&map, RTLD_DL_LINKMAP))
		return NULL;
	return map;
}

/* An object that takes part in symbol search: not the vDSO, not the
 * nameless executable. */
static int searchable(const struct link_map *m)
{
	if (!m->l_name || !m->l_name[0])
		return 0;
	const char *base = vt_elf_basename(m->l_name);
	return !vt_elf_streq(base, "linux-vdso.so.1") && !vt_elf_streq(base, "linux-gate.so.1");
}

/* The loaded object whose file name is `soname` (a DT_NEEDED entry). */
static struct link_map *map_named(struct link_map *any, const char *soname)
{
	while (any->l_prev)
		any = any->l_prev;
	for (struct link_map *m = any; m; m = m->l_next)
		if (searchable(m) && vt_elf_streq(vt_elf_basename(m->l_name), soname))
			return m;
	return NULL;
}

static void *next_after(vt_dlsym_fn real, const char *name, const void *caller)
{
	struct link_map *self = map_of(caller);
	void *p;
	if (!self)
		return real(RTLD_NEXT, name); /* unknown caller: best effort */
	/* Objects loaded at start-up and RTLD_GLOBAL ones: the link chain is
	 * the global search order. */
	for (struct link_map *m = self->l_next; m; m = m->l_next)
		if (searchable(m) && vt_elf_defines(m, name, &p))
			return p;
	/* An RTLD_LOCAL object also searches its own dependencies, which may
	 * have been loaded before it (libc). */
	const char *needed;
	for (unsigned i = 0; (needed = vt_elf_needed(self, i)); i++) {
		struct link_map *dep = map_named(self, needed);
		if (dep && dep != self && vt_elf_defines(dep, name, &p))
			return p;
	}
	real(RTLD_DEFAULT, "vramtrace: RTLD_NEXT found no next definition"); /* sets dlerror() */
	return NULL;
}

static void *route_lookup(void *p, const char *name)
{
	int i = vt_route_by_symbol(name);
	if (p && vt_is_own_address(p) && !vt_next_symbol(name)) {
		/* Only the shim has it (the driver or runtime is not loaded):
		 * without the shim the lookup fails, so it fails. */
		if (i >= 0)
			vt_record_lookup(VT_LOOKUP_DLSYM, VT_LOOKUP_FAILED, 0, 0, 0, name);
		return NULL;
	}
	if (i < 0) {
		/* a driver function we do not wrap: counted, untouched */
		if (strncmp(name, "cuda", 4) != 0)
			vt_record_lookup(VT_LOOKUP_DLSYM, p ? VT_LOOKUP_PASSED : VT_LOOKUP_FAILED, 0, 0, 0, name);
		return p;
	}
	uint8_t outcome = VT_LOOKUP_FAILED;
	if (p) {
		int r = vt_route_by_pointer(p, vt_route_wrappers, NULL, 0, 0);
		outcome = r >= 0 ? VT_LOOKUP_ROUTED : VT_LOOKUP_UNROUTED; /* unrouted: someone else's */
		if (r >= 0) {
			p = vt_route_wrappers[r];
			i = r;
		}
	}
	vt_record_lookup(VT_LOOKUP_DLSYM, outcome, outcome == VT_LOOKUP_ROUTED ? vt_routes[i].api : 0, 0, 0, name);
	return p;
}

/* Lookups made by the shim's own work or by the driver during a call the
 * shim made pass straight through. Any other lookup while the guard is up
 * comes from a signal handler of the job (it interrupted the shim or a
 * driver call): it must get what it would get outside the handler, else the
 * job keeps an unwrapped pointer and its calls through it go unrecorded. */
static int passes_through(const void *caller)
{
	switch (vt_guard) {
	case VT_GUARD_NONE:
		return 0;
	case VT_GUARD_DRIVER:
		return vt_is_driver_address(caller);
	case VT_GUARD_SHIM:
		return vt_is_own_address(caller);
	default:
		return 1;
	}
}

VT_EXPORT void *dlsym(void *handle, const char *name)
{
	const void *caller = __builtin_return_address(0);
	vt_dlsym_fn real = vt_real_dlsym();
	if (!real)
		return NULL;
	void *p = handle == RTLD_NEXT ? next_after(real, name, caller) : real(handle, name);
	if (name[0] != 'c' || name[1] != 'u' || passes_through(caller)) /* name: real dlsym used it */
		return p;
	int saved_errno = errno, outer = vt_guard;
	vt_guard = VT_GUARD_SHIM;
	void *found = p;
	p = route_lookup(p, name);
	if (!p) {
		/* Failed: dlerror() must say why, and recording the lookup may
		 * have used the dynamic linker since. Fail the same way again. */
		if (found)
			real(RTLD_NEXT, name); /* only the shim had it: next after it */
		else if (handle != RTLD_NEXT)
			real(handle, name);
		else
			next_after(real, name, caller);
	}
	vt_guard = outer;
	errno = saved_errno;
	return p;
}
