/* The per-thread stack memo (stack_memo.h): learnt by a step-by-step walk
 * that notes the slots the unwinder read, used while those slots hold the
 * same words. */
#define _GNU_SOURCE
#define UNW_LOCAL_ONLY
#include "stack_memo.h"

#include <libunwind.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "arena.h"
#include "stack_unwind.h"
#include "vramtrace/env_flag.h"

/* 64 sets of 4 ways: a key (wrapper, return address, stack pointer) may
 * hold several stacks (the same place reached from different callers at
 * the same depth), and a thread allocates from more places than a
 * direct-mapped table of a few dozen could keep apart. */
#define MEMO_SETS 64u
#define MEMO_WAYS 4u
/* a return-address slot and a saved rbp per frame, at most */
#define MAX_CHECKS (2 * VT_MEMO_MAX_FRAMES)
/* frames from the walk's start (this file's) to the wrapper's caller */
#define MAX_OWN_FRAMES 8
/* a slot further above the wrapper's stack pointer than this is not on
 * the thread's stack as we know it (an alternate signal stack, a corrupt
 * frame): not learnt */
#define STACK_SPAN ((uintptr_t)64 << 20)
/* learnt stacks live in the thread's arena, sized to fit; past this much
 * the memo starts over (relearning a changed stack leaves the old one) */
#define ARENA_CAP ((size_t)4 << 20)

enum state { EMPTY, SEEN, READY };

struct check {
	uintptr_t addr, val;
};

/* A learnt stack: its frames, then its checks (in the order the unwinder
 * reads them: stack_checks), in one arena block. */
struct memo_stack {
	uintptr_t fp;    /* the wrapper's rbp, when need_fp */
	uint8_t need_fp; /* an outer frame starts from the wrapper's live rbp */
	uint16_t nips, nchecks;
	uintptr_t ips[];
};

static const struct check *stack_checks(const struct memo_stack *st)
{
	return (const struct check *)(st->ips + st->nips);
}

struct way {
	uintptr_t ip, ra, sp; /* the key */
	uint32_t gen;
	int16_t want;
	uint8_t state;                  /* enum state */
	uint32_t misses;                /* SEEN: at this key; READY: other stacks at this key */
	const struct memo_stack *stack; /* READY */
};

struct memo {
	struct way sets[MEMO_SETS][MEMO_WAYS];
	uint8_t victim[MEMO_SETS]; /* round robin */
	struct vt_arena arena;
	/* the walk notes here, then the stack is copied to the arena */
	struct check scratch_checks[MAX_CHECKS];
};

/* initial-exec: read on every capture, without a __tls_get_addr call */
static __thread struct memo *tls_memo __attribute__((tls_model("initial-exec")));
static __thread struct vt_stack_memo_stats tls_stats __attribute__((tls_model("initial-exec")));

static pthread_once_t once = PTHREAD_ONCE_INIT;
static pthread_key_t exit_key;
static int exit_key_ok;

static void memo_at_thread_exit(void *p)
{
	vt_arena_release(&((struct memo *)p)->arena);
	munmap(p, sizeof(struct memo));
	tls_memo = NULL;
}

static void make_exit_key(void)
{
	exit_key_ok = pthread_key_create(&exit_key, memo_at_thread_exit) == 0;
}

enum mode { MODE_OFF, MODE_ON, MODE_VERIFY };

static int mode(void)
{
#if defined(__x86_64__)
	static _Atomic int cached = -1;
	int v = atomic_load_explicit(&cached, memory_order_relaxed);
	if (__builtin_expect(v >= 0, 1))
		return v;
	const char *s = getenv("VRAMTRACE_STACK_MEMO");
	v = vt_env_off("VRAMTRACE_STACK_MEMO") ? MODE_OFF
	    : s && !strcmp(s, "verify")        ? MODE_VERIFY
	                                       : MODE_ON;
	atomic_store_explicit(&cached, v, memory_order_relaxed);
	return v;
#else
	return MODE_OFF; /* the walk's register names are x86-64's */
#endif
}

int vt_stack_memo_enabled(void)
{
	return mode() != MODE_OFF;
}

int vt_stack_memo_verifying(void)
{
	return mode() == MODE_VERIFY;
}

/* The calling thread's memo, mapped on its first learning (threads that
 * never call twice from one place never map it). */
