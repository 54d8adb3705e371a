/* The log, created on first use (log_open.h). */
#define _GNU_SOURCE
#include "log_open.h"

#include <stdatomic.h>
#include <string.h>
#include <time.h>

#include "log_writer.h"
#include "shim_state.h"

int vt_shim_log_state; /* enum vt_log_state */

static _Atomic(const struct vt_log_open_callbacks *) callbacks;
static atomic_int log_created, after_open_ran;

/* The callbacks are set by the shim's constructor, and a library
 * constructor that runs before it may create the log: whichever of the two
 * comes second runs after_open. Each stores its part, then reads the
 * other's (sequentially consistent): at least one of them sees both. */
static void run_after_open(void)
{
	const struct vt_log_open_callbacks *cb = atomic_load(&callbacks);
	if (cb && cb->after_open && !atomic_exchange(&after_open_ran, 1))
		cb->after_open();
}

void vt_log_open_set_callbacks(const struct vt_log_open_callbacks *cb)
{
	atomic_store(&callbacks, cb);
	if (atomic_load(&log_created))
		run_after_open();
}

/* Set while this thread creates the log: a signal handler that interrupts
 * the creation and calls the driver must not wait for it (the creation
 * cannot go on until the handler returns, and a timer signal every few
 * hundred microseconds kept a job waiting for good). */
static __thread int t_opening_log __attribute__((tls_model("initial-exec")));

int vt_shim_log_ready_slow(void)
{
	if (vt_shim_disabled())
		return 0;
	int s = __atomic_load_n(&vt_shim_log_state, __ATOMIC_ACQUIRE);
	if (s == VT_LOG_READY)
		return 1;
	int expected = VT_LOG_NONE;
	if (__atomic_compare_exchange_n(&vt_shim_log_state, &expected, VT_LOG_OPENING, 0,
	                                __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
		struct vt_log_config cfg;
		memset(&cfg, 0, sizeof cfg);
		vt_log_config_from_env(&cfg);
		t_opening_log = 1;
		vt_log_init(&cfg); /* on failure the writer warns once, drops */
		atomic_store(&log_created, 1);
		run_after_open();
		__atomic_store_n(&vt_shim_log_state, VT_LOG_READY, __ATOMIC_RELEASE);
		t_opening_log = 0;
		return 1;
	}
	if (t_opening_log) { /* a handler on the creating thread: untraced, counted */
		vt_log_count_drop();
		return 0;
	}
	/* Another thread is creating the file: wait a bounded time (it may be
	 * blocked on the loader lock we hold, from inside a dlopen). */
	for (int i = 0; i < 20000; i++) {
		if (__atomic_load_n(&vt_shim_log_state, __ATOMIC_ACQUIRE) == VT_LOG_READY)
			return 1;
		struct timespec ts = {0, 100000};
		nanosleep(&ts, NULL);
	}
	vt_log_count_drop();
	return 0;
}

void vt_shim_log_after_fork(void)
{
	/* The thread that was creating the log is not in the child: it would
	 * be waited for at every record. The child's first record creates the
	 * child's log (the writer notices the new pid). */
	int expected = VT_LOG_OPENING;
	__atomic_compare_exchange_n(&vt_shim_log_state, &expected, VT_LOG_NONE, 0,
	                            __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
	t_opening_log = 0;
}
