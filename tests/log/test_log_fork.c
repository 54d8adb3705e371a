/* Fork while 4 threads record. Parent and child each have
 * their own complete log: every record of each process is in its own log,
 * none of the child's in the parent's (the child's copy of the forking
 * thread's chunk pointer is never written). */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log_test_util.h"
#include "log_writer.h"
#include "trace_dir.h"

#define THREADS 4u
#define PER_THREAD 20000u
#define MAIN_BEFORE 10u
#define MAIN_AFTER 100u
#define CHILD_RECORDS 5000u
#define PARENT_WRITER 1u
#define CHILD_WRITER 2u

static uint64_t g_progress;

static void *recorder(void *arg)
{
	uint32_t idx = (uint32_t)(uintptr_t)arg;
	for (uint64_t k = 0; k < PER_THREAD; k++) {
		if (lt_write_counter_event(PARENT_WRITER, idx, k) < 0)
			_exit(20);
		__atomic_fetch_add(&g_progress, 1, __ATOMIC_RELAXED);
	}
	return NULL;
}

static void forked_child(void)
{
	/* the forking thread's TLS still points into the parent's chunk */
	for (uint64_t k = 0; k < CHILD_RECORDS; k++)
		if (lt_write_counter_event(CHILD_WRITER, 0, k) < 0)
			_exit(30);
	vt_log_finish(5);
	_exit(5);
}

/* The recording process: threads, then a fork in the middle of their work. */
static void parent(const char *dir)
{
	struct vt_log_config cfg = {.dir = dir, .chunk_size = 16 * 1024};
	if (vt_log_init(&cfg) < 0)
		_exit(9);
	for (uint64_t k = 0; k < MAIN_BEFORE; k++)
		lt_write_counter_event(PARENT_WRITER, THREADS, k);
	pthread_t t[THREADS];
	for (uintptr_t i = 0; i < THREADS; i++)
		pthread_create(&t[i], NULL, recorder, (void *)i);
	while (__atomic_load_n(&g_progress, __ATOMIC_RELAXED) < THREADS * PER_THREAD / 4)
		sched_yield();
	pid_t c = fork();
	if (c < 0)
		_exit(10);
	if (c == 0)
		forked_child();
	for (uint64_t k = MAIN_BEFORE; k < MAIN_BEFORE + MAIN_AFTER; k++)
		lt_write_counter_event(PARENT_WRITER, THREADS, k);
	for (unsigned i = 0; i < THREADS; i++)
		pthread_join(t[i], NULL);
	if (lt_wait(c) != 5)
		_exit(11);
	vt_log_finish(0);
	_exit(0);
}

static void check_log(struct vt_log *log, uint32_t writer, unsigned threads, uint64_t per_thread,
                      const uint64_t *want_per_thread, int exit_code)
{
	const struct vt_file_header *h = vt_log_header(log);
	assert_int_equal(VT_STATE_OF(h->state), VT_STATE_EXITED);
	assert_int_equal(VT_EXIT_CODE_OF(h->state), exit_code);
	assert_int_equal(vt_log_warnings(log), 0);
	assert_int_equal(h->events_dropped, 0);
	struct lt_recs recs;
	lt_collect(log, &recs);
	struct lt_tally tally = {.threads = threads, .per_thread = per_thread};
	lt_tally_events(&recs, writer, &tally);
	assert_int_equal(tally.foreign, 0);
	assert_int_equal(tally.bad, 0);
	for (unsigned t = 0; t < threads; t++)
		for (uint64_t k = 0; k < per_thread; k++)
			assert_int_equal(tally.seen[t * per_thread + k], k < want_per_thread[t] ? 1 : 0);
	lt_tally_free(&tally);
	lt_recs_free(&recs);
}

static void test_fork_with_recording_threads(void **state)
{
	(void)state;
	char *dir = lt_make_dir();
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0)
		parent(dir);
	assert_int_equal(lt_wait(pid), 0);

	struct vt_trace trace;
	char err[512];
	assert_int_equal(vt_trace_open(dir, &trace, err, sizeof err), 0);
	assert_int_equal(trace.nlogs, 2);
	struct vt_log *plog = NULL, *clog = NULL;
	for (size_t i = 0; i < trace.nlogs; i++) {
		const struct vt_file_header *h = vt_log_header(trace.logs[i]);
		if (h->pid == pid)
			plog = trace.logs[i];
		else if (h->ppid == pid)
			clog = trace.logs[i];
	}
	assert_non_null(plog);
	assert_non_null(clog);
	/* one time base: a child's event timed before its log opened is right */
	assert_int_equal(vt_log_header(clog)->clock_base_ns, vt_log_header(plog)->clock_base_ns);
	uint64_t pwant[THREADS + 1];
	for (unsigned t = 0; t < THREADS; t++)
		pwant[t] = PER_THREAD;
	pwant[THREADS] = MAIN_BEFORE + MAIN_AFTER;
	check_log(plog, PARENT_WRITER, THREADS + 1, PER_THREAD, pwant, 0);
	uint64_t cwant[1] = {CHILD_RECORDS};
	check_log(clog, CHILD_WRITER, 1, CHILD_RECORDS, cwant, 5);
	vt_trace_close(&trace);
	lt_remove_dir(dir);
	free(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fork_with_recording_threads),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
