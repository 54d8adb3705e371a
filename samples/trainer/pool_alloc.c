/* First-fit sub-allocation with coalescing (see pool_alloc.h). */
#include "pool_alloc.h"

#include <string.h>

void pool_init(struct pool *p, uint64_t size, uint64_t align)
{
	p->n = 1;
	p->align = align ? align : 1;
	p->b[0] = (struct pool_block){0, size, 0};
}

int pool_take(struct pool *p, uint64_t bytes, uint64_t *off)
{
	uint64_t want = (bytes + p->align - 1) / p->align * p->align;
	for (int i = 0; i < p->n; i++) {
		struct pool_block *b = &p->b[i];
		if (b->used || b->size < want)
			continue;
		if (b->size > want) {
			if (p->n == POOL_MAX_BLOCKS)
				return -1;
			memmove(&p->b[i + 2], &p->b[i + 1], (size_t)(p->n - i - 1) * sizeof *b);
			p->b[i + 1] = (struct pool_block){b->off + want, b->size - want, 0};
			p->n++;
			b->size = want;
		}
		b->used = 1;
		*off = b->off;
		return 0;
	}
	return -1;
}

static void remove_block(struct pool *p, int i)
{
	memmove(&p->b[i], &p->b[i + 1], (size_t)(p->n - i - 1) * sizeof p->b[0]);
	p->n--;
}

void pool_give(struct pool *p, uint64_t off)
{
	for (int i = 0; i < p->n; i++) {
		if (p->b[i].off != off || !p->b[i].used)
			continue;
		p->b[i].used = 0;
		if (i + 1 < p->n && !p->b[i + 1].used) {
			p->b[i].size += p->b[i + 1].size;
			remove_block(p, i + 1);
		}
		if (i > 0 && !p->b[i - 1].used) {
			p->b[i - 1].size += p->b[i].size;
			remove_block(p, i);
		}
		return;
	}
}
