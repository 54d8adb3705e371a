/* The one unwinder call of the shim's stack capture (stack_capture.h) and
 * of its memo's checks (stack_memo.c): libunwind's unw_backtrace.
 *
 * Under TSan its per-thread trace cache crashes: the cache's thread-exit
 * destructor (libunwind's own TSD key) locks a mutex after TSan has torn the
 * thread down. TSan builds walk the same frames with unw_step instead
 * (slower, no trace cache). Inline: the walk starts in the caller's frame. */
#ifndef VT_STACK_UNWIND_H
#define VT_STACK_UNWIND_H

#include <stdint.h>

#ifndef UNW_LOCAL_ONLY
#define UNW_LOCAL_ONLY
#endif
#include <libunwind.h>

static inline __attribute__((always_inline)) int vt_stack_unwind(void **ips, int max)
{
#if defined(__SANITIZE_THREAD__)
	unw_context_t uc;
	unw_cursor_t cur;
	int n = 0;
	if (unw_getcontext(&uc) < 0 || unw_init_local(&cur, &uc) < 0)
		return 0;
	while (n < max) {
		unw_word_t ip;
		if (unw_get_reg(&cur, UNW_REG_IP, &ip) < 0)
			break;
		ips[n++] = (void *)(uintptr_t)ip;
		if (unw_step(&cur) <= 0)
			break;
	}
	return n;
#else
	return unw_backtrace(ips, max);
#endif
}

#endif
