/* Start and end of the shim's life in a process: the constructor, the fork
 * child's handler, thread exit and process exit. This is the one file that
 * reaches across the shim for them; the files it calls get what they must
 * call back as callbacks (self_cost.h, log_open.h) and call nothing up.
 *
 * The constructor only finds the real dlsym and reads the environment: it
 * never calls CUDA and never creates the log (a process that never touches
 * the driver leaves no file). The log is created by the first record
 * (log_open.h). At exit an on_exit handler, which receives the real exit
 * status even on a return from main, finishes the log. It is registered
 * when the log is created (after_open), not in the constructor: exit
 * handlers run last-in first-out, and a preloaded library's constructor runs
 * before libc registers the loader's _dl_fini, which would then run our
 * destructor (status unknown) before an on_exit handler registered that
 * early. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "driver_facts.h" /* vt_record_forget_devices */
#include "log_open.h"
#include "log_writer.h"
#include "peak_sample.h"
#include "real_dl.h"
#include "self_cost.h"
#include "shim_state.h"
#include "stack_capture.h" /* vt_stack_counts_flush */

static atomic_int finished;

/* A thread's counts not yet in the log header (the shim's own time since
 * its last timed call, its last stack counts) go in when it exits
 * (thread_exit_key), and its chunk is sealed (format.h); the exiting
 * process's thread, in finish(). */
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
	vt_peak_sample_at_exit();
	vt_guard = VT_GUARD_EXITED; /* this thread's frees from later destructors pass through */
	flush_thread_counts();
	vt_log_finish(status);
}

static void on_thread_exit(void *unused)
{
	(void)unused;
	flush_thread_counts();
	vt_log_thread_exit();
}

/* The calling thread made its first recorded call (self_cost.h): its counts
 * not yet in the log header go in when it exits. */
static void thread_started(void)
{
	if (thread_exit_key_ok)
		pthread_setspecific(thread_exit_key, (void *)1);
}

static void on_exit_handler(int status, void *arg)
{
	(void)arg;
	finish(status);
}

/* The log exists: finish it at exit. */
static void after_log_open(void)
{
	on_exit(on_exit_handler, NULL);
}

static const struct vt_log_open_callbacks log_callbacks = {.after_open = after_log_open};

static void after_fork_child(void)
{
	/* The child writes its own log (the writer notices the new pid), so
	 * the facts already stated in the parent's log are stated again. */
	atomic_store(&finished, 0);
	vt_shim_log_after_fork();
	vt_record_forget_devices();
	vt_peak_forget();
	vt_self_after_fork(); /* its first call sets its recording up: timed apart */
}

__attribute__((constructor)) static void vt_shim_constructor(void)
{
	vt_shim_config_load();
	vt_log_note_stderr(); /* warnings only to the stderr the job began with */
	vt_real_dlsym();
	vt_shim_note_start_pid();
	if (vt_shim_disabled())
		return;
	thread_exit_key_ok = pthread_key_create(&thread_exit_key, on_thread_exit) == 0;
	vt_self_set_thread_started(thread_started);
	vt_log_open_set_callbacks(&log_callbacks);
	pthread_atfork(NULL, NULL, after_fork_child);
}

__attribute__((destructor)) static void vt_shim_destructor(void)
{
	/* Reached without on_exit only when the shim is unloaded some other
	 * way; the real status is unknown then (the launcher knows it). */
	if (!vt_shim_disabled())
		finish(0);
}
