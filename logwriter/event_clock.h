/* The time of an event: CLOCK_MONOTONIC in nanoseconds, read from the CPU's
 * time-stamp counter when the kernel itself keeps time with it.
 *
 * Why not clock_gettime for every event: it is the largest single cost of
 * recording with stacks off (28 ns in the vDSO on the EPYC VM the benchmarks
 * run on, against 11 ns for rdtsc; bench/ prints both). The kernel's
 * CLOCK_MONOTONIC on such a machine *is* the TSC scaled, so the shim scales
 * it the same way: each thread keeps an anchor (one clock_gettime and the
 * TSC beside it, renewed at least once a second) and extrapolates from it
 * with a rate measured against the kernel's clock over the process's
 * lifetime. An event's time then stays within microseconds of
 * clock_gettime's, never runs backwards within a thread, and the log format
 * does not change (t_ns is still nanoseconds of CLOCK_MONOTONIC).
 *
 * Where the TSC cannot be trusted (not x86-64, no invariant TSC, the kernel
 * keeps time with another clocksource) or VRAMTRACE_TSC=0, every event reads
 * clock_gettime as before. No lock, no malloc: callable from any hook and
 * from signal handlers. */
#ifndef VT_EVENT_CLOCK_H
#define VT_EVENT_CLOCK_H

#include <stdint.h>

/* CLOCK_MONOTONIC now, in ns. */
uint64_t vt_clock_ns(void);

/* Which source vt_clock_ns uses now: "tsc", "tsc (calibrating)",
 * "clock_gettime", or "undecided" before the first call. */
const char *vt_clock_source(void);

/* 1 when this process reads the TSC (or calibrates to), 0 otherwise. */
int vt_clock_uses_tsc(void);

/* CLOCK_MONOTONIC through clock_gettime (the reference). */
uint64_t vt_clock_syscall_ns(void);

#endif
