/* Start and end of the shim's life in a process.
 *
 * The constructor only finds the real dlsym and reads the environment: it
 * never calls CUDA and never creates the log (a process that never touches
 * the driver leaves no file). The log is created by the first record
 * (vt_shim_log_ready). At exit an on_exit handler, which receives the real
 * exit status even on a return from main, finishes the log. It is registered
 * when the log is created, not in the constructor: exit handlers run last-in
 * first-out, and a preloaded library's constructor runs before libc registers
 * the loader's _dl_fini, which would then run our destructor (status unknown)
 * before an on_exit handler registered that early. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "driver_facts.h"
#include "vramtrace/env_flag.h"
#include "log_writer.h"
#include "record_event.h"
#include "self_cost.h"
#include "shim.h"
#include "stack_capture.h" /* vt_stack_counts_flush */

__thread int vt_guard __attribute__((tls_model("initial-exec")));

int vt_shim_config_state;

void vt_shim_config_load(void)
{
	if (__atomic_load_n(&vt_shim_config_state, __ATOMIC_ACQUIRE))
		return;
	__atomic_store_n(&vt_shim_config_state, vt_env_flag("VRAMTRACE_DISABLE") ? 2 : 1,
	                 __ATOMIC_RELEASE);
}

int vt_shim_disabled_slow(void)
{
	vt_shim_config_load();
	return __atomic_load_n(&vt_shim_config_state, __ATOMIC_ACQUIRE) == 2;
}

void *vt_next_symbol(const char *name)
{
	vt_dlsym_fn real = vt_real_dlsym();
	if (!real)
		return NULL;
	int saved = vt_guard;
	vt_guard = VT_GUARD_SHIM;
	void *p = real(RTLD_NEXT, name); /* next after this object: the shim */
	vt_guard = saved;
	return p;
}

/* ---- lifetime ----------------------------------------------------------- */

static atomic_int finished;

/* A thread's counts not yet in the log header (the shim's own time since
 * its last timed call, its last stack counts) go in when it exits
 * (thread_exit_key); the exiting process's thread, in finish(). */
static pthread_key_t thread_exit_key;
static int thread_exit_key_ok;

static void flush_thread_counts(void)
{
	vt_self_flush();
	vt_stack_counts_flush();
}

static void finish(int status)
{
	if (atomic_exchange(&finished, 1))
		return;
	vt_guard = VT_GUARD_EXITED; /* this thread's frees from later destructors pass through */
	flush_thread_counts();
	vt_log_finish(status);
}

static void on_thread_exit(void *unused)
{
	(void)unused;
	flush_thread_counts();
}

void vt_shim_thread_started(void)
{
	if (thread_exit_key_ok)
		pthread_setspecific(thread_exit_key, (void *)1);
}

static void on_exit_handler(int status, void *arg)
{
	(void)arg;
	finish(status);
}

/* ---- the log, created on first use -------------------------------------- */

int vt_shim_log_state; /* enum vt_log_state (shim.h) */

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
		on_exit(on_exit_handler, NULL);
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

static pid_t start_pid; /* set by the constructor, again in each exec'd image */

int vt_shim_forked_child(void)
{
	return start_pid && getpid() != start_pid;
}

static void after_fork_child(void)
{
	/* The child writes its own log (the writer notices the new pid), so
	 * the facts already stated in the parent's log are stated again. */
	atomic_store(&finished, 0);
	vt_record_forget_devices();
	vt_self_after_fork(); /* its first call sets its recording up: timed apart */
}

__attribute__((constructor)) static void vt_shim_constructor(void)
{
	vt_shim_config_load();
	vt_real_dlsym();
	start_pid = getpid();
	if (vt_shim_disabled())
		return;
	thread_exit_key_ok = pthread_key_create(&thread_exit_key, on_thread_exit) == 0;
	pthread_atfork(NULL, NULL, after_fork_child);
}

__attribute__((destructor)) static void vt_shim_destructor(void)
{
	/* Reached without on_exit only when the shim is unloaded some other
	 * way; the real status is unknown then (the launcher knows it). */
	if (!vt_shim_disabled())
		finish(0);
}
