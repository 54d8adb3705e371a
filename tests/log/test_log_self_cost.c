/* The shim's measure of its own time (interpose/self_cost.c): which calls it
 * times, and what the log header then holds.
 *  - timed calls come at random intervals, one in VT_SELF_SAMPLE_EVERY on
 *    average, never more than 2 * VT_SELF_SAMPLE_EVERY - 1 apart, and they
 *    do not alias with a job's period of two (allocate, free): a fixed
 *    period of 64 timed only the frees;
 *  - the header's count is exactly the calls up to the last timed one, its
 *    timed count and histogram exactly the timed calls, the estimate each
 *    timed call's time times the calls it stands for (a busy wait in half
 *    the calls shows), and the calls after the last timed one are the tail
 *    vt_self_flush counts at exit;
 *  - a thread's first call is timed apart (its set-up), outside the rate;
 *  - nothing is written and nothing fails before the process has a log. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "event_clock.h"
#include "log_test_util.h"
#include "log_writer.h"
#include "self_cost.h"

#define CALLS 64000u

/* One wrapper's worth: `work_ns` of busy wait before the "driver call". */
static int one_call(uint64_t work_ns)
{
	uint64_t t0 = vt_self_begin();
	if (work_ns) {
		uint64_t until = vt_clock_ns() + work_ns;
		while (vt_clock_ns() < until)
			;
	}
	uint64_t t1 = vt_self_mark(t0);
	uint64_t t2 = vt_self_mark(t0);
	vt_self_end(t0, t1, t2);
	return t0 != 0;
}

static void timed_calls_are_random_and_one_in_64(void **state)
{
	(void)state;
	unsigned timed = 0, odd = 0, gap = 0, max_gap = 0;
	for (unsigned i = 1; i <= CALLS; i++) { /* no log: nothing is written */
		gap++;
		if (!one_call(0))
			continue;
		timed++;
		odd += i & 1;
		if (gap > max_gap)
			max_gap = gap;
		gap = 0;
	}
	unsigned expect = CALLS / VT_SELF_SAMPLE_EVERY; /* 1000 */
	assert_in_range(timed, expect * 9 / 10, expect * 11 / 10);
	assert_true(max_gap <= 2 * VT_SELF_SAMPLE_EVERY - 1);
	/* both halves of an allocate-free loop get timed */
	assert_in_range(odd, timed * 4 / 10, timed * 6 / 10);
}

static void *first_call_of_a_thread(void *arg)
{
	(void)arg;
	one_call(5000);
	return NULL;
}

static void read_header(const char *dir, struct vt_file_header *h)
{
	char *path = lt_log_path(dir, getpid(), 0);
	int fd = open(path, O_RDONLY);
	assert_true(fd >= 0);
	assert_int_equal(read(fd, h, sizeof *h), (ssize_t)sizeof *h);
	close(fd);
	free(path);
}

static void header_holds_the_timed_calls(void **state)
{
	(void)state;
	/* the thread's interval runs on from the test before: count from a
	 * timed call (before there is a log: not in the header), so the
	 * header's count is known exactly */
	while (!one_call(0))
		;
	char *dir = lt_make_dir();
	struct vt_log_config cfg = {.dir = dir};
	assert_int_equal(vt_log_init(&cfg), 0);
	uint64_t timed = 0, last_timed = 0, slow_timed = 0, slow_weighted_ns = 0;
	for (unsigned i = 1; i <= 20000; i++) {
		int slow = i & 1; /* every other call works 2 us */
		if (one_call(slow ? 2000 : 0)) {
			timed++;
			slow_timed += (uint64_t)slow;
			slow_weighted_ns += slow ? 2000 * (i - last_timed) : 0;
			last_timed = i;
		}
	}
	vt_self_flush();
	struct vt_file_header h;
	read_header(dir, &h);
	assert_int_equal(h.self_first_calls, 0); /* this thread's came before the log */
	assert_int_equal(h.self_timed, timed);
	assert_int_equal(h.self_calls, last_timed);
	uint64_t in_hist = 0, at_least_1us = 0;
	for (unsigned b = 0; b < VT_SELF_HIST; b++) {
		in_hist += h.self_hist[b];
		if (b >= 10) /* [1024, ...) ns */
			at_least_1us += h.self_hist[b];
	}
	assert_int_equal(in_hist, timed);
	/* the slow calls' 2 us lie between the marks (a preempted fast call
	 * may land there too) */
	assert_true(at_least_1us >= slow_timed);
	/* each slow call weighed by its interval (unweighted it would be ~1/64
	 * of this); 10 % spare: the clock reading's cost is taken off each
	 * half, and the busy wait's own readings may be cheaper than that */
	assert_true(h.self_est_ns >= slow_weighted_ns / 10 * 9);
	assert_int_equal(h.self_tail_calls, 20000 - last_timed);

	pthread_t th;
	assert_int_equal(pthread_create(&th, NULL, first_call_of_a_thread, NULL), 0);
	pthread_join(th, NULL);
	struct vt_file_header after;
	read_header(dir, &after);
	assert_int_equal(after.self_first_calls, 1);
	assert_true(after.self_first_ns >= 5000);
	assert_int_equal(after.self_calls, h.self_calls); /* not a sampled call */
	assert_int_equal(after.self_timed, h.self_timed);
	lt_remove_dir(dir);
	free(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(timed_calls_are_random_and_one_in_64),
	    cmocka_unit_test(header_holds_the_timed_calls),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
