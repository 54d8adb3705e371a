/* What recording cost the traced process itself: the shim's sampled
 * measure of its own time (format.h self_*, interpose/self_cost.c), turned
 * into a cost per call and in all. */
#ifndef VT_RECORDING_COST_H
#define VT_RECORDING_COST_H

#include <stddef.h>
#include <stdint.h>

#include "vramtrace/format.h"

/* The header's counters, as the log holds them (format.h self_*). */
struct vt_self_cost {
	uint64_t calls, timed, est_ns, tail_calls, first_calls, first_ns;
	uint32_t hist[VT_SELF_HIST];
	/* stacks taken, and how many the stack memo answered (format.h stack_*) */
	uint64_t stacks, memo_hits, memo_verified, memo_mismatches;
};

struct vt_self_cost_summary {
	uint64_t calls;        /* recorded calls counted: first, sampled and tail */
	uint64_t timed;        /* calls timed at random (not the first ones) */
	int have_rate;         /* timed > 0: mean_ns means something */
	double mean_ns;        /* per call: the intervals' estimated time / their calls */
	uint64_t first_calls;  /* threads whose first call was timed */
	double first_ns;       /* those calls: the set-up of each thread's recording */
	double total_ns;       /* first_ns + mean_ns * the other calls (first_ns alone
	                          without a rate) */
	uint64_t median_lo_ns; /* the median timed call lies in [lo, hi) */
	uint64_t median_hi_ns;
	double share; /* total_ns / run_ns, 0 when run_ns is 0 */
};

/* The counters of a log's header. */
void vt_self_cost_from_header(const struct vt_file_header *h, struct vt_self_cost *out);

/* 0 and *out filled, or -1 when the log has no measure (older shim, no
 * call timed) or one that cannot be (more calls timed than counted).
 * run_ns: how long the process recorded (its first to its last record). */
int vt_self_cost_summarize(const struct vt_self_cost *c, uint64_t run_ns,
                           struct vt_self_cost_summary *out);

/* "201 ns a call on average (median 128-255 ns), 40.2 ms in all over
 * 200.0 k calls (1.1 ms of it setting up each thread's recording), 31 % of
 * the 0.131 s recorded"; more than the span (threads at once) reads "2.5 times
 * the 0.131 s recorded (summed over threads that ran at once)" */
void vt_self_cost_text(const struct vt_self_cost_summary *s, uint64_t run_ns, char *buf,
                       size_t len);

/* The launcher's summary of the shim's time over a whole run (total_ns: the
 * sum over processes and threads; wall_ns: how long the job ran): "vramtrace's
 * own time 0.40 ms", saying that it is a sum over threads when it is more
 * than the job's wall time. */
void vt_own_time_text(double total_ns, uint64_t wall_ns, char *buf, size_t len);

/* "12.3 k stacks taken, 98 % from the stack memo" (+ "; 12.0 k of those
 * checked against the unwinder: none differed" under
 * VRAMTRACE_STACK_MEMO=verify); 0 and nothing written when the log counted
 * no stack (stacks off, or a shim from before the count). */
int vt_stack_counts_text(const struct vt_self_cost *c, char *buf, size_t len);

#endif
