/* Buffers made on the device before training, see classify_early.h. */
#include "classify_early.h"

#include <stdlib.h>

#include "nomem.h" /* before <uthash.h>: its out-of-memory exit */
#include <uthash.h>

#include "classify_pools.h"

/* A weight made on the device and never written from the host is
 * initialised there (a JAX or PyTorch model built on the device). A model
 * that does not train is loaded, from the host; one that trains shows
 * gradient twins, unless its step runs in one executable that keeps the
 * gradients inside its temp buffer (XLA with donated parameters). Its
 * optimizer state is then made on the device too, before the steps, one
 * buffer per slot the size of its weight (optax's `init(params)`): each
 * size comes again and again, the weight first. A workspace, a histogram,
 * a cache or data derived on the device (XGBoost's quantised matrix and
 * prediction caches, a library's cached blocks) has sizes of its own. */
struct early_size {
	uint64_t bytes;
	uint32_t count, seen;
	UT_hash_handle hh;
};

static int weighed_elsewhere(const struct ctx *c, int dev)
{
	for (uint32_t i = c->p->alloc_begin; i < c->p->alloc_end; i++) {
		const struct vt_alloc *a = &c->m->allocs[i];
		if (c->f[i - c->p->alloc_begin].device == dev && a->category == VT_CAT_WEIGHTS &&
		    a->reason != R_EARLY_WEIGHTS)
			return 1;
	}
	return 0;
}

/* The early buffers of dev by size; *repeated_bytes: of their bytes, those
 * of sizes made twice or more. */
static struct early_size *early_sizes(const struct ctx *c, int dev, uint64_t *repeated_bytes,
                                      uint64_t *all_bytes)
{
	struct early_size *sizes = NULL, *e, *tmp;
	for (uint32_t i = c->p->alloc_begin; i < c->p->alloc_end; i++) {
		const struct vt_alloc *a = &c->m->allocs[i];
		if (c->f[i - c->p->alloc_begin].device != dev || a->reason != R_EARLY_WEIGHTS)
			continue;
		HASH_FIND(hh, sizes, &a->bytes, sizeof a->bytes, e);
		if (!e) {
			if (!(e = calloc(1, sizeof *e)))
				vt_nomem();
			e->bytes = a->bytes;
			HASH_ADD(hh, sizes, bytes, sizeof e->bytes, e);
		}
		e->count++;
	}
	*repeated_bytes = *all_bytes = 0;
	HASH_ITER(hh, sizes, e, tmp)
	{
		*all_bytes += e->bytes * e->count;
		*repeated_bytes += e->count >= 2 ? e->bytes * e->count : 0;
	}
	return sizes;
}

/* The count most repeated sizes share: buffers per weight (the weight and
 * its slots); ties to the smaller. */
#define MAX_BUFFERS_PER_WEIGHT 8
static uint32_t buffers_per_weight(struct early_size *sizes)
{
	uint32_t votes[MAX_BUFFERS_PER_WEIGHT + 1] = {0}, best = 2;
	struct early_size *e, *tmp;
	HASH_ITER(hh, sizes, e, tmp)
	{
		if (e->count >= 2 && e->count <= MAX_BUFFERS_PER_WEIGHT)
			votes[e->count]++;
	}
	for (uint32_t k = 3; k <= MAX_BUFFERS_PER_WEIGHT; k++)
		if (votes[k] > votes[best])
			best = k;
	return best;
}

/* Every size a multiple of 2 MiB: a caching allocator's segments
 * (classify_pools.c), even where the device does not show all of its
 * shapes. */
static int segment_sizes(struct early_size *sizes)
{
	struct early_size *e, *tmp;
	HASH_ITER(hh, sizes, e, tmp)
	{
		if (e->bytes % VT_CACHING_ROUND)
			return 0;
	}
	return 1;
}

void vt_cls_unproven_weights(struct ctx *c, int dev)
{
	if (weighed_elsewhere(c, dev))
		return;
	uint64_t repeated, all;
	struct early_size *sizes = early_sizes(c, dev, &repeated, &all), *e, *tmp;
	/* most of the bytes in repeated sizes: a model with its state; a
	 * caching allocator's segments (multiples of 2 MiB, every one) repeat
	 * their few sizes whatever they hold */
	int model = all && repeated * 2 > all && !segment_sizes(sizes);
	uint32_t per = model ? buffers_per_weight(sizes) : 0;
	for (uint32_t i = c->p->alloc_begin; i < c->p->alloc_end; i++) {
		struct vt_alloc *a = &c->m->allocs[i];
		struct facts *f = &c->f[i - c->p->alloc_begin];
		if (f->device != dev || a->reason != R_EARLY_WEIGHTS)
			continue;
		HASH_FIND(hh, sizes, &a->bytes, sizeof a->bytes, e);
		if (!model || e->count < 2) {
			set_cat(a, f, VT_CAT_ACTIVATIONS, 40, R_EARLY_WORKSPACE);
			continue;
		}
		/* the first of a size are its weights, one per `per` buffers */
		uint32_t weights = e->count / per > 1 ? e->count / per : 1;
		if (e->seen++ >= weights)
			set_cat(a, f, VT_CAT_OPTIMIZER, 55, R_EARLY_STATE);
	}
	HASH_ITER(hh, sizes, e, tmp)
	{
		HASH_DEL(sizes, e);
		free(e);
	}
}
