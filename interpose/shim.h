/* Internals shared by the shim's files: configuration, the re-entrancy guard,
 * and the routing table (routing.c). */
#ifndef VT_SHIM_H
#define VT_SHIM_H

#include <stddef.h>
#include <stdint.h>

#include "real_dl.h" /* vt_real_dlsym, vt_is_own_address */

#define VT_EXPORT __attribute__((visibility("default")))

/* ---- configuration (shim_init.c) ---------------------------------------- */
/* Read the environment once (idempotent, no malloc). Safe before the
 * constructor has run: every entry point calls it. */
void vt_shim_config_load(void);
/* VRAMTRACE_DISABLE=1: pure pass-through, nothing recorded or routed. */
int vt_shim_disabled_slow(void);
extern int vt_shim_config_state; /* 0 not read yet, 1 enabled, 2 disabled */
static inline int vt_shim_disabled(void)
{
	int s = __atomic_load_n(&vt_shim_config_state, __ATOMIC_ACQUIRE);
	return __builtin_expect(s != 0, 1) ? s == 2 : vt_shim_disabled_slow();
}
/* Create the log on first use (lazy; the constructor never does). Returns 1
 * when records can be written. Inline: one load once the log is there. */
int vt_shim_log_ready_slow(void);
enum vt_log_state { VT_LOG_NONE, VT_LOG_OPENING, VT_LOG_READY }; /* READY only if enabled */
extern int vt_shim_log_state;
static inline int vt_shim_log_ready(void)
{
	if (__builtin_expect(__atomic_load_n(&vt_shim_log_state, __ATOMIC_ACQUIRE) == VT_LOG_READY,
	                     1))
		return 1;
	return vt_shim_log_ready_slow();
}
/* A fork child (not exec'd since) of the process the shim started in. The
 * shim never calls the driver on its own there: a driver lock held by
 * another thread of the parent at fork time stays locked in the child. */
int vt_shim_forked_child(void);
/* The calling thread made its first recorded call: its counts not yet in
 * the log header go in when it exits (shim_init.c). */
void vt_shim_thread_started(void);

/* ---- re-entrancy guard --------------------------------------------------- */
/* What the calling thread is doing, in initial-exec TLS (no allocation, no
 * lock on access). A wrapper or dlsym called during the shim's own work
 * passes straight through; one called while a wrapper is inside the real
 * driver passes through if the driver itself called it, and is recorded if
 * a signal handler (or anything else outside the driver) did; one called
 * while the shim works is recorded unless the shim itself called it. */
enum vt_guard_level {
	VT_GUARD_NONE = 0,   /* the job's own code */
	VT_GUARD_DRIVER = 1, /* inside a real driver call made by a wrapper */
	VT_GUARD_SHIM = 2,   /* the shim's own work */
	VT_GUARD_EXITED = 3, /* the log is finished (exit): everything passes */
};
extern __thread int vt_guard __attribute__((tls_model("initial-exec")));

/* Is p inside the driver's own code? (routing.c) */
int vt_is_driver_address(const void *p);

/* May a wrapper called from `caller` record its call? */
static inline int vt_hook_may_record(const void *caller)
{
	if (vt_shim_disabled())
		return 0;
	switch (vt_guard) {
	case VT_GUARD_NONE:
		return 1;
	case VT_GUARD_DRIVER: /* the driver calling itself passes through */
		return !vt_is_driver_address(caller);
	case VT_GUARD_SHIM:
		/* The shim calls the driver's real functions, never a wrapper:
		 * a wrapper reached now was called by a signal handler that
		 * interrupted the shim's work. That is the job's call (the
		 * writer's reserve is signal-safe; a re-entered capture of
		 * anything else must give up, not wait). */
		return !vt_is_own_address(caller);
	default:
		return 0;
	}
}

/* ---- symbol resolution --------------------------------------------------- */
/* A function of the next object after the shim (libc, libcudart...). */
void *vt_next_symbol(const char *name);

/* ---- the driver and the routing table (routing.c) ----------------------- */
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

/* Route index of a pointer (a driver function we wrap or one of our own
 * wrappers), or -1. `base`/`version`/`flags` break ties when the driver
 * exports several variants at one address (may be NULL/0). */
int vt_route_by_pointer(const void *p, const char *base, int version, uint64_t flags);
/* Route index of an exported symbol name, or -1. */
int vt_route_by_symbol(const char *name);
/* cuGetProcAddress's own ladder: the variant of `base` the driver would hand
 * out at `version` with `flags` (CU_GET_PROC_ADDRESS_*), or -1. */
int vt_route_by_request(const char *base, int version, uint64_t flags);
/* Does any row have this base name? */
int vt_route_base_known(const char *base);

#endif
