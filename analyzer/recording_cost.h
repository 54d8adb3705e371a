/* What recording cost the traced process itself: the shim's sampled
 * measure of its own time (format.h self_*, interpose/self_cost.c), turned
 * into a cost per call and in all. */
#ifndef VT_RECORDING_COST_H
#define VT_RECORDING_COST_H

#include <stddef.h>
#include <stdint.h>

#include "vramtrace/format.h"

/* The header's counters, as the log holds them. */
struct vt_self_cost {
	uint64_t calls, timed, est_ns, tail_calls;
	uint32_t hist[VT_SELF_HIST];
};

struct vt_self_cost_summary {
	uint64_t calls;        /* recorded calls counted, the tail's too */
	uint64_t timed;        /* of which timed */
	double mean_ns;        /* per call: the intervals' estimated time / their calls */
	double total_ns;       /* mean_ns * calls */
	uint64_t median_lo_ns; /* the median timed call lies in [lo, hi) */
	uint64_t median_hi_ns;
	double share; /* total_ns / run_ns, 0 when run_ns is 0 */
};

/* 0 and *out filled, or -1 when the log has no measure (older shim, no
 * timed call) or one that cannot be (more calls timed than counted).
 * run_ns: how long the process recorded (its first to its last record). */
int vt_self_cost_summarize(const struct vt_self_cost *c, uint64_t run_ns,
                           struct vt_self_cost_summary *out);

/* "152 ns a call on average (median 64-127 ns), 304.8 ms in all over
 * 2.00 M calls, 33 % of the 0.910 s recorded" */
void vt_self_cost_text(const struct vt_self_cost_summary *s, uint64_t run_ns, char *buf,
                       size_t len);

#endif
