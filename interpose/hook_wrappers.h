/* The driver wrappers (hook_wrappers.c): one per route of hooks.h, each
 * exported under the driver's name, and the policy every one of them applies
 * first (may this call be recorded?). */
#ifndef VT_HOOK_WRAPPERS_H
#define VT_HOOK_WRAPPERS_H

#include "hooks.h"
#include "real_dl.h"
#include "routing.h"
#include "shim_state.h"

/* Our wrapper of each route, of exactly that route's ABI. */
extern void *const vt_route_wrappers[VT_ROUTE_COUNT];

/* May a wrapper called from `caller` record its call? */
static inline int vt_hook_may_record(const void *caller)
{
	if (vt_shim_disabled())
		return 0;
	switch (vt_guard) {
	case VT_GUARD_NONE:
		return 1;
	case VT_GUARD_DRIVER:
		/* Inside a wrapped call on this thread: an entry point the driver
		 * (or a layer between job and driver) calls from within another
		 * is part of that call, recorded once, at the outermost call.
		 * Its return address does not say so: a nested call made as the
		 * entry point's last act returns straight into our wrapper, and a
		 * layer is another object than the driver. (A signal handler that
		 * interrupts a driver call cannot call the driver: it is not
		 * async-signal-safe.) */
		return 0;
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

#endif
