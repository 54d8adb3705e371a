/* Stack capture for events (libunwind, deduplicated per thread).
 *
 * Called by the hook wrappers on the calling thread BEFORE any shared state is
 * touched. Returns the id of the calling thread's current stack, writing a
 * VT_REC_STACK record into the thread's chunk the first time this thread sees
 * that stack; 0 when stacks are off (depth 0) or capture failed.
 * `skip` = frames of the shim itself to drop from the innermost end, counted
 * from the function that calls vt_stack_capture: 0 keeps that caller, 1 drops
 * it, 2 drops it and its caller. The hook wrappers call it directly, so the
 * unwinder walks only vt_stack_capture's frame and the wrapper's.
 * Any further innermost frames inside libvramtrace.so are dropped too.
 * No malloc, no lock, no stdio. */
#ifndef VT_STACK_CAPTURE_H
#define VT_STACK_CAPTURE_H

#include <stdint.h>

#include "modules.h"  /* vt_modules_generation */
#include "pyframes.h" /* VT_PY_MAX_FRAMES */
#include "stack_memo.h"
#include "stack_unwind.h"
#include "vramtrace/format.h" /* VT_MAX_FRAMES */

uint32_t vt_stack_capture(unsigned skip);

/* VRAMTRACE_FREE_STACKS=1: frees, unmaps and address releases are unwound
 * too. Off by default: no analysis reads a free's stack (it says who let
 * go, not who holds), and unwinding it doubled the cost of an
 * allocate+free pair. */
int vt_stack_free_stacks(void);

/* Configured depth (VRAMTRACE_STACK_DEPTH, default 128; 0 = off). */
void vt_stack_set_depth(unsigned depth);
unsigned vt_stack_depth(void);

/* Non-zero while the calling thread is inside vt_stack_capture (the unwinder
 * may call dl_iterate_phdr, malloc, ...): a hook that finds it set must pass
 * straight through to the real function and record nothing. */
int vt_stack_capturing(void);

/* How many captures the calling thread has started, unwound or found in
 * its memo (tests: depth 0 must mean no unwinding at all). */
uint64_t vt_stack_unwind_calls(void);

/* ---- capture from the calling function's own frame -----------------------
 * vt_stack_capture() is a function: the unwinder walks its frame too. The
 * hook wrappers unwind in their own frame instead (vt_stack_capture_here,
 * inlined), one frame (~8 ns) less per call, then hand the frames over.
 * Same result: the stack from the wrapper's caller out, shim frames dropped
 * (only when the shim is a shared object: the wrappers always are). */
#define VT_STACK_DROP_SLACK 16u
/* depth word, unwound frames, then the Python frames' words */
#define VT_STACK_BUF_WORDS (1u + VT_MAX_FRAMES + VT_STACK_DROP_SLACK + 2u * VT_PY_MAX_FRAMES)

/* Frames to unwind, 0 = do not (off, or already capturing). Non-zero raises
 * the capturing flag; vt_stack_intern lowers it. */
unsigned vt_stack_enter(void);
/* The id of the frames unwound into buf + 1 (got of them; got <= 0: none). */
uint32_t vt_stack_intern(uint64_t *buf, int got);

/* VRAMTRACE_STACK_MEMO=verify: a memo hit checked against the unwinder
 * (vt_stack_memo_verify); a mismatch reaches the log header at once. */
int vt_stack_verify_memo(const struct vt_stack_memo_key *k, void **ips, int got, int want);

/* The calling thread's stack counts not yet in the log header (they go in
 * batches): at its exit, and the exiting process's thread at the end. */
void vt_stack_counts_flush(void);

/* A call made again from where a recent one came from takes its frames from
 * the thread's memo (stack_memo.h) instead of unwinding. */
static inline __attribute__((always_inline)) uint32_t vt_stack_capture_here(void)
{
	unsigned want = vt_stack_enter();
	if (!want)
		return 0;
	uint64_t buf[VT_STACK_BUF_WORDS];
	void **ips = (void **)(buf + 1);
	struct vt_stack_memo_key key;
	VT_STACK_MEMO_KEY(key, vt_modules_generation());
	int got = vt_stack_memo_find(&key, ips, (int)want);
	if (got < 0) {
		got = vt_stack_unwind(ips, (int)want);
		vt_stack_memo_learn(&key, ips, got, (int)want);
	} else if (__builtin_expect(vt_stack_memo_verifying(), 0)) {
		got = vt_stack_verify_memo(&key, ips, got, (int)want);
	}
	return vt_stack_intern(buf, got);
}

#endif
