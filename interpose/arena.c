/* The per-thread bump allocator (arena.h). */
#define _GNU_SOURCE
#include "arena.h"

#include <sys/mman.h>

#define ARENA_BLOCK (256u << 10)

struct vt_arena_block {
	struct vt_arena_block *next;
	size_t size;
};

void *vt_arena_alloc(struct vt_arena *a, size_t size)
{
	size = (size + 15u) & ~(size_t)15u;
	if ((size_t)(a->end - a->cur) < size) {
		size_t hdr = (sizeof(struct vt_arena_block) + 15u) & ~(size_t)15u;
		size_t want = size + hdr > ARENA_BLOCK ? size + hdr : ARENA_BLOCK;
		want = (want + 4095u) & ~(size_t)4095u;
		if (a->bytes + want > a->cap)
			return NULL;
		void *p =
		    mmap(NULL, want, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (p == MAP_FAILED)
			return NULL;
		struct vt_arena_block *b = p;
		b->next = a->blocks;
		b->size = want;
		a->blocks = b;
		a->bytes += want;
		a->cur = (char *)p + hdr;
		a->end = (char *)p + want;
	}
	void *r = a->cur;
	a->cur += size;
	return r;
}

void vt_arena_release(struct vt_arena *a)
{
	struct vt_arena_block *b = a->blocks;
	while (b) {
		struct vt_arena_block *next = b->next;
		munmap(b, b->size);
		b = next;
	}
	a->blocks = NULL;
	a->cur = a->end = NULL;
	a->bytes = 0;
}
