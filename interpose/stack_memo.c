/* The per-thread stack memo (stack_memo.h): learnt by a step-by-step walk
 * that notes the slots the unwinder read, used while those slots hold the
 * same words. */
#define _GNU_SOURCE
#define UNW_LOCAL_ONLY
#include "stack_memo.h"

#include <libunwind.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/mman.h>

#include "vramtrace/env_flag.h"

#define MEMO_SLOTS 32u
/* a return-address slot and a saved rbp per frame, at most */
#define MAX_CHECKS (2 * VT_MEMO_MAX_FRAMES)
/* frames from the walk's start (this file's) to the wrapper's caller */
#define MAX_OWN_FRAMES 8
/* a slot further above the wrapper's stack pointer than this is not on
 * the thread's stack as we know it (an alternate signal stack, a corrupt
 * frame): not learnt */
#define STACK_SPAN ((uintptr_t)64 << 20)

enum state { EMPTY, SEEN, READY };

struct check {
	uintptr_t addr, val;
};

struct memo_entry {
	struct vt_stack_memo_key key;
	uint8_t state;   /* enum state */
	uint8_t need_fp; /* an outer frame starts from the wrapper's live rbp */
	uint16_t nips, nchecks;
	int16_t want;
	uint32_t misses; /* at this key since it was taken: learn at powers of two */
	uint32_t hits;   /* since learnt */
	uintptr_t ips[VT_MEMO_MAX_FRAMES];
	struct check checks[MAX_CHECKS]; /* in the order the unwinder reads them */
};

struct memo {
	struct memo_entry e[MEMO_SLOTS];
};

/* initial-exec: read on every capture, without a __tls_get_addr call */
static __thread struct memo *tls_memo __attribute__((tls_model("initial-exec")));
static __thread struct vt_stack_memo_stats tls_stats __attribute__((tls_model("initial-exec")));

static pthread_once_t once = PTHREAD_ONCE_INIT;
static pthread_key_t exit_key;
static int exit_key_ok;

static void memo_at_thread_exit(void *p)
{
	munmap(p, sizeof(struct memo));
	tls_memo = NULL;
}

static void make_exit_key(void)
{
	exit_key_ok = pthread_key_create(&exit_key, memo_at_thread_exit) == 0;
}

int vt_stack_memo_enabled(void)
{
#if defined(__x86_64__)
	static _Atomic int cached = -1;
	int v = atomic_load_explicit(&cached, memory_order_relaxed);
	if (__builtin_expect(v >= 0, 1))
		return v;
	v = !vt_env_off("VRAMTRACE_STACK_MEMO");
	atomic_store_explicit(&cached, v, memory_order_relaxed);
	return v;
#else
	return 0; /* the walk's register names are x86-64's */
#endif
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
	tls_memo = p; /* zero pages: every entry EMPTY */
	return tls_memo;
}

static struct memo_entry *slot_of(struct memo *m, const struct vt_stack_memo_key *k)
{
	uint64_t h = (k->sp ^ k->ra * 0x9e3779b97f4a7c15ull ^ k->ip) * 0xff51afd7ed558ccdull;
	return &m->e[h >> 59]; /* 32 slots */
}

static int same_key(const struct memo_entry *e, const struct vt_stack_memo_key *k, int want)
{
	return e->key.sp == k->sp && e->key.ra == k->ra && e->key.ip == k->ip && e->want == want;
}

/* The hot path: one slot, then the words the unwinder would read. */
int vt_stack_memo_find(const struct vt_stack_memo_key *k, void **ips, int want)
{
	struct memo *m = tls_memo;
	if (!m)
		return -1;
	struct memo_entry *e = slot_of(m, k);
	if (e->state != READY || !same_key(e, k, want) || (e->need_fp && e->key.fp != k->fp))
		return -1;
	/* innermost first, stopping at the first difference: each slot is
	 * where the unwinder would read next, given the ones before matched */
	for (unsigned i = 0; i < e->nchecks; i++)
		if (*(const uintptr_t *)e->checks[i].addr != e->checks[i].val)
			return -1;
	memcpy(ips, e->ips, e->nips * sizeof *ips);
	e->hits++;
	tls_stats.hits++;
	return e->nips;
}

