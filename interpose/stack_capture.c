/* Stack capture for events: libunwind on the calling thread, deduplicated in
 * the thread's own table, one VT_REC_STACK per new stack (stack_capture.h).
 *
 * Order of work, and why:
 *   1. unwind first, before any shared state is touched (a hook must not
 *      perturb what it measures, and the unwinder reads only this stack);
 *   2. look the frame list up in this thread's table: no lock, no malloc;
 *   3. only for a new stack: make sure the module list is in the log, take
 *      an id from the process-wide atomic counter and write the record in
 *      this thread's chunk, before the event that will carry the id.
 * A thread-local flag is raised for the whole capture: anything the unwinder
 * does that re-enters the shim (dl_iterate_phdr, malloc, dlopen) passes
 * straight through (vt_stack_capturing()).
 */
#define _GNU_SOURCE
#define UNW_LOCAL_ONLY
#include "stack_capture.h"

#include <dlfcn.h>
#include <libunwind.h>
#include <link.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "vramtrace/env_flag.h"
#include "log_writer.h"
#include "modules.h"
#include "pyframes.h"
#include "stack_memo.h"
#include "stack_table.h"
#include "vramtrace/format.h"

#define DEFAULT_DEPTH 128u
#define DEPTH_UNSET (~0u)
/* Frames above the hook we may have to drop: unw_backtrace's own, ours, and
 * the shim's wrappers (found by address when the shim is a shared object). */
#define DROP_SLACK VT_STACK_DROP_SLACK

static _Atomic unsigned cfg_depth = DEPTH_UNSET;
/* How many frames unw_backtrace and we put above the hook: learned from the
 * first capture (the index of the hook's return address), so later unwinds
 * walk only the frames they keep (every extra frame costs ~7 ns). */
static _Atomic unsigned own_frames;
static _Atomic uint32_t last_stack_id;
static pthread_once_t capture_once = PTHREAD_ONCE_INIT;
/* [shim_lo, shim_hi): the shim's own mapped range, when it is a shared
 * object (0, 0 when these sources are linked into a program: tests). */
static uintptr_t shim_lo, shim_hi;

/* initial-exec: a plain %fs-relative access, not a __tls_get_addr call */
static __thread int tls_capturing __attribute__((tls_model("initial-exec")));
static __thread uint64_t tls_unwind_calls __attribute__((tls_model("initial-exec")));

/* ---- configuration ------------------------------------------------------ */

static unsigned depth_from_env(void)
{
	const char *s = getenv("VRAMTRACE_STACK_DEPTH");
	if (!s || !*s)
		return DEFAULT_DEPTH;
	char *end;
	unsigned long v = strtoul(s, &end, 10);
	if (*end || s[0] == '-')
		return DEFAULT_DEPTH; /* the launcher validates; the shim never fails */
	return v > VT_MAX_FRAMES ? VT_MAX_FRAMES : (unsigned)v;
}

void vt_stack_set_depth(unsigned depth)
{
	atomic_store_explicit(&cfg_depth, depth > VT_MAX_FRAMES ? VT_MAX_FRAMES : depth,
	                      memory_order_relaxed);
}

unsigned vt_stack_depth(void)
{
	unsigned d = atomic_load_explicit(&cfg_depth, memory_order_relaxed);
	if (__builtin_expect(d != DEPTH_UNSET, 1))
		return d;
	unsigned expected = DEPTH_UNSET;
	d = depth_from_env();
	/* lose gracefully to a concurrent vt_stack_set_depth() */
	if (!atomic_compare_exchange_strong(&cfg_depth, &expected, d))
		d = expected;
	return d;
}

int vt_stack_free_stacks(void)
{
	static _Atomic int cached = -1;
	int v = atomic_load_explicit(&cached, memory_order_relaxed);
	if (__builtin_expect(v >= 0, 1))
		return v;
	v = vt_env_flag("VRAMTRACE_FREE_STACKS");
	atomic_store_explicit(&cached, v, memory_order_relaxed);
	return v;
}

int vt_stack_capturing(void)
{
	return tls_capturing;
}

uint64_t vt_stack_unwind_calls(void)
{
	return tls_unwind_calls;
}

/* ---- one-time setup ----------------------------------------------------- */

struct find_self {
	uintptr_t addr;
	int index;
};

static int find_self_cb(struct dl_phdr_info *info, size_t size, void *p)
{
	(void)size;
	struct find_self *fs = p;
	uintptr_t lo = UINTPTR_MAX, hi = 0;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type != PT_LOAD)
			continue;
		uintptr_t a = info->dlpi_addr + ph->p_vaddr;
		if (a < lo)
			lo = a;
		if (a + ph->p_memsz > hi)
			hi = a + ph->p_memsz;
	}
	int first = fs->index++ == 0; /* the main program comes first */
	if (fs->addr < lo || fs->addr >= hi)
		return 0;
	if (!first) {
		shim_lo = lo;
		shim_hi = hi;
	}
	return 1;
}

