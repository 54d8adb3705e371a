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

uint32_t vt_stack_capture(unsigned skip);

/* Configured depth (VRAMTRACE_STACK_DEPTH, default 128; 0 = off). */
void vt_stack_set_depth(unsigned depth);
unsigned vt_stack_depth(void);

/* Non-zero while the calling thread is inside vt_stack_capture (the unwinder
 * may call dl_iterate_phdr, malloc, ...): a hook that finds it set must pass
 * straight through to the real function and record nothing. */
int vt_stack_capturing(void);

/* How many times the calling thread has called the unwinder (tests: depth 0
 * must mean no unwinding at all). */
uint64_t vt_stack_unwind_calls(void);

#endif