static struct memo *memo_self(void)
{
	if (tls_memo)
		return tls_memo;
	pthread_once(&once, make_exit_key);
	void *p = mmap(NULL, sizeof(struct memo), PROT_READ | PROT_WRITE,
	               MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return NULL;
	if (exit_key_ok)
		pthread_setspecific(exit_key, p);
	tls_memo = p; /* zero pages: every way EMPTY */
	tls_memo->arena.cap = ARENA_CAP;
	return tls_memo;
}

static struct way *set_of(struct memo *m, const struct vt_stack_memo_key *k)
{
	uint64_t h = (k->sp ^ k->ra * 0x9e3779b97f4a7c15ull ^ k->ip) * 0xff51afd7ed558ccdull;
	return m->sets[h >> 58]; /* 64 sets */
}

/* The way now stands for this key (its state and counts are the caller's). */
static void take_key(struct way *w, const struct vt_stack_memo_key *k, int want)
{
	w->ip = k->ip, w->ra = k->ra, w->sp = k->sp, w->gen = k->gen, w->want = (int16_t)want;
}

static int same_key(const struct way *w, const struct vt_stack_memo_key *k, int want)
{
	return w->sp == k->sp && w->ra == k->ra && w->ip == k->ip && w->gen == k->gen &&
	       w->want == want;
}

/* Innermost first, stopping at the first difference: each slot is where
 * the unwinder would read next, given the ones before matched. */
static int slots_hold(const struct memo_stack *st, const struct vt_stack_memo_key *k)
{
	if (st->need_fp && st->fp != k->fp)
		return 0;
	const struct check *c = stack_checks(st);
	for (unsigned i = 0; i < st->nchecks; i++)
		if (*(const uintptr_t *)c[i].addr != c[i].val)
			return 0;
	return 1;
}

/* The hot path: one set, the ways of this key, the words the unwinder
 * would read. */
int vt_stack_memo_find(const struct vt_stack_memo_key *k, void **ips, int want)
{
	struct memo *m = tls_memo;
	if (!m)
		return -1;
	struct way *set = set_of(m, k);
	for (unsigned i = 0; i < MEMO_WAYS; i++) {
		const struct way *w = &set[i];
		if (w->state != READY || !same_key(w, k, want) || !slots_hold(w->stack, k))
			continue;
		memcpy(ips, w->stack->ips, w->stack->nips * sizeof *ips);
		tls_stats.hits++;
		return w->stack->nips;
	}
	return -1;
}

/* ---- learning: a step-by-step walk that notes what it read --------------- */

struct walk {
	struct memo *m; /* notes into m->scratch_checks */
	const struct vt_stack_memo_key *k;
	uintptr_t uc_lo, uc_hi; /* the walk's own register copy */
	uintptr_t last_fp_slot;
	uint16_t nchecks;
	uint8_t need_fp; /* memo_stack.need_fp */
};

static int on_stack(const struct walk *w, uintptr_t addr)
{
	return addr >= w->k->sp && addr - w->k->sp < STACK_SPAN && !(addr & 7u);
}

static int add_check(struct walk *w, uintptr_t addr, uintptr_t expect)
{
	if (!on_stack(w, addr) || w->nchecks == MAX_CHECKS || *(const uintptr_t *)addr != expect)
		return 0;
	w->m->scratch_checks[w->nchecks++] = (struct check){addr, expect};
	return 1;
}

/* The slot this frame's instruction pointer was read from. */
static int note_return_slot(struct walk *w, unw_cursor_t *cur, uintptr_t ip)
{
	unw_save_loc_t loc;
	if (unw_get_save_loc(cur, UNW_X86_64_RIP, &loc) < 0 || loc.type != UNW_SLT_MEMORY)
		return 0;
	return add_check(w, loc.u.addr, ip);
}

/* A frame's rbp as the walk found it, before stepping past the frame. */
struct frame_pointer {
	unw_save_loc_t loc;
	unw_word_t value;
};

static int read_frame_pointer(unw_cursor_t *cur, struct frame_pointer *fp)
{
	return unw_get_save_loc(cur, UNW_X86_64_RBP, &fp->loc) == 0 &&
	       fp->loc.type == UNW_SLT_MEMORY && unw_get_reg(cur, UNW_X86_64_RBP, &fp->value) == 0;
}

/* A frame whose CFA is its rbp + 16 (push rbp; mov rbp, rsp) was unwound
 * from its rbp: the memo needs the same rbp. It came from a slot an inner
 * frame saved it in (a check, once per slot), or it is still the wrapper's
 * live register (its copy in the walk's registers, or the slot this file's
 * own frames saved it in, below the wrapper's stack pointer). Frames
 * without a frame pointer keep any word in rbp: not checked, or a loop
 * counter held there would make every call a miss. */
static int note_frame_pointer(struct walk *w, const struct frame_pointer *fp, uintptr_t cfa)
{
	if (fp->value + 16 != cfa)
		return 1;
	uintptr_t addr = fp->loc.u.addr;
	int live = (addr >= w->uc_lo && addr < w->uc_hi) || addr < w->k->sp;
	if (!live) {
		if (addr == w->last_fp_slot)
			return 1;
		w->last_fp_slot = addr;
		return add_check(w, addr, fp->value);
	}
	if (fp->value != w->k->fp)
		return 0;
	w->need_fp = 1;
	return 1;
}

/* Walk from here to the wrapper's caller, then along ips[first..n),
 * noting each frame's slots; 1 when the walk saw exactly those frames
 * (and ended where unw_backtrace ended, if it ended before `want`). */
static __attribute__((noinline)) int walk_and_note(struct walk *w, void *const *ips, int n,
                                                   int want, int first)
{
	unw_context_t uc;
	unw_cursor_t cur;
	if (unw_getcontext(&uc) < 0 || unw_init_local(&cur, &uc) < 0)
		return 0;
	const struct vt_stack_memo_key *k = w->k;
	w->uc_lo = (uintptr_t)&uc;
	w->uc_hi = (uintptr_t)&uc + sizeof uc;
	unw_word_t ip = 0, cfa;
	for (int own = 0;; own++) { /* this file's frames and the wrapper's */
		if (unw_get_reg(&cur, UNW_REG_IP, &ip) < 0)
			return 0;
		if (ip == k->ra)
			break;
		if (own == MAX_OWN_FRAMES || unw_step(&cur) <= 0)
			return 0;
	}
	for (int i = first;; i++) {
		struct frame_pointer fp;
		if (unw_get_reg(&cur, UNW_REG_IP, &ip) < 0 || ip != (uintptr_t)ips[i] ||
		    unw_is_signal_frame(&cur) > 0 || !note_return_slot(w, &cur, ip) ||
		    !read_frame_pointer(&cur, &fp))
			return 0;
		if (i + 1 == n) /* capped at want, or the stack ended here too */
			return n == want || unw_step(&cur) <= 0;
		if (unw_step(&cur) <= 0 || unw_get_reg(&cur, UNW_REG_SP, &cfa) < 0 ||
		    !note_frame_pointer(w, &fp, cfa))
			return 0;
	}
}

/* The index of the wrapper's caller (its return address) among the first
 * frames, or -1. */
static int caller_index(void *const *ips, int n, uintptr_t ra)
{
	for (int i = 0; i < n && i < MAX_OWN_FRAMES; i++)
		if ((uintptr_t)ips[i] == ra)
			return i;
	return -1;
}

/* The stack unwound for this key (ips[0..n)), walked and noted, then
 * copied into the arena at its size; NULL when it cannot be learnt. */
static const struct memo_stack *learn(struct memo *m, const struct vt_stack_memo_key *k,
                                      void *const *ips, int n, int want)
{
	int first = caller_index(ips, n, k->ra); /* ips[first]: the wrapper's caller */
	if (first < 0 || n > VT_MEMO_MAX_FRAMES)
		return NULL;
	struct walk w = {.m = m, .k = k};
	if (!walk_and_note(&w, ips, n, want, first))
		return NULL;
	size_t ips_bytes = (size_t)n * sizeof(uintptr_t);
	size_t checks_bytes = w.nchecks * sizeof(struct check);
	struct memo_stack *out = vt_arena_alloc(&m->arena, sizeof *out + ips_bytes + checks_bytes);
	if (!out) { /* full: start over, forgetting every learnt stack */
		memset(m->sets, 0, sizeof m->sets);
		vt_arena_release(&m->arena);
		out = vt_arena_alloc(&m->arena, sizeof *out + ips_bytes + checks_bytes);
		if (!out)
			return NULL;
	}
	out->fp = k->fp;
	out->need_fp = w.need_fp;
	out->nips = (uint16_t)n;
	out->nchecks = w.nchecks;
	memcpy(out->ips, ips, ips_bytes);
	memcpy(out->ips + n, m->scratch_checks, checks_bytes); /* stack_checks(out) */
	return out;
}

/* A way to take in this set: an empty one, else one only seen, else the
 * next in turn; never `keep`. */
static struct way *victim(struct memo *m, struct way *set, const struct way *keep)
{
	for (unsigned i = 0; i < MEMO_WAYS; i++)
		if (set[i].state == EMPTY)
			return &set[i];
	for (unsigned i = 0; i < MEMO_WAYS; i++)
		if (set[i].state == SEEN && &set[i] != keep)
			return &set[i];
	unsigned s = (unsigned)(set - m->sets[0]) / MEMO_WAYS;
	struct way *w = &set[m->victim[s]++ % MEMO_WAYS];
	return w == keep ? &set[m->victim[s]++ % MEMO_WAYS] : w;
}

static void learn_into(struct memo *m, struct way *w, const struct vt_stack_memo_key *k,
                       void *const *ips, int n, int want)
{
	const struct memo_stack *st = learn(m, k, ips, n, want);
	if (!st) {
		tls_stats.refused++;
		return;
	}
	/* from here on it counts the misses other stacks of the key make */
	w->misses = 0;
	take_key(w, k, want);
	w->stack = st;
	w->state = READY;
	tls_stats.learnt++;
}

static int power_of_two(uint32_t v)
{
	return v && !(v & (v - 1));
}

/* After a miss. A key seen for the first time is only noted; its second
 * miss learns its stack. A key whose learnt stacks all failed (another
 * caller at the same place) learns the new one into another way, at the
 * 1st, 2nd, 4th, 8th... such miss: two alternating callers are both
 * learnt at once, a key whose stack changes every call costs a walk now
 * and then. */
void vt_stack_memo_learn(const struct vt_stack_memo_key *k, void *const *ips, int n, int want)
{
	if (n <= 0 || want > INT16_MAX || !vt_stack_memo_enabled())
		return;
	tls_stats.misses++;
	struct memo *m = memo_self();
	if (!m)
		return;
	struct way *set = set_of(m, k), *seen = NULL, *ready = NULL;
	for (unsigned i = 0; i < MEMO_WAYS; i++) {
		struct way *w = &set[i];
		if (w->state == EMPTY || !same_key(w, k, want))
			continue;
		if (w->state == SEEN)
			seen = w;
		else if (!ready)
			ready = w;
	}
	if (seen) {
		if (power_of_two(++seen->misses))
			learn_into(m, seen, k, ips, n, want);
		return;
	}
	if (ready) {
		if (power_of_two(++ready->misses))
			learn_into(m, victim(m, set, ready), k, ips, n, want);
		return;
	}
	struct way *w = victim(m, set, NULL);
	take_key(w, k, want);
	w->state = SEEN;
	w->misses = 1;
}

__attribute__((noinline)) int vt_stack_memo_verify(const struct vt_stack_memo_key *k, void **ips,
                                                   int got, int want)
{
	void *fresh[VT_MEMO_MAX_FRAMES + MAX_OWN_FRAMES];
	int room = (int)(sizeof fresh / sizeof *fresh);
	int n = vt_stack_unwind(fresh, want + MAX_OWN_FRAMES < room ? want + MAX_OWN_FRAMES : room);
	int mine = caller_index(ips, got, k->ra), theirs = caller_index(fresh, n, k->ra);
	if (mine < 0 || theirs < 0)
		return got; /* nothing to compare with: keep the memo's */
	/* the fresh unwind asked for as many frames past the caller as the
	 * capture did (want - mine); it may have fewer, where the stack ends */
	int kept = n - theirs < want - mine ? n - theirs : want - mine;
	tls_stats.verified++;
	if (kept == got - mine && !memcmp(ips + mine, fresh + theirs, (size_t)kept * sizeof *ips))
		return got;
	tls_stats.mismatches++;
	memcpy(ips + mine, fresh + theirs, (size_t)kept * sizeof *ips);
	return mine + kept;
}

void vt_stack_memo_stats(struct vt_stack_memo_stats *out)
{
	*out = tls_stats;
}
