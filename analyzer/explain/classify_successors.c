/* Tensors that replaced others (see classify_successors.h). */
#include "classify_successors.h"

#include <stdlib.h>

#include "nomem.h"

/* The older tensor is freed within this many events of the new one's
 * allocation: `torch.cat` makes the new table, then the old one's last
 * reference goes (with the fresh rows' temporary before it). */
#define SUCCESSOR_WINDOW 8
/* A replacement grows by at most its size again: appended rows, not an
 * unrelated tensor that happens to follow a free. */
#define SUCCESSOR_MAX_GROWTH 2

struct freed_at {
	uint64_t seq_free;
	uint32_t index;
};

static int by_seq_free(const void *x, const void *y)
{
	const struct freed_at *a = x, *b = y;
	return a->seq_free < b->seq_free ? -1 : a->seq_free > b->seq_free;
}

/* The long-lived, freed tensors of dev, by when they were freed. */
static struct freed_at *freed_long_lived(const struct ctx *c, int dev, uint32_t *n)
{
	struct freed_at *v = NULL;
	uint32_t cap = 0;
	*n = 0;
	for (uint32_t i = c->p->alloc_begin; i < c->p->alloc_end; i++) {
		const struct vt_alloc *a = &c->m->allocs[i];
		const struct facts *f = &c->f[i - c->p->alloc_begin];
		if (f->device != dev || !f->charged || !f->freed || f->recurring)
			continue;
		if (*n == cap) {
			cap = cap ? 2 * cap : 64;
			v = realloc(v, cap * sizeof *v);
			if (!v)
				vt_nomem();
		}
		v[(*n)++] = (struct freed_at){a->seq_free, i};
	}
	if (*n)
		qsort(v, *n, sizeof *v, by_seq_free);
	return v;
}

static int inheritable(int cat)
{
	return cat == VT_CAT_WEIGHTS || cat == VT_CAT_OPTIMIZER;
}

/* The tensor b replaced: freed within the window after b was made, made
 * before it, smaller by at most half of b, a weight or a slot;
 * VT_NO_INDEX when none. */
static uint32_t replaced(const struct ctx *c, const struct freed_at *v, uint32_t n,
                         const struct vt_alloc *b)
{
	uint32_t lo = 0, hi = n;
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		if (v[mid].seq_free < b->seq_alloc)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (uint32_t k = lo; k < n && v[k].seq_free - b->seq_alloc <= SUCCESSOR_WINDOW; k++) {
		const struct vt_alloc *a = &c->m->allocs[v[k].index];
		if (a->t_alloc < b->t_alloc && a->bytes < b->bytes &&
		    b->bytes <= SUCCESSOR_MAX_GROWTH * a->bytes && inheritable(a->category))
			return v[k].index;
	}
	return VT_NO_INDEX;
}

void vt_cls_successors(struct ctx *c, int dev)
{
	uint32_t n;
	struct freed_at *v = freed_long_lived(c, dev, &n);
	for (uint32_t i = c->p->alloc_begin; n && i < c->p->alloc_end; i++) {
		struct vt_alloc *b = &c->m->allocs[i];
		struct facts *f = &c->f[i - c->p->alloc_begin];
		if (f->device != dev || b->reason != R_LONG_UNKNOWN)
			continue;
		/* in time order: a tensor that replaced a replacement reads the
		 * verdict just given to it */
		uint32_t a = replaced(c, v, n, b);
		if (a != VT_NO_INDEX)
			set_cat(b, f, c->m->allocs[a].category, 55, R_REPLACES);
	}
	free(v);
}
