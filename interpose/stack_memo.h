/* A per-thread memo of the stacks recent calls came from: a call made again
 * from the same place gets its frames without unwinding.
 *
 * Why: unwinding is most of what recording an allocation with its stack
 * costs (24 frames: unw_backtrace ~155 ns on the reference VM, the rest of
 * an allocate+free pair ~150 ns), and a training loop calls the allocator
 * from the same places, at the same stack depth, step after step.
 *
 * Why a memo can be trusted: libunwind finds frame i+1 from frame i's
 * instruction pointer (which selects the unwind rule), its stack pointer and
 * its frame pointer (rbp), reading the return address and the saved frame
 * pointers from stack slots. When a stack is learnt, a step-by-step walk
 * notes every slot those reads went to and the word it found, in the order
 * the unwinder read them. A later call from the same wrapper (its
 * instruction pointer), return address and stack pointer whose slots hold
 * the same words (and the same live rbp, where an outer frame still uses
 * it) unwinds to the same frames, so the memo's frames are returned. The
 * check reads the slots innermost first and stops at the first difference:
 * it never reads a word the unwinder would not have read.
 *
 * Not learnt (the call simply unwinds): signal frames; slots outside
 * [sp, sp + 64 MiB); deeper than VT_MEMO_MAX_FRAMES; a walk that disagrees
 * with unw_backtrace; any other architecture than x86-64.
 * Assumed, as libunwind's own fast path assumes: a frame's CFA follows from
 * rsp or rbp (what gcc and clang emit at call sites). A CFA that reads
 * memory (gcc's DRAP frames, for over-aligned locals) is checked through
 * the frames around it only; README's limitations say so.
 *
 * Learnt on a key's second miss (a stack seen once costs nothing more than
 * a slot write); a key whose stack keeps changing is relearnt with doubling
 * back-off. VRAMTRACE_STACK_MEMO=0 turns the memo off; =verify checks every
 * hit against a fresh unwind (the log header counts what differed).
 * No malloc, no lock, no stdio: each thread's memo is its own mmap. */
#ifndef VT_STACK_MEMO_H
#define VT_STACK_MEMO_H

#include <stdint.h>

/* Frames a memo holds: the default depth (128) and the wrapper's slack. */
#define VT_MEMO_MAX_FRAMES 136

/* Where a capture starts: the wrapper's own instruction pointer (which
 * wrapper), its return address, stack pointer and frame pointer; and the
 * generation of the loaded modules (modules.h), so that nothing learnt
 * before a dlclose (code unmapped, other code perhaps mapped at the same
 * addresses) or a dlopen is used after it. */
struct vt_stack_memo_key {
	uintptr_t ip, ra, sp, fp;
	uint32_t gen;
};

/* Read the key in the wrapper's own frame (inlined there). rbp is read
 * before rsp: if the compiler gives `sp` the register rbp (free without a
 * frame pointer), rbp has been read already. */
#if defined(__x86_64__)
#define VT_STACK_MEMO_KEY(k, generation)                                                           \
	do {                                                                                       \
		__asm__ volatile("lea 0(%%rip), %0\n\tmov %%rbp, %1\n\tmov %%rsp, %2"              \
		                 : "=&r"((k).ip), "=&r"((k).fp), "=r"((k).sp));                    \
		(k).ra = (uintptr_t)__builtin_return_address(0);                                   \
		(k).gen = (generation);                                                            \
	} while (0)
#else
#define VT_STACK_MEMO_KEY(k, generation)                                                           \
	((k).ip = (k).ra = (k).sp = (k).fp = 0, (k).gen = (generation))
#endif

/* The memo's frames for this key copied into ips (what unw_backtrace gave
 * when it was learnt, at most `want` asked then and now), or -1: unwind. */
int vt_stack_memo_find(const struct vt_stack_memo_key *k, void **ips, int want);

/* After a miss: ips[0..n) are the frames unw_backtrace gave for this key
 * (asked for `want`). Learns them on the key's second miss. */
void vt_stack_memo_learn(const struct vt_stack_memo_key *k, void *const *ips, int n, int want);

/* VRAMTRACE_STACK_MEMO (read once): on unless a false word (0, off...);
 * "verify": on, and every hit unwound too (vt_stack_memo_verify). */
int vt_stack_memo_enabled(void);
int vt_stack_memo_verifying(void);

/* A hit checked against the unwinder: ips[0..got) came from the memo for
 * this key; unwinds afresh and compares them from the wrapper's caller
 * out. Where they differ (the memo was wrong: a mismatch, counted) ips
 * take the fresh frames. Returns the frame count to use. */
int vt_stack_memo_verify(const struct vt_stack_memo_key *k, void **ips, int got, int want);

/* The calling thread's counters (tests, bench, the log header's stack_*). */
struct vt_stack_memo_stats {
	uint64_t hits, misses, learnt, refused, verified, mismatches;
};
void vt_stack_memo_stats(struct vt_stack_memo_stats *out);

#endif
