/* CLOCK_MONOTONIC from the TSC (contract: event_clock.h).
 *
 * The process goes through these states once, in this order:
 *   UNDECIDED -> CHOOSING (one thread looks at the CPU and the kernel)
 *             -> SYSCALL (the TSC is not to be trusted: clock_gettime always)
 *             or CALIBRATING (clock_gettime, until CALIBRATION_NS have passed
 *                since the first pair of readings)
 *             -> TSC (each thread extrapolates from its own anchor).
 * The rate (ns per tick, 32.32 fixed point) is the slope between the first
 * pair of readings and the latest good one, so it gets more exact the longer
 * the process runs; each anchor keeps the rate it was made with, so the
 * times of one anchor lie on one straight line. */
#define _GNU_SOURCE
#include "event_clock.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "vramtrace/env_flag.h"

#if defined(__x86_64__)
#include <cpuid.h>
#include <x86intrin.h>
#define VT_HAVE_TSC 1
#else
#define VT_HAVE_TSC 0
#endif

enum { ST_UNDECIDED = 0, ST_CHOOSING, ST_SYSCALL, ST_CALIBRATING, ST_TSC };

#define CALIBRATION_NS 20000000ull  /* 20 ms: the first rate is good to ~1e-6 */
#define ANCHOR_MAX_NS 1000000000ull /* an anchor serves at most a second */
#define GOOD_PAIR_NS 2000u          /* a pair read further apart is not used for the rate */

static int g_state; /* atomic, ST_* */
static __thread uint64_t t_last_ns __attribute__((tls_model("initial-exec")));

uint64_t vt_clock_syscall_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Never backwards within a thread, as CLOCK_MONOTONIC promises: a new anchor
 * may sit a few ns behind the line of the old one. */
static inline uint64_t monotone(uint64_t ns)
{
	if (ns < t_last_ns)
		ns = t_last_ns;
	t_last_ns = ns;
	return ns;
}

#if VT_HAVE_TSC
static uint64_t g_tsc0; /* atomic: the baseline pair (the first, or after the */
static uint64_t g_ns0;  /* clocks parted), set before CALIBRATING is published */
static uint64_t g_mult; /* atomic: ns per tick << 32 */

/* This thread's anchor: t_anchor_ns == 0 means none (use the slow path). */
static __thread uint64_t t_anchor_tsc __attribute__((tls_model("initial-exec")));
static __thread uint64_t t_anchor_ns __attribute__((tls_model("initial-exec")));
static __thread uint64_t t_mult __attribute__((tls_model("initial-exec")));
static __thread uint64_t t_limit __attribute__((tls_model("initial-exec"))); /* ticks */

#ifdef VT_CLOCK_TEST_HOOKS
/* tests/log/test_log_clock.c moves the TSC, as a suspend or a VM move would */
int64_t vt_clock_test_tsc_jump;
#define TSC_JUMP ((uint64_t)vt_clock_test_tsc_jump)
#else
#define TSC_JUMP 0
#endif

static inline uint64_t ticks(void)
{
	return __rdtsc() + TSC_JUMP;
}

/* Does the kernel keep CLOCK_MONOTONIC with the TSC? Then it has checked
 * that the TSC runs at one rate and in step on every CPU. */
