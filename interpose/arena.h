/* A thread's own bump allocator: mmap'd blocks, freed all at once.
 *
 * For the shim's per-thread tables (the stack dedupe table, the stack
 * memo): a hook may run where malloc must not be called (inside malloc,
 * in a signal handler), and a thread's tables are dropped whole (at fork,
 * at their size cap, at thread exit), never entry by entry. */
#ifndef VT_ARENA_H
#define VT_ARENA_H

#include <stddef.h>

struct vt_arena_block;

struct vt_arena {
	char *cur, *end;
	struct vt_arena_block *blocks;
	size_t bytes; /* mapped so far */
	size_t cap;   /* never map more than this */
};

/* 16-byte aligned, zeroed the first time a page is used; NULL when the cap
 * is reached or mmap fails. */
void *vt_arena_alloc(struct vt_arena *a, size_t size);

/* Unmap every block; the arena is empty again (its cap kept). */
void vt_arena_release(struct vt_arena *a);

#endif
