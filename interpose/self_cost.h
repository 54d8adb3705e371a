/* The shim's own time, measured in the traced job itself (self_cost.c).
 *
 * Why: a benchmark says what recording costs on a loop of allocations; a
 * user deciding whether to keep vramtrace on wants what it cost *their*
 * job. Each thread times one recorded call in VT_SELF_SAMPLE_EVERY on
 * average, at random intervals (1 to 2 * VT_SELF_SAMPLE_EVERY - 1 calls: a
 * fixed period would alias with the job's own patterns; with a period of 64
 * every timed call of an allocate-free loop was a free): the wrapper's work
 * before the driver call (the stack, the call's shape) and after it (the
 * record), not the driver's. A timed call stands for the calls of its
 * interval; a thread's first call is timed apart (its set-up, once). The
 * log header keeps the counts, the estimate and a histogram (format.h), so
 * a killed job's log has them too; the report turns them into a cost per
 * call and in all (analyzer/recording_cost.c).
 *
 * In a wrapper:
 *   uint64_t t0 = vt_self_begin();        0 unless this call is timed
 *   ... before the driver ...
 *   uint64_t t1 = vt_self_mark(t0);
 *   result = real(...);
 *   uint64_t t2 = vt_self_mark(t0);
 *   ... after the driver ...
 *   vt_self_end(t0, t1, t2);
 * An untimed call pays a thread-local decrement and three predicted
 * branches. No lock, no malloc, no syscall: safe in signal handlers. */
#ifndef VT_SELF_COST_H
#define VT_SELF_COST_H

#include <stdint.h>

#include "event_clock.h"
#include "vramtrace/format.h"

/* calls left before this thread's next timed one */
extern __thread uint32_t vt_self_left_tls __attribute__((tls_model("initial-exec")));

/* This call is timed: draw the next interval, return the time now (not 0). */
uint64_t vt_self_start(void);

/* Times [t0, t1) and [t2, now), publishes them with the calls counted. */
void vt_self_publish(uint64_t t0, uint64_t t1, uint64_t t2);

/* Count this thread's calls since its last timed one (when the thread or
 * the process exits: without it a short job's count stops at its last
 * timed call). */
void vt_self_flush(void);

/* In a fork child (pthread_atfork): its next call is its first, timed apart
 * (it creates the child's log); the parent's interval is not the child's. */
void vt_self_after_fork(void);

/* fn is called on a thread's first timed call (its first recorded call):
 * the shim's lifecycle registers the thread there, to flush its counts
 * when it exits. None until set. */
void vt_self_set_thread_started(void (*fn)(void));

static inline uint64_t vt_self_begin(void)
{
	if (__builtin_expect(vt_self_left_tls > 1, 1)) {
		vt_self_left_tls--;
		return 0;
	}
	return vt_self_start();
}

static inline uint64_t vt_self_mark(uint64_t t0)
{
	return __builtin_expect(t0 != 0, 0) ? vt_clock_ns() : 0;
}

static inline void vt_self_end(uint64_t t0, uint64_t t1, uint64_t t2)
{
	if (__builtin_expect(t0 != 0, 0))
		vt_self_publish(t0, t1, t2);
}

#endif
