/* The shim's measure of its own time, summarized (analyzer/recording_cost.c):
 * no measure or an impossible one gives none, the cost per call is the
 * intervals' estimated time over their calls and the total takes the
 * untimed tail at that rate and each thread's first call (its set-up) at its
 * own time, the median comes from the histogram, a job too short for a
 * timed call at random has its set-up alone, and the text says all of it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <string.h>

#include "recording_cost.h"

static void no_measure_no_summary(void **state)
{
	(void)state;
	struct vt_self_cost none = {0}, impossible = {.calls = 3, .timed = 4, .est_ns = 400};
	struct vt_self_cost_summary s;
	assert_int_equal(vt_self_cost_summarize(&none, 1000, &s), -1);
	assert_int_equal(vt_self_cost_summarize(&impossible, 1000, &s), -1);
}

static void total_median_and_share(void **state)
{
	(void)state;
	/* 100 timed of 6400, each for 64: 60 around 50 ns (bucket 5), 40
	 * around 300 (bucket 8) */
	struct vt_self_cost c = {.calls = 6400, .timed = 100, .est_ns = 64 * (60 * 50 + 40 * 300)};
	c.hist[5] = 60;
	c.hist[8] = 40;
	struct vt_self_cost_summary s;
	assert_int_equal(vt_self_cost_summarize(&c, 1000000, &s), 0);
	assert_true(s.mean_ns > 149.9 && s.mean_ns < 150.1);
	assert_true(s.total_ns > 959999 && s.total_ns < 960001); /* 150 ns x 6400 */
	assert_int_equal(s.median_lo_ns, 32);
	assert_int_equal(s.median_hi_ns, 64);
	assert_true(s.share > 0.9599 && s.share < 0.9601);
	char text[256];
	vt_self_cost_text(&s, 1000000, text, sizeof text);
	assert_string_equal(text,
	                    "150 ns a call on average (median 32-63 ns), 960.0 us in all over "
	                    "6400 calls, 96 % of the 0.001000 s recorded");
	/* the median moves with the histogram: most calls slow now */
	c.hist[5] = 10;
	c.hist[8] = 90;
	assert_int_equal(vt_self_cost_summarize(&c, 0, &s), 0);
	assert_int_equal(s.median_lo_ns, 256);
	assert_true(s.share == 0);
	vt_self_cost_text(&s, 0, text, sizeof text);
	assert_null(strstr(text, "recorded")); /* no span: no share */
	/* the exiting thread's untimed tail costs the average */
	c.tail_calls = 3600;
	assert_int_equal(vt_self_cost_summarize(&c, 0, &s), 0);
	assert_int_equal(s.calls, 10000);
	assert_true(s.mean_ns > 149.9 && s.mean_ns < 150.1);
	assert_true(s.total_ns > 1499999 && s.total_ns < 1500001);
	/* two threads' first calls: 1 ms of set-up, once each, not a rate */
	c.first_calls = 2;
	c.first_ns = 1000000;
	assert_int_equal(vt_self_cost_summarize(&c, 0, &s), 0);
	assert_int_equal(s.calls, 10002);
	assert_true(s.mean_ns > 149.9 && s.mean_ns < 150.1);
	assert_true(s.total_ns > 2499999 && s.total_ns < 2500001);
	vt_self_cost_text(&s, 0, text, sizeof text);
	assert_non_null(strstr(text, "(1.0 ms of it setting up each thread's recording)"));
}

static void too_short_for_a_rate(void **state)
{
	(void)state;
	/* 18 calls: the first timed apart, 17 untimed at exit */
	struct vt_self_cost c = {.first_calls = 1, .first_ns = 900000, .tail_calls = 17};
	struct vt_self_cost_summary s;
	assert_int_equal(vt_self_cost_summarize(&c, 20000000, &s), 0);
	assert_false(s.have_rate);
	assert_int_equal(s.calls, 18);
	assert_true(s.total_ns > 899999 && s.total_ns < 900001); /* not 18 x 0.9 ms */
	char text[256];
	vt_self_cost_text(&s, 20000000, text, sizeof text);
	assert_string_equal(text, "900.0 us setting up its recording in the first call; its 18 "
	                          "calls too few to time the others (one in 64 is)");
}

