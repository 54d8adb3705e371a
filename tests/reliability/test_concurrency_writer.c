/* Concurrency on the log writer API: 32 threads x 100k
 * events at once, released together by a barrier so they race for chunks.
 * Exact counts: every (thread, k) exactly once, the seqs a gap-free
 * permutation delivered in increasing order, no damaged record. Labelled
 * tsan: the TSan build must report nothing (halt_on_error). VT_CONC_EVENTS
 * overrides the per-thread count. */
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

#define THREADS 32u

static uint64_t g_per_thread = 100000;
static pthread_barrier_t g_go;

static void *writer(void *arg)
{
	uint32_t t = (uint32_t)(uintptr_t)arg;
	pthread_barrier_wait(&g_go);
	for (uint64_t k = 0; k < g_per_thread; k++)
		if (lt_write_counter_event(7, t, k) < 0)
			return (void *)1;
	return NULL;
}

struct check {
	uint8_t *seen;
	uint64_t events, bad, dups, last_seq, disorder, max_seq;
};

static int check_record(const struct vt_record_view *v, void *ctx)
{
	struct check *c = ctx;
	if (v->type != VT_REC_ALLOC)
		return 0;
	struct vt_event ev;
	memcpy(&ev, v->data, sizeof ev);
	uint32_t t = (uint32_t)ev.addr;
	if (ev.addr >> 32 != 7 || t >= THREADS || ev.bytes >= g_per_thread) {
		c->bad++;
		return 0;
	}
	uint8_t *s = &c->seen[t * g_per_thread + ev.bytes];
	c->dups += *s;
	*s = 1;
	c->disorder += ev.seq <= c->last_seq;
	c->last_seq = ev.seq;
	if (ev.seq > c->max_seq)
		c->max_seq = ev.seq;
	c->events++;
	return 0;
}

static void test_32_threads_exact_counts(void **state)
{
	(void)state;
	const char *n = getenv("VT_CONC_EVENTS");
	if (n)
		g_per_thread = strtoull(n, NULL, 10);
	char *dir = lt_make_dir();
	struct vt_log_config cfg = {.dir = dir};
	assert_int_equal(vt_log_init(&cfg), 0);
	pthread_t tid[THREADS];
	pthread_barrier_init(&g_go, NULL, THREADS);
	for (uintptr_t i = 0; i < THREADS; i++)
		assert_int_equal(pthread_create(&tid[i], NULL, writer, (void *)i), 0);
	for (unsigned i = 0; i < THREADS; i++) {
		void *rc;
		pthread_join(tid[i], &rc);
		assert_null(rc);
	}
	vt_log_finish(0);

	char *path = lt_log_path(dir, getpid(), 0), err[256];
	struct vt_log *log = vt_log_open_file(path, err, sizeof err);
	assert_non_null(log);
	struct check c = {.seen = calloc(THREADS * g_per_thread, 1)};
	vt_log_for_each(log, check_record, &c);
	uint64_t total = THREADS * g_per_thread;
	printf("%u threads x %llu events: %llu read back, %llu bad, %llu duplicated, "
	       "%llu out of order, max seq %llu\n",
	       THREADS, (unsigned long long)g_per_thread, (unsigned long long)c.events,
	       (unsigned long long)c.bad, (unsigned long long)c.dups, (unsigned long long)c.disorder,
	       (unsigned long long)c.max_seq);
	assert_int_equal(vt_log_warnings(log), 0);
	assert_int_equal(c.bad, 0);
	assert_int_equal(c.dups, 0);
	assert_int_equal(c.disorder, 0);
	assert_int_equal(c.events, total);
	for (uint64_t i = 0; i < total; i++)
		if (!c.seen[i])
			fail_msg("thread %llu event %llu missing", (unsigned long long)(i / g_per_thread),
			         (unsigned long long)(i % g_per_thread));
	/* seqs strictly increasing, all events present: a gap-free 1..total
	 * unless the writer numbers other records too (it must not skip) */
	assert_true(c.max_seq >= total);
	assert_int_equal(vt_log_header(log)->events_dropped, 0);
	free(c.seen);
	vt_log_close(log);
	free(path);
	lt_remove_dir(dir);
	free(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {cmocka_unit_test(test_32_threads_exact_counts)};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