/* ---- counts for the log header (format.h stack_*) ------------------------ */

/* Captures go in every VT_STACK_COUNT_BATCH (relaxed atomic adds on the
 * shared header: once per capture would make threads contend for its line). */
#define VT_STACK_COUNT_BATCH 64u

/* what this thread has added to the header so far */
static __thread struct {
	uint64_t captures, hits, verified, mismatches;
} t_published __attribute__((tls_model("initial-exec")));

/* The thread's counts now, as added so far (s: its memo's counters). */
static void mark_published(const struct vt_stack_memo_stats *s)
{
	t_published.captures = tls_unwind_calls;
	t_published.hits = s->hits;
	t_published.verified = s->verified;
	t_published.mismatches = s->mismatches;
}

void vt_stack_counts_flush(void)
{
	struct vt_stack_memo_stats s;
	vt_stack_memo_stats(&s);
	if (tls_unwind_calls == t_published.captures && s.mismatches == t_published.mismatches)
		return;
	vt_log_add_stack_counts(tls_unwind_calls - t_published.captures, s.hits - t_published.hits,
	                        s.verified - t_published.verified,
	                        s.mismatches - t_published.mismatches);
	mark_published(&s);
}

int vt_stack_verify_memo(const struct vt_stack_memo_key *k, void **ips, int got, int want)
{
	got = vt_stack_memo_verify(k, ips, got, want);
	struct vt_stack_memo_stats s;
	vt_stack_memo_stats(&s);
	if (s.mismatches != t_published.mismatches) /* a mismatch goes in at once */
		vt_stack_counts_flush();
	return got;
}

static void child_after_fork(void)
{
	vt_stack_table_invalidate_all();
	/* the parent's counts are in the parent's log */
	struct vt_stack_memo_stats s;
	vt_stack_memo_stats(&s);
	mark_published(&s);
}

static void capture_init(void)
{
	unw_set_caching_policy(unw_local_addr_space, UNW_CACHE_PER_THREAD);
	struct find_self fs = {(uintptr_t)&vt_stack_capture, 0};
	dl_iterate_phdr(find_self_cb, &fs);
	pthread_atfork(NULL, NULL, child_after_fork);
}

/* ---- capture ------------------------------------------------------------ */

static int unwind(void **ips, int max)
{
	return vt_stack_unwind(ips, max);
}

/* Index of the first frame to keep in ips[0..n): the caller of
 * vt_stack_capture is found by its return address, which does not depend on
 * how many frames libunwind and we ourselves add; then `skip` more. */
static unsigned first_kept_frame(void *const *ips, unsigned n, const void *hook_ra, unsigned skip)
{
	unsigned start = 2; /* unw_backtrace's frame and ours, if RA not found */
	for (unsigned i = 0; i < n && i < DROP_SLACK; i++) {
		if (ips[i] == hook_ra) {
			start = i;
			atomic_store_explicit(&own_frames, i, memory_order_relaxed);
			break;
		}
	}
	start += skip;
	while (start < n && (uintptr_t)ips[start] >= shim_lo && (uintptr_t)ips[start] < shim_hi)
		start++;
	return start;
}

static uint32_t write_stack_record(const uint64_t *key, unsigned depth, unsigned py_depth,
                                   uint32_t hash, uint32_t id)
{
	unsigned words = depth + 2 * py_depth; /* native ips, then Python words */
	uint32_t size = (uint32_t)(sizeof(struct vt_stack_rec) + words * sizeof(uint64_t));
	struct vt_stack_rec *rec = vt_log_reserve(size);
	if (!rec)
		return 0;
	rec->stack_id = id;
	rec->depth = (uint16_t)depth;
	rec->py_depth = (uint16_t)py_depth;
	rec->hash = hash;
	memcpy(rec->frames, key + 1, words * sizeof(uint64_t));
	/* return addresses minus one: the call instruction, not the next line.
	 * Done here, once per new stack: the table is keyed by the raw return
	 * addresses, so a stack seen before costs no pass over its frames. */
	for (unsigned i = 0; i < depth; i++)
		rec->frames[i] -= 1;
	vt_log_commit(rec, VT_REC_STACK, size);
	return id;
}

static uint32_t new_stack_id(void)
{
	uint32_t id;
	do /* 0 means "no stack": skip it if the counter ever wraps */
		id = atomic_fetch_add_explicit(&last_stack_id, 1, memory_order_relaxed) + 1;
	while (id == 0);
	return id;
}