static void huge_values_stay_text(void **state)
{
	(void)state;
	struct vt_self_cost c = {.calls = UINT64_MAX,
	                         .timed = 1,
	                         .est_ns = UINT64_MAX,
	                         .tail_calls = UINT64_MAX,
	                         .first_calls = 1,
	                         .first_ns = UINT64_MAX};
	c.hist[VT_SELF_HIST - 1] = UINT32_MAX;
	struct vt_self_cost_summary s;
	assert_int_equal(vt_self_cost_summarize(&c, 1, &s), 0);
	/* a uint64_t holds each */
	assert_true(s.total_ns <= 1.8e19 && s.first_ns <= 1.8e19 && s.mean_ns <= 1.8e19);
	char text[64]; /* shorter than the sentence: cut, still a string */
	vt_self_cost_text(&s, 1, text, sizeof text);
	assert_true(strlen(text) < sizeof text);
	assert_int_equal(s.median_lo_ns, 1ull << (VT_SELF_HIST - 1));
}

/* Threads that record at once add up to more than the span: the text says
 * it is a sum instead of claiming more than 100 % of the time. */
static void summed_over_threads(void **state)
{
	(void)state;
	struct vt_self_cost c = {.calls = 6400, .timed = 100, .est_ns = 64 * 100 * 150};
	c.hist[7] = 100;
	struct vt_self_cost_summary s;
	assert_int_equal(vt_self_cost_summarize(&c, 400000, &s), 0); /* 960 us in 400 us */
	char text[256];
	vt_self_cost_text(&s, 400000, text, sizeof text);
	assert_null(strstr(text, " % of"));
	assert_non_null(strstr(text, "2.4 times the 0.000400 s recorded (summed over threads "
	                             "that ran at once)"));
	vt_own_time_text(960000, 400000, text, sizeof text);
	assert_string_equal(text, "vramtrace's own time 0.96 ms summed over threads and processes "
	                          "(more than the 0.40 ms the job ran: they ran at once)");
	vt_own_time_text(960000, 2000000, text, sizeof text);
	assert_string_equal(text, "vramtrace's own time 0.96 ms");
	vt_own_time_text(960000, 0, text, sizeof text); /* no wall time known */
	assert_string_equal(text, "vramtrace's own time 0.96 ms");
}

/* Stacks taken and the memo's share: nothing when none were counted; a
 * mismatch said loudly; a header claiming more hits than stacks is capped. */
static void stack_counts(void **state)
{
	(void)state;
	char text[256] = "untouched";
	struct vt_self_cost none = {0};
	assert_int_equal(vt_stack_counts_text(&none, text, sizeof text), 0);
	assert_string_equal(text, "untouched");

	struct vt_self_cost c = {.stacks = 12345, .memo_hits = 12100};
	assert_int_equal(vt_stack_counts_text(&c, text, sizeof text), 1);
	assert_string_equal(text, "12.3 k stacks taken, 98 % from the stack memo");

	c.memo_verified = 12100;
	vt_stack_counts_text(&c, text, sizeof text);
	assert_non_null(
	    strstr(text, "12.1 k of those checked against the unwinder: none differed"));
	c.memo_mismatches = 3;
	vt_stack_counts_text(&c, text, sizeof text);
	assert_non_null(strstr(text, "3 DIFFERED"));

	struct vt_self_cost hostile = {.stacks = 1, .memo_hits = UINT64_MAX};
	vt_stack_counts_text(&hostile, text, sizeof text);
	assert_string_equal(text, "1 stack taken, 100 % from the stack memo");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(no_measure_no_summary), cmocka_unit_test(total_median_and_share),
	    cmocka_unit_test(too_short_for_a_rate),  cmocka_unit_test(huge_values_stay_text),
	    cmocka_unit_test(stack_counts),          cmocka_unit_test(summed_over_threads),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
