/* The steps the rules read, see classify_steps.h. */
#include "classify_steps.h"

#include <stdlib.h>
#include <string.h>

#include "model_fold.h"
#include "model_query.h"
#include "nomem.h"
#include "steps.h"

/* The step of every allocation and free. Allocations and frees are each in
 * time order, so a cursor walks the steps; a binary search only where time
 * went backwards (threads racing for the clock). */
int vt_cls_step_cursor(const struct vt_step_table *st, uint32_t *cur, uint64_t t)
{
	if (!st->n)
		return -1;
	if (*cur > 0 && t < st->t[*cur - 1]) {
		int s = vt_step_in(st->t, st->n, t);
		*cur = (uint32_t)(s + 1);
		return s;
	}
	while (*cur < st->n && st->t[*cur] <= t)
		(*cur)++;
	return (int)*cur - 1;
}

/* The step of a free, from the step of its allocation: most allocations
 * die within a few steps, so a short walk forward beats a search, and it
 * reads the allocation's own record instead of the free order's scattered
 * ones. Time behind the start (threads racing for the clock): a search. */
int vt_cls_step_from(const struct vt_step_table *st, int from, uint64_t t)
{
	if (from < 0 || t < st->t[from])
		return vt_step_in(st->t, st->n, t);
	for (int k = 0; k < 8; k++, from++)
		if ((uint32_t)from + 1 >= st->n || st->t[from + 1] > t)
			return from;
	return vt_step_in(st->t, st->n, t);
}

/* The step table of device dev: its own, or the process's. */
const struct vt_step_table *vt_cls_steps_of(const struct ctx *c, int dev)
{
	return c->own && dev < VT_MAX_DEVICES && c->own[dev].t ? &c->own[dev] : &c->proc_steps;
}

/* Largest distance from one of a device's step starts (the first, an
 * estimate, left out) to the nearest process step start: a device in phase
 * with the process is so at every step; a rank that lags one step by a
 * third of a period (its optimizer state made while the other rank began
 * its next step) is not, though its later steps catch up. */
static uint64_t phase_gap(const struct vt_step_table *own, const struct vt_step_table *proc)
{
	uint64_t gap = 0;
	for (uint32_t i = 1; i < own->n; i++) {
		int k = vt_step_in(proc->t, proc->n, own->t[i]);
		uint64_t after = k < 0 ? UINT64_MAX : own->t[i] - proc->t[k];
		uint64_t before =
		    (uint32_t)(k + 1) < proc->n ? proc->t[k + 1] - own->t[i] : UINT64_MAX;
		uint64_t d = after < before ? after : before;
		gap = d > gap ? d : gap;
	}
	return gap;
}

/* A device in phase with the process's steps found by the period of
 * another device: the steps are the process's, but the first begins where
 * the device's own first step does (its lazy state, its first gradients are
 * its own; ranks start their first steps apart). Rewrites tab so; 0 when
 * nothing differs or the steps came from markers (then exact). */
static int own_first_step(const struct ctx *c, struct vt_step_table *tab)
{
	const struct vt_step_table *proc = &c->proc_steps;
	if (c->p->step_source != VT_STEPS_PERIOD || tab->t[0] == proc->t[0] ||
	    tab->t[0] >= proc->t[1])
		return 0;
	uint64_t *t = malloc(proc->n * sizeof *t);
	if (!t)
		vt_nomem();
	memcpy(t, proc->t, proc->n * sizeof *t);
	t[0] = tab->t[0];
	free(tab->t);
	*tab = (struct vt_step_table){t, proc->n, proc->period_ns};
	return 1;
}

/* Two stacks of one process with the same frames (two threads running the
 * same code record the same call path under two ids). */
static int same_stack(const struct vt_model *m, uint32_t proc, uint32_t a, uint32_t b)
{
	if (a == b)
		return 1;
	const struct vt_model_stack *x = vt_model_stack(m, proc, a),
	                            *y = vt_model_stack(m, proc, b);
	return x && y && x->depth == y->depth && x->py_depth == y->py_depth &&
	       !memcmp(x->frames, y->frames,
	               ((size_t)x->depth + 2 * (size_t)x->py_depth) * sizeof *x->frames);
}

/* Whether allocation a, on dev, is the tensor of allocation o: its size
 * and its call path (of any thread). */
static int same_tensor(const struct ctx *c, const struct vt_alloc *a, int dev,
                       const struct vt_alloc *o)
{
	return a->device == dev && a->bytes == o->bytes &&
	       same_stack(c->m, c->proc, a->stack_id, o->stack_id);
}

/* How many allocations on dev are the tensor of allocation o, and whether the marked steps after
 * the first make one each (the first may make more: lazy set-up). */
static uint32_t opener_count(const struct ctx *c, int dev, const struct vt_alloc *o,
                             int *once_a_step)
{
	const struct vt_step_table *proc = &c->proc_steps;
	uint32_t n = 0, k = 0, in_step = 0;
	*once_a_step = 1;
	for (uint32_t i = c->p->alloc_begin; i < c->p->alloc_end; i++) {
		const struct vt_alloc *a = &c->m->allocs[i];
		if (!same_tensor(c, a, dev, o))
			continue;
		n++;
		while (k < proc->n && proc->t[k] <= a->t_alloc) {
			*once_a_step &= k < 2 || in_step == 1;
			k++, in_step = 0;
		}
		in_step++;
	}
	*once_a_step &= k == proc->n && in_step == 1;
	return n;
}