/* From unwound frames (ips = buf + 1, n of them, keep from `start`) to a
 * stack id: dedupe in this thread's table, record a new stack. */
static inline __attribute__((always_inline)) uint32_t intern(uint64_t *buf, unsigned n,
                                                             unsigned start, unsigned depth)
{
	if (start >= n)
		return 0;
	unsigned kept = n - start < depth ? n - start : depth;
	/* the key (depth word, then the kept frames) is buf[start..]: no frame
	 * moves, the word before the first kept frame (buf[0] or a dropped
	 * frame) becomes the depth */
	uint64_t *key = buf + start; /* raw return addresses: see write_stack_record */
	/* Python frames (pyframes.h): 2 words each after the native
	 * frames, bound to their eval-loop native frame; part of the key.
	 * They overwrite unwound frames past `kept` (not kept) and the room
	 * VT_STACK_BUF_WORDS leaves for them. */
	unsigned py = vt_py_capture(key + 1 + kept, VT_PY_MAX_FRAMES);
	vt_py_bind_native(key + 1 + kept, py, key + 1, kept);
	key[0] = kept | (uint64_t)py << 16;

	struct vt_stack_table *t = vt_stack_table_self();
	if (!t)
		return 0;
	size_t nwords = 1 + kept + 2 * (size_t)py;
	uint32_t id = vt_stack_table_find_recent(t, key, nwords);
	if (id)
		return id;
	uint32_t hash = vt_stack_hash(key, nwords);
	id = vt_stack_table_find(t, key, nwords, hash);
	if (id)
		return id;

	/* nothing is recorded (yet): write nothing, remember nothing (a fork
	 * child's log opens here, so its first new stack is not lost) */
	if (!vt_log_active())
		return 0;
	vt_modules_ensure(); /* module records precede the stacks using them */
	id = write_stack_record(key, kept, py, hash, new_stack_id());
	if (id)
		vt_stack_table_insert(t, key, nwords, hash, id);
	return id;
}

/* Inlined into vt_stack_capture: one frame less for every unwind to walk. */
static inline __attribute__((always_inline)) uint32_t capture(unsigned depth, unsigned skip,
                                                              const void *hook_ra)
{
	uint64_t buf[VT_STACK_BUF_WORDS];
	void **ips = (void **)(buf + 1);
	/* our own frames + the hook's + a little room for more shim frames */
	unsigned own = atomic_load_explicit(&own_frames, memory_order_relaxed);
	unsigned want = depth + skip + (own ? own + 4 : DROP_SLACK);
	if (want > VT_MAX_FRAMES + DROP_SLACK)
		want = VT_MAX_FRAMES + DROP_SLACK;

	pthread_once(&capture_once, capture_init);
	tls_unwind_calls++;
	int got = unwind(ips, (int)want);
	if (got <= 0)
		return 0;
	unsigned n = (unsigned)got;
	return intern(buf, n, first_kept_frame(ips, n, hook_ra, skip), depth);
}

/* ---- the wrappers' own capture (vt_stack_capture_here) ------------------- */

unsigned vt_stack_enter(void)
{
	unsigned depth = vt_stack_depth();
	if (depth == 0 || tls_capturing)
		return 0; /* off: no unwinding at all */
	pthread_once(&capture_once, capture_init);
	tls_capturing = 1;
	tls_unwind_calls++;
	/* the wrapper's frame, then the job's; a little room for more */
	unsigned want = depth + 1 + 4;
	return want > VT_MAX_FRAMES + DROP_SLACK ? VT_MAX_FRAMES + DROP_SLACK : want;
}

uint32_t vt_stack_intern(uint64_t *buf, int got)
{
	uint32_t id = 0;
	if (got > 0) {
		void *const *ips = (void *const *)(buf + 1);
		unsigned n = (unsigned)got, start = 0;
		/* the innermost frames are the shim's (the wrapper) */
		while (start < n && (uintptr_t)ips[start] >= shim_lo &&
		       (uintptr_t)ips[start] < shim_hi)
			start++;
		id = intern(buf, n, start, vt_stack_depth());
	}
	if (tls_unwind_calls - t_published.captures >= VT_STACK_COUNT_BATCH)
		vt_stack_counts_flush();
	tls_capturing = 0;
	return id;
}

uint32_t vt_stack_capture(unsigned skip)
{
	unsigned depth = vt_stack_depth();
	if (depth == 0 || tls_capturing)
		return 0; /* off: no unwinding at all */
	const void *hook_ra = __builtin_extract_return_addr(__builtin_return_address(0));
	tls_capturing = 1;
	uint32_t id = capture(depth, skip, hook_ra);
	tls_capturing = 0;
	return id;
}
