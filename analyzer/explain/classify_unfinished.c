/* The step the job stopped in, see classify_unfinished.h. */
#include "classify_unfinished.h"

#include <stdlib.h>
#include <string.h>

#include "model_fold.h"

/* Allocations of one (stack, size, device): how many of each category, over
 * the allocations of finished steps. */
struct twin_key {
	struct {
		uint64_t bytes;
		uint32_t stack_id, device;
	} key;
	uint32_t n, by_cat[VT_CAT_COUNT];
	UT_hash_handle hh;
};

/* Made in the last step and still live at the end: the job stopped before
 * that step finished (a kill, an OOM), so the evidence is cut short (a batch
 * buffer allocated but not yet uploaded looks like a gradient of its size).
 * Needs a stack: without one, the twins of a size are not told apart. */
static int unfinished(const struct ctx *c, const struct vt_alloc *a, const struct facts *f)
{
	return c->p->nsteps >= 3 && a->stack_id && a->t_free == VT_T_NEVER &&
	       f->born == (int)c->p->nsteps - 1;
}

static struct twin_key *twin_of(struct twin_key **twins, const struct vt_alloc *a, int add)
{
	struct twin_key probe, *k;
	memset(&probe, 0, sizeof probe);
	probe.key.bytes = a->bytes;
	probe.key.stack_id = a->stack_id;
	probe.key.device = a->device;
	HASH_FIND(hh, *twins, &probe.key, sizeof probe.key, k);
	if (!k && add) {
		k = calloc(1, sizeof *k);
		if (!k)
			vt_nomem();
		k->key = probe.key;
		HASH_ADD(hh, *twins, key, sizeof k->key, k);
	}
	return k;
}

/* The category nine in ten of the twins share, or -1. */
static int twins_category(const struct twin_key *k)
{
	if (!k || k->n < 3)
		return -1;
	for (int cat = 0; cat < VT_CAT_COUNT; cat++)
		if (k->by_cat[cat] * 10 >= k->n * 9)
			return cat;
	return -1;
}

/* A folding model's groups of this process, twins like their records. */
static void twin_groups(const struct ctx *c, struct twin_key **twins)
{
	uint32_t ng;
	const struct vt_fold_group *g = vt_fold_groups(c->m, &ng);
	for (uint32_t i = 0; i < ng; i++) {
		if (g[i].proc != c->proc || !g[i].stack_id)
			continue;
		struct vt_alloc a = {
		    .bytes = g[i].bytes, .stack_id = g[i].stack_id, .device = g[i].device};
		struct twin_key *k = twin_of(twins, &a, 1);
		k->n += (uint32_t)g[i].count;
		k->by_cat[g[i].category] += (uint32_t)g[i].count;
	}
}

/* An allocation of the unfinished step takes the category of its recurring
 * twins from earlier steps: same site (stack), size and device. */
void vt_cls_unfinished_step(struct ctx *c)
{
	struct twin_key *twins = NULL, *k, *tmp;
	int any = 0;
	/* the allocations of the last step come last: look there first, so a
	 * job that finished its steps pays nothing */
	for (uint32_t i = c->p->alloc_end; !any && i-- > c->p->alloc_begin;) {
		const struct facts *f = &c->f[i - c->p->alloc_begin];
		if (c->p->nsteps < 3 || f->born < (int)c->p->nsteps - 1)
			break;
		any = unfinished(c, &c->m->allocs[i], f);
	}
	if (!any)
		return;
	for (uint32_t i = c->p->alloc_begin; i < c->p->alloc_end; i++) {
		const struct vt_alloc *a = &c->m->allocs[i];
		if (!a->stack_id || !(a->flags & VT_AF_CHARGED) ||
		    unfinished(c, a, &c->f[i - c->p->alloc_begin]))
			continue;
		k = twin_of(&twins, a, 1);
		k->n++;
		k->by_cat[a->category]++;
	}
	twin_groups(c, &twins);
	for (uint32_t i = c->p->alloc_begin; i < c->p->alloc_end; i++) {
		struct vt_alloc *a = &c->m->allocs[i];
		struct facts *f = &c->f[i - c->p->alloc_begin];
		if (!(a->flags & VT_AF_CHARGED) || !unfinished(c, a, f) ||
		    a->category == VT_CAT_POOL)
			continue;
		int cat = twins_category(twin_of(&twins, a, 0));
		if (cat < 0 || cat == a->category || cat == VT_CAT_POOL)
			continue;
		set_cat(a, f, cat, 70, R_UNFINISHED);
	}
	HASH_ITER(hh, twins, k, tmp)
	{
		HASH_DEL(twins, k);
		free(k);
	}
}