/* ---- learning: a step-by-step walk that notes what it read --------------- */

struct walk {
	struct memo_entry *e;
	const struct vt_stack_memo_key *k;
	uintptr_t uc_lo, uc_hi; /* the walk's own register copy */
	uintptr_t last_fp_slot;
};

static int on_stack(const struct walk *w, uintptr_t addr)
{
	return addr >= w->k->sp && addr - w->k->sp < STACK_SPAN && !(addr & 7u);
}

static int add_check(struct walk *w, uintptr_t addr, uintptr_t expect)
{
	struct memo_entry *e = w->e;
	if (!on_stack(w, addr) || e->nchecks == MAX_CHECKS || *(const uintptr_t *)addr != expect)
		return 0;
	e->checks[e->nchecks].addr = addr;
	e->checks[e->nchecks].val = expect;
	e->nchecks++;
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
	w->e->need_fp = 1;
	return 1;
}

/* Walk from here to the wrapper's caller, then along ips[first..n),
 * noting each frame's slots; 1 when the walk saw exactly those frames
 * (and ended where unw_backtrace ended, if it ended before `want`). */
static __attribute__((noinline)) int walk_and_note(struct memo_entry *e,
                                                   const struct vt_stack_memo_key *k,
                                                   void *const *ips, int n, int want, int first)
{
	unw_context_t uc;
	unw_cursor_t cur;
	if (unw_getcontext(&uc) < 0 || unw_init_local(&cur, &uc) < 0)
		return 0;
	struct walk w = {e, k, (uintptr_t)&uc, (uintptr_t)&uc + sizeof uc, 0};
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
		    unw_is_signal_frame(&cur) > 0 || !note_return_slot(&w, &cur, ip) ||
		    !read_frame_pointer(&cur, &fp))
			return 0;
		if (i + 1 == n) /* capped at want, or the stack ended here too */
			return n == want || unw_step(&cur) <= 0;
		if (unw_step(&cur) <= 0 || unw_get_reg(&cur, UNW_REG_SP, &cfa) < 0 ||
		    !note_frame_pointer(&w, &fp, cfa))
			return 0;
	}
}

static int learn(struct memo_entry *e, const struct vt_stack_memo_key *k, void *const *ips, int n,
                 int want)
{
	int first = -1; /* ips[first]: the wrapper's caller */
	for (int i = 0; i < n && i < MAX_OWN_FRAMES; i++)
		if ((uintptr_t)ips[i] == k->ra) {
			first = i;
			break;
		}
	if (first < 0 || n > VT_MEMO_MAX_FRAMES)
		return 0;
	e->state = SEEN; /* not usable while half written */
	e->nchecks = 0;
	e->need_fp = 0;
	if (!walk_and_note(e, k, ips, n, want, first))
		return 0;
	memcpy(e->ips, ips, (size_t)n * sizeof *ips);
	e->key.fp = k->fp;
	e->nips = (uint16_t)n;
	e->hits = 0;
	e->state = READY;
	return 1;
}

/* A memo that served many calls and then missed: its stack changed for
 * good, relearn at once; otherwise at the key's 2nd, 4th, 8th... miss, so
 * a key whose stack alternates costs a walk only now and then. */
#define SERVED_WELL 64u

void vt_stack_memo_learn(const struct vt_stack_memo_key *k, void *const *ips, int n, int want)
{
	if (n <= 0 || want > INT16_MAX || !vt_stack_memo_enabled())
		return;
	tls_stats.misses++;
	struct memo *m = memo_self();
	if (!m)
		return;
	struct memo_entry *e = slot_of(m, k);
	if (e->state == EMPTY || !same_key(e, k, want)) {
		e->key = *k;
		e->want = (int16_t)want;
		e->state = SEEN;
		e->misses = 1;
		e->hits = 0;
		return;
	}
	e->misses++;
	int now = e->state == READY && e->hits >= SERVED_WELL;
	if (now)
		e->misses = 1;
	else if (e->misses & (e->misses - 1))
		return;
	if (learn(e, k, ips, n, want))
		tls_stats.learnt++;
	else
		tls_stats.refused++;
}

void vt_stack_memo_stats(struct vt_stack_memo_stats *out)
{
	*out = tls_stats;
}
