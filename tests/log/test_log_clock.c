/* The events' clock (logwriter/event_clock.c): CLOCK_MONOTONIC read from the
 * TSC must stay within TOLERANCE_NS of clock_gettime (read before and after
 * it), never run backwards in a thread, survive anchors that expire (a
 * thread idle for over a second) and many threads at once; VRAMTRACE_TSC=0
 * must give clock_gettime itself. Where the kernel keeps time with an
 * invariant TSC (read here from sysfs and /proc/cpuinfo, not through the
 * code under test) the TSC must be in use after calibration, and a TSC that
 * jumps (a suspend, a VM moved) must not bend the clock. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "event_clock.h"

#define TOLERANCE_NS 50000ull /* 50 us: far above the expected ~1 us error */

/* One reading bracketed by the kernel's clock; 0 if outside the bracket. */
static int bracketed(uint64_t *last)
{
	uint64_t before = vt_clock_syscall_ns();
	uint64_t t = vt_clock_ns();
	uint64_t after = vt_clock_syscall_ns();
	int ok = t + TOLERANCE_NS >= before && t <= after + TOLERANCE_NS && t >= *last;
	if (!ok)
		fprintf(stderr, "clock: before %llu t %llu after %llu last %llu (%s)\n",
		        (unsigned long long)before, (unsigned long long)t,
		        (unsigned long long)after, (unsigned long long)*last, vt_clock_source());
	*last = t;
	return ok;
}

/* Does this machine let the TSC keep time? Asked of the kernel directly. */
static int machine_trusts_tsc(void)
{
#if defined(__x86_64__)
	char src[32] = "";
	FILE *f = fopen("/sys/devices/system/clocksource/clocksource0/current_clocksource", "r");
	if (!f)
		return 0;
	int got = fgets(src, sizeof src, f) != NULL;
	fclose(f);
	if (!got || strcmp(src, "tsc\n"))
		return 0;
	f = fopen("/proc/cpuinfo", "r");
	if (!f)
		return 0;
	char line[4096];
	int invariant = 0;
	while (!invariant && fgets(line, sizeof line, f))
		invariant = !strncmp(line, "flags", 5) && strstr(line, " nonstop_tsc");
	fclose(f);
	return invariant;
#else
	return 0;
#endif
}

static void sleep_ns(long ns)
{
	struct timespec ts = {ns / 1000000000L, ns % 1000000000L};
	nanosleep(&ts, NULL);
}

/* Runs first, in a child, before this process has read the clock. */
static void test_env_turns_tsc_off(void **state)
{
	(void)state;
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		setenv("VRAMTRACE_TSC", "0", 1);
		uint64_t last = 0;
		for (int i = 0; i < 2000; i++) {
			if (!bracketed(&last))
				_exit(1);
			if (i % 100 == 0)
				sleep_ns(1000000); /* past the calibration time */
		}
		_exit(strcmp(vt_clock_source(), "clock_gettime") ? 2 : 0);
	}
	int st;
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
}

static void test_follows_clock_gettime(void **state)
{
	(void)state;
	uint64_t last = 0, start = vt_clock_syscall_ns();
	unsigned seed = 7, bad = 0;
	while (vt_clock_syscall_ns() - start < 400000000ull) { /* 0.4 s of readings */
		for (int i = 0; i < 50; i++)
			bad += !bracketed(&last);
		sleep_ns((long)(rand_r(&seed) % 3000000u));
	}
	assert_int_equal(bad, 0);
	if (machine_trusts_tsc())
		assert_string_equal(vt_clock_source(), "tsc");
	else
		assert_string_equal(vt_clock_source(), "clock_gettime");
}

/* An anchor serves a second: after a longer pause the thread takes a new
 * one, and the reading is still right. */
static void test_idle_thread_reanchors(void **state)
{
	(void)state;
	uint64_t last = 0;
	assert_true(bracketed(&last));
	sleep_ns(1200000000L);
	for (int i = 0; i < 1000; i++)
		assert_true(bracketed(&last));
}

extern int64_t vt_clock_test_tsc_jump; /* event_clock.c, VT_CLOCK_TEST_HOOKS */

/* The TSC jumps forward and back by tens of seconds' worth of ticks while
 * CLOCK_MONOTONIC does not: the clock must keep following clock_gettime
 * (a rate measured across the jump would be off by a factor of several). */
static void test_tsc_jump_keeps_time(void **state)
{
	(void)state;
	uint64_t last = 0;
	const int64_t jumps[] = {40000000000ll, -90000000000ll, 30000000000ll};
	for (unsigned j = 0; j < sizeof jumps / sizeof jumps[0]; j++) {
		vt_clock_test_tsc_jump += jumps[j];
		uint64_t start = vt_clock_syscall_ns();
		unsigned bad = 0;
		while (vt_clock_syscall_ns() - start < 300000000ull) {
			for (int i = 0; i < 50; i++)
				bad += !bracketed(&last);
			sleep_ns(1000000);
		}
		assert_int_equal(bad, 0);
	}
	vt_clock_test_tsc_jump = 0;
}

#define THREADS 4
#define READS 200000

static void *reader(void *arg)
{
	(void)arg;
	uint64_t last = 0, prev = 0;
	long bad = 0;
	for (int i = 0; i < READS; i++) {
		if (i % 1000 == 0) {
			bad += !bracketed(&last);
			prev = last;
			continue;
		}
		uint64_t t = vt_clock_ns();
		bad += t < prev; /* backwards within the thread */
		prev = last = t;
	}
	return (void *)bad;
}

static void test_threads_monotone(void **state)
{
	(void)state;
	pthread_t th[THREADS];
	for (int i = 0; i < THREADS; i++)
		assert_int_equal(pthread_create(&th[i], NULL, reader, NULL), 0);
	long bad = 0;
	for (int i = 0; i < THREADS; i++) {
		void *r;
		assert_int_equal(pthread_join(th[i], &r), 0);
		bad += (long)r;
	}
	assert_int_equal(bad, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_env_turns_tsc_off),
	    cmocka_unit_test(test_follows_clock_gettime),
	    cmocka_unit_test(test_idle_thread_reanchors),
	    cmocka_unit_test(test_threads_monotone),
	    cmocka_unit_test(test_tsc_jump_keeps_time),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
