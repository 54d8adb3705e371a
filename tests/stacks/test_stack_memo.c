/* The stack memo (interpose/stack_memo.h): a call made again from the same
 * place gets its frames without unwinding, and never frames other than a
 * fresh unwind would give. Every call below is also unwound afresh at the
 * same point and the two frame lists compared; the cases are the ways a
 * memo could go wrong: the same wrapper, return address and stack pointer
 * under a different caller; a signal frame; threads; the memo turned off.
 * Built at -O2 without frame pointers (the memo's rbp is then a general
 * register) and at -O0 with them (outer frames' CFA from rbp). */
#define _GNU_SOURCE
#define UNW_LOCAL_ONLY
#include <libunwind.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "stack_unwind.h" /* vt_stack_unwind: unw_backtrace, or unw_step under TSan */
#include "stack_memo.h"

#define WANT 80
#define NOINLINE __attribute__((noinline))

struct result {
	int from_memo;
	uintptr_t key_sp;
	int n;
	void *ips[WANT];
};

/* Like the shim's wrapper: memo first, else unwind and learn; then the
 * truth, unwound afresh in the same frame. */
/* the loaded modules' generation the wrapper puts in its key */
static uint32_t modules_gen;

static NOINLINE void wrapper(struct result *r, struct result *truth)
{
	struct vt_stack_memo_key k;
	VT_STACK_MEMO_KEY(k, modules_gen);
	int got = vt_stack_memo_find(&k, r->ips, WANT);
	r->from_memo = got >= 0;
	r->key_sp = k.sp;
	if (got < 0) {
		got = vt_stack_unwind(r->ips, WANT);
		vt_stack_memo_learn(&k, r->ips, got, WANT);
	}
	r->n = got;
	truth->n = vt_stack_unwind(truth->ips, WANT);
	__asm__ volatile("" ::: "memory");
}

/* Frame 0 is inside the wrapper (a different line for the truth); from
 * the wrapper's caller out the lists must be the same. */
static void assert_same_frames(const struct result *r, const struct result *truth)
{
	assert_int_equal(r->n, truth->n);
	assert_true(r->n > 3);
	for (int i = 1; i < r->n; i++)
		assert_ptr_equal(r->ips[i], truth->ips[i]);
}

static NOINLINE void call_site(struct result *r, struct result *truth)
{
	wrapper(r, truth);
	__asm__ volatile("" ::: "memory");
}

/* Two callers with the same frame (one definition, so they cannot drift):
 * call_site runs at the same stack pointer under either, so the key
 * (wrapper, return address, stack pointer) is the same and only a slot
 * further out differs. */
#define SAME_SHAPED_CALLER(name, mark)                                                             \
	static NOINLINE void name(struct result *r, struct result *truth)                          \
	{                                                                                          \
		volatile char pad[48];                                                             \
		pad[0] = mark;                                                                     \
		call_site(r, truth);                                                               \
		__asm__ volatile("" ::"r"(pad[0]));                                                \
	}
SAME_SHAPED_CALLER(caller_a, 1)
SAME_SHAPED_CALLER(caller_b, 2)

static void repeated_calls_hit_and_match(void **state)
{
	(void)state;
	struct vt_stack_memo_stats before, after;
	vt_stack_memo_stats(&before);
	int hits = 0;
	for (int i = 0; i < 200; i++) {
		struct result r, truth;
		caller_a(&r, &truth);
		assert_same_frames(&r, &truth);
		hits += r.from_memo;
	}
	vt_stack_memo_stats(&after);
	/* learnt at the second miss: every call after that is a hit */
	assert_true(hits >= 197);
	assert_int_equal(after.hits - before.hits, (uint64_t)hits);
	assert_true(after.learnt > before.learnt);
}

static void another_caller_at_the_same_key_is_not_taken(void **state)
{
	(void)state;
	void *a_site = NULL, *b_site = NULL;
	uintptr_t a_sp = 0, b_sp = 0;
	int hits = 0;
	for (int i = 0; i < 400; i++) {
		struct result r, truth;
		if (i % 3)
			caller_a(&r, &truth);
		else
			caller_b(&r, &truth);
		assert_same_frames(&r, &truth);
		hits += r.from_memo;
		/* frame 2: the return address into caller_a or caller_b */
		if (i % 3)
			a_site = r.ips[2], a_sp = r.key_sp;
		else
			b_site = r.ips[2], b_sp = r.key_sp;
	}
	assert_int_equal(a_sp, b_sp);         /* the same key... */
	assert_ptr_not_equal(a_site, b_site); /* ...yet the two stacks differ */
	/* and the memo holds both: each learnt at its second miss */
	assert_true(hits >= 390);
}

static NOINLINE void walk_deeper(int n, struct result *r, struct result *truth)
{
	if (n > 0) {
		walk_deeper(n - 1, r, truth);
		__asm__ volatile("" ::: "memory");
		return;
	}
	call_site(r, truth);
}

static void depths_and_shapes_match(void **state)
{
	(void)state;
	for (int round = 0; round < 6; round++)
		for (int d = 0; d < 30; d += 3) { /* deeper than WANT: capped stacks */
			struct result r, truth;
			walk_deeper(d, &r, &truth);
			assert_same_frames(&r, &truth);
		}
}

