/* State handed from step to step, see classify_carried.h. */
#include "classify_carried.h"

#include <stdlib.h>

#include "model_fold.h"
#include "steps.h"

/* A jitted step without buffer donation (JAX's default) returns new
 * parameter and optimizer-state buffers every step, and the old ones die in
 * the next: no weight is long-lived at any address. Per size: the tensors
 * made before training that die in the first two steps (the generation the
 * first step consumes: `init`, `tx.init`) are m origins; when at least four
 * steps in five each make m or more of that size, not from the host, that
 * live into the next step exactly (the last step's live to the end), the
 * size is carried state. A step's activations die in their step, a
 * prefetched batch comes from the host, and an activation kept into the
 * next step has no origin before training. Within each generation (and
 * among the origins) the first of the size is the parameter, later ones
 * the optimizer's state (parameters are made before the state that mirrors
 * them): only the order tells them apart, so confidence 55 with the other
 * as the alternative. */
struct carried {
	uint64_t bytes;
	uint32_t origins;    /* made before training, dead by the end of the second step */
	uint32_t good_steps; /* steps that made a whole generation */
	uint32_t in_step;    /* of the step being counted */
	int cur_step;
	uint32_t taken; /* generation members decided in cur_step */
	UT_hash_handle hh;
};

/* The step a free belongs to; the free that ends a step (the valley the
 * period rule starts the next step at) belongs to the step it ends. */
static int freed_in(const struct ctx *c, const struct vt_alloc *a)
{
	return a->t_free ? vt_step_of(c->p, a->t_free - 1) : -1;
}

static int hands_on(const struct ctx *c, const struct vt_alloc *a, const struct facts *f)
{
	uint32_t steps = c->p->nsteps;
	return f->born >= 0 && !f->host_filled &&
	       (f->freed ? freed_in(c, a) == f->born + 1 : f->born + 1 == (int)steps);
}

static int origin(const struct ctx *c, const struct vt_alloc *a, const struct facts *f)
{
	int died = f->freed ? freed_in(c, a) : -1;
	return a->t_alloc < c->p->step_t[0] && died >= 0 && died <= 1;
}

static struct carried *carried_find(struct carried *tab, uint64_t bytes)
{
	struct carried *e;
	HASH_FIND(hh, tab, &bytes, sizeof bytes, e);
	return e;
}

static void count_generations(struct ctx *c, int dev, struct carried **tab)
{
	for (uint32_t i = c->p->alloc_begin; i < c->p->alloc_end; i++) {
		const struct vt_alloc *a = &c->m->allocs[i];
		const struct facts *f = &c->f[i - c->p->alloc_begin];
		if (f->device != dev || !f->charged || f->decided || !origin(c, a, f))
			continue;
		struct carried *e = carried_find(*tab, a->bytes);
		if (!e) {
			if (!(e = calloc(1, sizeof *e)))
				vt_nomem();
			e->bytes = a->bytes;
			e->cur_step = -1;
			HASH_ADD(hh, *tab, bytes, sizeof e->bytes, e);
		}
		e->origins++;
	}
	for (uint32_t i = c->p->alloc_begin; *tab && i < c->p->alloc_end; i++) {
		const struct facts *f = &c->f[i - c->p->alloc_begin];
		struct carried *e;
		if (f->device != dev || !f->charged || f->decided ||
		    !hands_on(c, &c->m->allocs[i], f) ||
		    !(e = carried_find(*tab, c->m->allocs[i].bytes)))
			continue;
		if (f->born != e->cur_step) {
			e->good_steps += e->in_step >= e->origins;
			e->cur_step = f->born;
			e->in_step = 0;
		}
		e->in_step++;
	}
	struct carried *e, *tmp;
	HASH_ITER(hh, *tab, e, tmp)
	{
		e->good_steps += e->in_step >= e->origins;
		e->cur_step = -1;
		e->in_step = 0;
	}
}

void vt_cls_carried_state(struct ctx *c, int dev)
{
	uint32_t steps = c->p->nsteps;
	if (steps < 3)
		return;
	struct carried *tab = NULL, *e, *tmp;
	count_generations(c, dev, &tab);
	for (uint32_t i = c->p->alloc_begin; tab && i < c->p->alloc_end; i++) {
		struct vt_alloc *a = &c->m->allocs[i];
		struct facts *f = &c->f[i - c->p->alloc_begin];
		if (f->device != dev || !f->charged || f->decided ||
		    !(e = carried_find(tab, a->bytes)) || e->good_steps * 5 < steps * 4)
			continue;
		int step = origin(c, a, f) ? -2 : hands_on(c, a, f) ? f->born : -3;
		if (step == -3)
			continue;
		if (step != e->cur_step) {
			e->cur_step = step;
			e->taken = 0;
		}
		if (e->taken++ >= e->origins)
			continue;
		if (c->keys[f->key]->fold)
			vt_fold_set_inexact(c->m, "state handed from step to step is folded");
		if (e->taken == 1)
			set_cat(a, f, VT_CAT_WEIGHTS, 55, R_CARRIED_WEIGHTS);
		else
			set_cat(a, f, VT_CAT_OPTIMIZER, 55, R_CARRIED_STATE);
	}
	HASH_ITER(hh, tab, e, tmp)
	{
		HASH_DEL(tab, e);
		free(e);
	}
}
