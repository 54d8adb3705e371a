/* The shim's own time, sampled (self_cost.h). */
#include "self_cost.h"

#include <stdatomic.h>

#include "log_writer.h"

static _Atomic(void (*)(void)) thread_started;

void vt_self_set_thread_started(void (*fn)(void))
{
	atomic_store_explicit(&thread_started, fn, memory_order_release);
}

__thread uint32_t vt_self_left_tls __attribute__((tls_model("initial-exec")));
/* the calls the interval ending at the timed call covers, and the
 * generator of the next interval (xorshift32, seeded per thread) */
static __thread uint32_t t_interval __attribute__((tls_model("initial-exec")));
static __thread uint32_t t_rng __attribute__((tls_model("initial-exec")));
/* the interval that ended at the call being timed, for its publication
 * (0: the thread's first call, timed apart) */
static __thread uint32_t t_pending __attribute__((tls_model("initial-exec")));

uint64_t vt_self_start(void)
{
	uint64_t now = vt_clock_ns();
	if (t_rng == 0) { /* first timed call of the thread: its first call */
		t_rng = (uint32_t)(uintptr_t)&t_rng ^ (uint32_t)now ^ 0x9e3779b9u;
		void (*started)(void) = atomic_load_explicit(&thread_started, memory_order_acquire);
		if (started)
			started();
	}
	if (t_rng == 0)
		t_rng = 1;
	t_rng ^= t_rng << 13;
	t_rng ^= t_rng >> 17;
	t_rng ^= t_rng << 5;
	uint32_t next = 1 + t_rng % (2 * VT_SELF_SAMPLE_EVERY - 1); /* mean VT_SELF_SAMPLE_EVERY */
	/* the interval that ends here; 0: the thread's first call */
	t_pending = t_interval;
	t_interval = next;
	vt_self_left_tls = next;
	return now ? now : 1;
}

/* What one reading of the clock adds to an interval between two readings:
 * the least difference of back-to-back readings, per thread, measured at
 * its first timed call and every 256th after (the clock gets cheaper once
 * it has calibrated the TSC). */
static __thread uint64_t t_clock_cost __attribute__((tls_model("initial-exec")));
static __thread uint32_t t_timed __attribute__((tls_model("initial-exec")));

static uint64_t clock_cost(void)
{
	if (t_timed++ % 256 == 0) {
		uint64_t best = UINT64_MAX;
		for (int i = 0; i < 4; i++) {
			uint64_t a = vt_clock_ns(), b = vt_clock_ns();
			if (b - a < best)
				best = b - a;
		}
		t_clock_cost = best;
	}
	return t_clock_cost;
}

static unsigned bucket_of(uint64_t ns)
{
	unsigned b = ns < 2 ? 0 : 63u - (unsigned)__builtin_clzll(ns);
	return b < VT_SELF_HIST ? b : VT_SELF_HIST - 1;
}

void vt_self_publish(uint64_t t0, uint64_t t1, uint64_t t2)
{
	uint64_t t3 = vt_clock_ns(), cost = clock_cost();
	if (t1 < t0 || t3 < t2) /* never: the clock is monotone per thread */
		return;
	/* each half holds about one reading's cost beyond its own work */
	uint64_t before = t1 - t0 > cost ? t1 - t0 - cost : 0;
	uint64_t after = t3 - t2 > cost ? t3 - t2 - cost : 0;
	uint64_t ns = before + after;
	if (t_pending == 0)
		vt_log_add_self_first(ns);
	else
		vt_log_add_self_cost(t_pending, ns * t_pending, bucket_of(ns));
}

void vt_self_after_fork(void)
{
	/* async-signal-safe: plain stores */
	vt_self_left_tls = 0;
	t_interval = 0;
}

void vt_self_flush(void)
{
	/* calls since the last timed one: the interval counted down this far */
	uint32_t untimed = t_interval > vt_self_left_tls ? t_interval - vt_self_left_tls : 0;
	if (!untimed)
		return;
	vt_log_add_self_tail(untimed);
	t_interval = vt_self_left_tls; /* the next timed call counts the rest */
}
