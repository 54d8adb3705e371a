/* A first-fit sub-allocator over one region: what a framework's caching or
 * BFC allocator does inside the memory it took from the driver. Offsets
 * only; the region itself is the caller's. */
#ifndef TRAINER_POOL_ALLOC_H
#define TRAINER_POOL_ALLOC_H

#include <stdint.h>

#define POOL_MAX_BLOCKS 4096

struct pool_block {
	uint64_t off, size;
	int used;
};

struct pool {
	struct pool_block b[POOL_MAX_BLOCKS]; /* sorted by offset, covering the region */
	int n;
	uint64_t align;
};

void pool_init(struct pool *p, uint64_t size, uint64_t align);
int pool_take(struct pool *p, uint64_t bytes, uint64_t *off);  /* 0 or -1 */
void pool_give(struct pool *p, uint64_t off);

#endif
