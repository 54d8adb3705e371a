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
#include "log_writer.h"
#include "record_event.h"
#include "shim.h"

__thread int vt_guard __attribute__((tls_model("initial-exec")));

int vt_shim_config_state;
int vt_shim_log_is_ready; /* log_state reached LOG_READY, enabled */
static int disabled;

static int env_true(const char *name)
{
	const char *v = getenv(name);
	return v && *v && strcmp(v, "0") != 0;
}

void vt_shim_config_load(void)
{
	if (__atomic_load_n(&vt_shim_config_state, __ATOMIC_ACQUIRE))
		return;
	disabled = env_true("VRAMTRACE_DISABLE");
	__atomic_store_n(&vt_shim_config_state, disabled ? 2 : 1, __ATOMIC_RELEASE);
}

int vt_shim_disabled_slow(void)
{
	vt_shim_config_load();
	return disabled;
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

int vt_same_object(const void *p, const void *anchor)
{
	Dl_info a, b;
	return p && anchor && dladdr(anchor, &a) && dladdr(p, &b) && a.dli_fbase == b.dli_fbase;
}

int vt_is_own_address(const void *p)
{
	return vt_same_object(p, (const void *)vt_is_own_address);
}

/* ---- lifetime ----------------------------------------------------------- */

static atomic_int finished;

static void finish(int status)
{
	if (atomic_exchange(&finished, 1))
		return;
	vt_guard = VT_GUARD_EXITED; /* this thread's frees from later destructors pass through */
	vt_log_finish(status);
}

static void on_exit_handler(int status, void *arg)
{
	(void)arg;
	finish(status);
}

/* ---- the log, created on first use -------------------------------------- */

enum { LOG_NONE, LOG_OPENING, LOG_READY };
static atomic_int log_state;

int vt_shim_log_ready_slow(void)
{
	if (vt_shim_disabled())
		return 0;
	int s = atomic_load_explicit(&log_state, memory_order_acquire);
	if (s == LOG_READY) {
		__atomic_store_n(&vt_shim_log_is_ready, 1, __ATOMIC_RELEASE);
		return 1;
	}
	int expected = LOG_NONE;
	if (atomic_compare_exchange_strong(&log_state, &expected, LOG_OPENING)) {
		struct vt_log_config cfg;
		memset(&cfg, 0, sizeof cfg);
		vt_log_config_from_env(&cfg);
		vt_log_init(&cfg); /* on failure the writer warns once, drops */
		on_exit(on_exit_handler, NULL);
		atomic_store_explicit(&log_state, LOG_READY, memory_order_release);
		return 1;
	}
	/* Another thread is creating the file: wait a bounded time (it may be
	 * blocked on the loader lock we hold, from inside a dlopen). */
	for (int i = 0; i < 20000; i++) {
		if (atomic_load_explicit(&log_state, memory_order_acquire) == LOG_READY)
			return 1;
		struct timespec ts = {0, 100000};
		nanosleep(&ts, NULL);
	}
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
}

__attribute__((constructor)) static void vt_shim_constructor(void)
{
	vt_shim_config_load();
	vt_real_dlsym();
	start_pid = getpid();
	if (disabled)
		return;
	pthread_atfork(NULL, NULL, after_fork_child);
}

__attribute__((destructor)) static void vt_shim_destructor(void)
{
	/* Reached without on_exit only when the shim is unloaded some other
	 * way; the real status is unknown then (the launcher knows it). */
	if (!disabled)
		finish(0);
}