static int kernel_uses_tsc(void)
{
	int fd = open("/sys/devices/system/clocksource/clocksource0/current_clocksource",
	              O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	char buf[16] = "";
	ssize_t n = read(fd, buf, sizeof buf - 1);
	close(fd);
	return n >= 3 && !strncmp(buf, "tsc", 3) && (n == 3 || buf[3] == '\n');
}

static int invariant_tsc(void)
{
	unsigned a, b, c, d;
	if (!__get_cpuid(0x80000007u, &a, &b, &c, &d))
		return 0;
	return (d >> 8) & 1u;
}

static int tsc_trusted(void)
{
	if (vt_env_off("VRAMTRACE_TSC"))
		return 0;
	return invariant_tsc() && kernel_uses_tsc();
}

/* One clock_gettime with the TSC read around it, the best of three: the
 * tick taken is the middle of the closest pair (a thread preempted between
 * the two reads gets a wide pair and is tried again). */
static uint64_t read_pair(uint64_t *tsc, uint64_t *gap_ticks)
{
	uint64_t best_gap = UINT64_MAX, best_ns = 0, best_tsc = 0;
	for (int i = 0; i < 3; i++) {
		uint64_t a = ticks();
		uint64_t ns = vt_clock_syscall_ns();
		uint64_t b = ticks();
		if (b >= a && b - a < best_gap) {
			best_gap = b - a;
			best_ns = ns;
			best_tsc = a + (b - a) / 2;
		}
	}
	*tsc = best_tsc;
	*gap_ticks = best_gap;
	return best_ns;
}

static int choose(void)
{
	int expected = ST_UNDECIDED;
	if (!__atomic_compare_exchange_n(&g_state, &expected, ST_CHOOSING, 0, __ATOMIC_ACQ_REL,
	                                 __ATOMIC_ACQUIRE))
		return expected == ST_CHOOSING ? ST_SYSCALL : expected; /* another thread decides */
	int saved_errno = errno; /* open/read/close must not show in the job's errno */
	int trusted = tsc_trusted();
	errno = saved_errno;
	if (!trusted) {
		__atomic_store_n(&g_state, ST_SYSCALL, __ATOMIC_RELEASE);
		return ST_SYSCALL;
	}
	uint64_t gap, tsc0, ns0 = read_pair(&tsc0, &gap);
	__atomic_store_n(&g_tsc0, tsc0, __ATOMIC_RELAXED);
	__atomic_store_n(&g_ns0, ns0, __ATOMIC_RELAXED);
	__atomic_store_n(&g_state, ST_CALIBRATING, __ATOMIC_RELEASE);
	return ST_CALIBRATING;
}

/* The rate from the baseline pair to (ns, tsc), ns per tick << 32; 0 if
 * that says nothing sensible (the TSC did not advance, an absurd rate). */
static uint64_t rate_since_baseline(uint64_t ns, uint64_t tsc)
{
	uint64_t tsc0 = __atomic_load_n(&g_tsc0, __ATOMIC_RELAXED);
	uint64_t ns0 = __atomic_load_n(&g_ns0, __ATOMIC_RELAXED);
	if (tsc <= tsc0 || ns <= ns0)
		return 0;
	double ns_per_tick = (double)(ns - ns0) / (double)(tsc - tsc0);
	if (!(ns_per_tick > 0.01 && ns_per_tick < 100.0)) /* 10 MHz .. 100 GHz */
		return 0;
	return (uint64_t)(ns_per_tick * 4294967296.0);
}

/* A later, longer measurement of the rate. One more than 0.1 % off the
 * current rate is not a better estimate (the calibration is good to ~1e-6)
 * but the two clocks parting: a suspend (the TSC may run on or restart while
 * CLOCK_MONOTONIC stops), a VM moved to another host. The baseline then
 * starts again here and the rate stays until the next anchors measure it. */
static uint64_t refine_rate(uint64_t ns, uint64_t tsc, uint64_t mult)
{
	uint64_t better = rate_since_baseline(ns, tsc);
	if (better && better <= mult + mult / 1000 && better + mult / 1000 >= mult) {
		__atomic_store_n(&g_mult, better, __ATOMIC_RELAXED);
		return better;
	}
	__atomic_store_n(&g_tsc0, tsc, __ATOMIC_RELAXED);
	__atomic_store_n(&g_ns0, ns, __ATOMIC_RELAXED);
	return mult;
}

/* While calibrating, every call reads clock_gettime; the first call after
 * CALIBRATION_NS measures the rate and switches the process to the TSC. */
static int calibrate_step(void)
{
	if (vt_clock_syscall_ns() - __atomic_load_n(&g_ns0, __ATOMIC_RELAXED) < CALIBRATION_NS)
		return ST_CALIBRATING;
	uint64_t tsc, gap;
	uint64_t ns = read_pair(&tsc, &gap);
	uint64_t mult = rate_since_baseline(ns, tsc);
	if (mult)
		__atomic_store_n(&g_mult, mult, __ATOMIC_RELAXED);
	int expected = ST_CALIBRATING;
	int next = mult ? ST_TSC : ST_SYSCALL;
	__atomic_compare_exchange_n(&g_state, &expected, next, 0, __ATOMIC_ACQ_REL,
	                            __ATOMIC_ACQUIRE);
	return expected == ST_CALIBRATING ? next : expected;
}

/* A fresh anchor for this thread (and a better rate for everyone). */
static uint64_t reanchor(void)
{
	uint64_t tsc, gap;
	uint64_t ns = read_pair(&tsc, &gap);
	uint64_t mult = __atomic_load_n(&g_mult, __ATOMIC_RELAXED);
	if (((unsigned __int128)gap * mult >> 32) <= GOOD_PAIR_NS)
		mult = refine_rate(ns, tsc, mult);
	t_anchor_ns = 0; /* a signal handler in between takes the slow path */
	t_anchor_tsc = tsc;
	t_mult = mult;
	t_limit = (uint64_t)((double)ANCHOR_MAX_NS * 4294967296.0 / (double)mult);
	t_anchor_ns = ns;
	return ns;
}

static uint64_t clock_slow(void)
{
	int st = __atomic_load_n(&g_state, __ATOMIC_ACQUIRE);
	if (st == ST_UNDECIDED)
		st = choose();
	if (st == ST_CALIBRATING)
		st = calibrate_step();
	if (st != ST_TSC)
		return monotone(vt_clock_syscall_ns());
	return monotone(reanchor());
}

uint64_t vt_clock_ns(void)
{
	if (__builtin_expect(t_anchor_ns != 0, 1)) {
		uint64_t d =
		    ticks() - t_anchor_tsc; /* "negative" (another CPU's TSC behind): huge */
		if (__builtin_expect(d < t_limit, 1))
			return monotone(t_anchor_ns +
			                (uint64_t)((unsigned __int128)d * t_mult >> 32));
	}
	return clock_slow();
}

#else /* no TSC: clock_gettime for every event */

uint64_t vt_clock_ns(void)
{
	/* said once: a store to the shared word on every event would bounce its
	 * cache line between the job's threads */
	if (__atomic_load_n(&g_state, __ATOMIC_RELAXED) != ST_SYSCALL)
		__atomic_store_n(&g_state, ST_SYSCALL, __ATOMIC_RELAXED);
	return monotone(vt_clock_syscall_ns());
}

#endif

int vt_clock_uses_tsc(void)
{
	int st = __atomic_load_n(&g_state, __ATOMIC_ACQUIRE);
	return st == ST_CALIBRATING || st == ST_TSC;
}

const char *vt_clock_source(void)
{
	switch (__atomic_load_n(&g_state, __ATOMIC_ACQUIRE)) {
	case ST_TSC:
		return "tsc";
	case ST_CALIBRATING:
		return "tsc (calibrating)";
	case ST_SYSCALL:
		return "clock_gettime";
	default:
		return "undecided";
	}
}