/* The tensor that opens every marked step on the device the marking
 * thread drives: of the first allocations there after the second marker,
 * one made once in every step (as many as the steps). VT_NO_INDEX when no
 * device shows one. */
#define OPENER_TRIES 8
static uint32_t step_opener(const struct ctx *c, const int *devs)
{
	const struct vt_step_table *proc = &c->proc_steps;
	for (int d = 0; d < VT_MAX_DEVICES; d++) {
		uint32_t tries = 0;
		for (uint32_t i = c->p->alloc_begin;
		     devs[d] && i < c->p->alloc_end && tries < OPENER_TRIES; i++) {
			const struct vt_alloc *a = &c->m->allocs[i];
			if (a->device != d || !(a->flags & VT_AF_CHARGED) ||
			    a->t_alloc < proc->t[1])
				continue;
			tries++;
			int once;
			if (opener_count(c, d, a, &once) == proc->n && once)
				return i;
		}
	}
	return VT_NO_INDEX;
}

/* The steps of device dev driven by a thread that marks none: where its
 * twin of the step's opening tensor (the same stack and size) is made once
 * a marked step, each one starts a step of its own. 0 when not so. */
static int steps_by_opener(const struct ctx *c, int dev, uint32_t opener, struct vt_step_table *out)
{
	const struct vt_step_table *proc = &c->proc_steps;
	const struct vt_alloc *o = &c->m->allocs[opener];
	if (o->device == dev)
		return 0;
	uint64_t *t = malloc(proc->n * sizeof *t);
	if (!t)
		vt_nomem();
	uint32_t n = 0;
	for (uint32_t i = c->p->alloc_begin; i < c->p->alloc_end; i++) {
		const struct vt_alloc *a = &c->m->allocs[i];
		if (!same_tensor(c, a, dev, o))
			continue;
		if (n == proc->n) { /* more than one a step: no opener */
			free(t);
			return 0;
		}
		t[n++] = a->t_alloc;
	}
	if (n != proc->n) {
		free(t);
		return 0;
	}
	*out = (struct vt_step_table){t, n, proc->period_ns};
	return 1;
}

/* Where two devices are driven by two threads, each device's steps are its
 * own: markers from one rank, or the period of the busiest device, cut the
 * other rank's steps anywhere, and its gradient buffer then reads as made
 * in one step and freed in the next. A device takes its own steps (the
 * period rule on its allocations alone) when they are as many as the
 * process's (within one, or a tenth) and start out of phase with them (the
 * median distance to the nearest process step start over a tenth of the
 * period); the device the markers came from, or the period was found on,
 * is in phase and keeps the process's, and another in phase keeps them but
 * for its first step's start (own_first_step). */
void vt_cls_own_steps(struct ctx *c)
{
	int devs[VT_MAX_DEVICES] = {0}, used = 0;
	for (uint32_t i = c->p->alloc_begin; i < c->p->alloc_end; i++) {
		const struct vt_alloc *a = &c->m->allocs[i];
		if (a->device != VT_DEVICE_UNKNOWN && (a->flags & VT_AF_CHARGED) &&
		    !devs[a->device])
			used += devs[a->device] = 1;
	}
	const struct vt_step_table *proc = &c->proc_steps;
	if (used < 2 || proc->n < 3 || !proc->period_ns)
		return;
	/* a device's own steps need all of its allocations: a folding model
	 * reused the records of some */
	uint32_t ng;
	const struct vt_fold_group *g = vt_fold_groups(c->m, &ng);
	for (uint32_t i = 0; i < ng; i++)
		if (g[i].proc == c->proc) {
			vt_fold_set_inexact(c->m, "several devices: each one's steps need every "
			                          "allocation");
			break;
		}
	uint32_t opener =
	    c->p->step_source == VT_STEPS_MARKERS ? step_opener(c, devs) : VT_NO_INDEX;
	for (int d = 0; d < VT_MAX_DEVICES; d++) {
		struct vt_step_table tab;
		if (devs[d] && opener != VT_NO_INDEX && steps_by_opener(c, d, opener, &tab)) {
			if (!c->own && !(c->own = calloc(VT_MAX_DEVICES, sizeof *c->own)))
				vt_nomem();
			c->own[d] = tab;
			continue;
		}
		if (!devs[d] || !vt_steps_on_device(c->m, c->p, d, &tab))
			continue;
		uint32_t slack = proc->n / 10 > 1 ? proc->n / 10 : 1;
		uint32_t diff = tab.n > proc->n ? tab.n - proc->n : proc->n - tab.n;
		if (diff > slack ||
		    (phase_gap(&tab, proc) * 10 <= proc->period_ns && !own_first_step(c, &tab))) {
			free(tab.t);
			continue;
		}
		if (!c->own && !(c->own = calloc(VT_MAX_DEVICES, sizeof *c->own)))
			vt_nomem();
		c->own[d] = tab;
	}
}

void vt_cls_free_own_steps(struct ctx *c)
{
	for (int d = 0; c->own && d < VT_MAX_DEVICES; d++)
		free(c->own[d].t);
	free(c->own);
	c->own = NULL;
}