/* A dlopen or dlclose (a new modules generation) retires what was learnt:
 * the next call unwinds, and the stack is learnt again. */
static NOINLINE int calls_until_a_hit(int limit)
{
	for (int i = 0; i < limit; i++) { /* one call site: one stack */
		struct result r, truth;
		caller_a(&r, &truth);
		assert_same_frames(&r, &truth);
		if (r.from_memo)
			return i;
	}
	return -1;
}

static void a_loader_change_forgets(void **state)
{
	(void)state;
	/* earlier tests left other stacks at this key (the same stack
	 * pointer under other callers): a new one is learnt at the key's
	 * 1st, 2nd, 4th... miss, so it may take a while */
	static const int limit[3] = {256, 1, 3};
	static volatile int phases = 3; /* not a constant: gcc -O2 would peel the
	                                   loop into three call sites, three stacks */
	int hit_at[3];
	for (int phase = 0; phase < phases; phase++) { /* one call site: one stack */
		if (phase == 2)
			modules_gen++;
		hit_at[phase] = calls_until_a_hit(limit[phase]);
	}
	assert_true(hit_at[0] >= 0);
	assert_int_equal(hit_at[1], 0); /* held */
	/* a new key, nothing at it: unwound, unwound and learnt, hit */
	assert_int_equal(hit_at[2], 2);
}

/* Sixty places (depths) in turn, five rounds: each learnt at its second
 * call, so rounds three to five hit, unless the table cannot hold them. */
static void many_places_are_held_apart(void **state)
{
	(void)state;
	int hits = 0;
	for (int round = 0; round < 5; round++)
		for (int d = 0; d < 60; d++) {
			struct result r, truth;
			walk_deeper(d, &r, &truth);
			assert_same_frames(&r, &truth);
			hits += r.from_memo;
		}
	assert_true(hits >= 3 * 60 * 9 / 10);
}

static struct result sig_r, sig_truth;
static volatile sig_atomic_t sig_bad;

static void on_signal(int sig)
{
	(void)sig;
	call_site(&sig_r, &sig_truth);
	if (sig_r.n != sig_truth.n)
		sig_bad = 1;
	for (int i = 1; i < sig_r.n && i < sig_truth.n; i++)
		if (sig_r.ips[i] != sig_truth.ips[i])
			sig_bad = 1;
}

static void signal_frames_are_not_learnt(void **state)
{
	(void)state;
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_signal;
	assert_int_equal(sigaction(SIGUSR1, &sa, NULL), 0);
	struct vt_stack_memo_stats before, after;
	vt_stack_memo_stats(&before);
	for (int i = 0; i < 50; i++) {
		raise(SIGUSR1);
		assert_int_equal(sig_bad, 0);
	}
	vt_stack_memo_stats(&after);
	assert_int_equal(after.hits, before.hits);
	assert_true(after.refused > before.refused);
}

static void *thread_loop(void *arg)
{
	long bad = 0;
	for (int i = 0; i < 300; i++) {
		struct result r, truth;
		if (i & 1)
			caller_a(&r, &truth);
		else
			walk_deeper(i % 7, &r, &truth);
		if (r.n != truth.n ||
		    memcmp(r.ips + 1, truth.ips + 1, (size_t)(r.n - 1) * sizeof(void *)))
			bad++;
	}
	struct vt_stack_memo_stats s;
	vt_stack_memo_stats(&s);
	if (s.hits == 0)
		bad += 1000;
	(void)arg;
	return (void *)bad;
}

static void threads_have_their_own_memo(void **state)
{
	(void)state;
	pthread_t t[4];
	for (int i = 0; i < 4; i++)
		assert_int_equal(pthread_create(&t[i], NULL, thread_loop, NULL), 0);
	for (int i = 0; i < 4; i++) {
		void *bad;
		assert_int_equal(pthread_join(t[i], &bad), 0);
		assert_ptr_equal(bad, NULL);
	}
}

/* VRAMTRACE_STACK_MEMO=0 (ctest runs this binary again with it): every
 * call unwinds. */
static void turned_off_never_hits(void **state)
{
	(void)state;
	if (vt_stack_memo_enabled())
		skip();
	for (int i = 0; i < 50; i++) {
		struct result r, truth;
		caller_a(&r, &truth);
		assert_false(r.from_memo);
		assert_same_frames(&r, &truth);
	}
	struct vt_stack_memo_stats s;
	vt_stack_memo_stats(&s);
	assert_int_equal(s.hits, 0);
	assert_int_equal(s.learnt, 0);
}

int main(void)
{
	const struct CMUnitTest on[] = {
	    cmocka_unit_test(repeated_calls_hit_and_match),
	    cmocka_unit_test(another_caller_at_the_same_key_is_not_taken),
	    cmocka_unit_test(depths_and_shapes_match),
	    cmocka_unit_test(many_places_are_held_apart),
	    cmocka_unit_test(a_loader_change_forgets),
	    cmocka_unit_test(signal_frames_are_not_learnt),
	    cmocka_unit_test(threads_have_their_own_memo),
	};
	const struct CMUnitTest off[] = {
	    cmocka_unit_test(turned_off_never_hits),
	};
	if (!vt_stack_memo_enabled())
		return cmocka_run_group_tests(off, NULL, NULL);
	return cmocka_run_group_tests(on, NULL, NULL);
}
