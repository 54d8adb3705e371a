/* What each step makes, and the buffers its gradients are copied into, see
 * classify_gradients.h. */
#include "classify_gradients.h"

#include <stdlib.h>
#include <string.h>

#include "classify_recurrence.h"
#include "classify_twins.h"
#include "frame_evidence.h"
#include "model_fold.h"
#include "model_query.h"

/* Does allocation j of the process walk with allocation i through
 * recurring_ones' gradient-size branch in i's step? */
static int same_walk(const struct ctx *c, const struct facts *fi, uint32_t j)
{
	const struct facts *f = &c->f[j - c->p->alloc_begin];
	return f->key == fi->key && f->born == fi->born && f->recurring && !f->decided &&
	       !f->host_filled;
}

struct lifetime {
	uint64_t t_free;
	uint32_t place;
	uint32_t alloc;
	int late; /* an update's temporary, made after the step's gradients died */
};

static int by_later_free(const void *x, const void *y)
{
	const struct lifetime *a = x, *b = y;
	if ((a->place == 0) != (b->place == 0))
		return a->place == 0 ? 1 : -1;
	if (a->late != b->late)
		return a->late ? 1 : -1;
	if (a->t_free != b->t_free)
		return a->t_free < b->t_free ? 1 : -1;
	return a->place < b->place ? 1 : a->place > b->place ? -1 : 0;
}

/* Freed within two events of its making (`d = s_param - param`, the
 * next temporary made, `d` freed). */
static int brief(const struct vt_alloc *a)
{
	return a->seq_free != VT_T_NEVER && a->seq_free - a->seq_alloc <= 2;
}

/* Marks l[k].late for the n allocations of one walk (in the order made):
 * brief, and made when every one made before it was freed, but those late
 * themselves. A temporary of an update after the optimizer's (an EMA's,
 * after zero_grad): freed after the gradients, yet none of them. The
 * gradient the backward pass makes last is as brief (the first layer's,
 * freed first by zero_grad), but the others are alive then. */
static void mark_late(const struct ctx *c, struct lifetime *l, uint32_t n)
{
	uint64_t alive_until = 0; /* the last free of those not late, by seq */
	for (uint32_t k = 0; k < n; k++) {
		const struct vt_alloc *a = &c->m->allocs[l[k].alloc];
		l[k].late = brief(a) && alive_until < a->seq_alloc;
		if (!l[k].late && a->seq_free > alive_until)
			alive_until = a->seq_free;
	}
}

/* The gradients among the allocations of s in allocation i's step: the
 * grads_per_step that are freed last (a gradient lives until the optimizer
 * has used it; the forward pass's activations die in the backward pass),
 * later place first among equals, but never the step's first of the size
 * while others remain: the forward pass comes first, and a tensor it makes
 * may outlive the gradients (a GAN's generated batch, used by both
 * models' updates). "The last made" is wrong under gradient accumulation
 * (the kept .grad is made by the first micro-batch's backward, before the
 * activations of the next three) and under activation checkpointing (the
 * recomputed forward of an early segment comes after the gradients of the
 * later ones). Sets s->is_grad by place. */
static void mark_step_gradients(struct ctx *c, struct size_count *s, uint32_t i)
{
	const struct facts *fi = &c->f[i - c->p->alloc_begin];
	int step = fi->born;
	uint64_t end = (uint32_t)step + 1 < c->p->nsteps ? c->p->step_t[step + 1] : VT_T_NEVER;
	struct lifetime *l = NULL;
	uint32_t n = 0, cap = 0;
	for (uint32_t j = i; j < c->p->alloc_end && c->m->allocs[j].t_alloc < end; j++) {
		if (!same_walk(c, fi, j))
			continue;
		if (n == cap) {
			cap = cap ? 2 * cap : 16;
			l = realloc(l, cap * sizeof *l);
			if (!l)
				vt_nomem();
		}
		l[n].t_free = c->m->allocs[j].t_free;
		l[n].place = n;
		l[n].alloc = j;
		n++;
	}
	mark_late(c, l, n);
	if (n > s->is_grad_cap) {
		s->is_grad = realloc(s->is_grad, n);
		if (!s->is_grad)
			vt_nomem();
		s->is_grad_cap = n;
	}
	if (n) { /* none when the step table moved under it (threads racing the clock) */
		memset(s->is_grad, 0, n);
		qsort(l, n, sizeof *l, by_later_free);
	}
	for (uint32_t k = 0; k < n && k < s->grads_per_step; k++)
		s->is_grad[l[k].place] = 1;
	s->is_grad_n = n;
	free(l);
}

/* Within a step, the allocations of a gradient size that are not its
 * gradients are the forward pass's activations of that size. */
static int activation_of_weight_size(struct ctx *c, struct size_count *s, uint32_t i)
{
	int step = c->f[i - c->p->alloc_begin].born;
	int first = step != s->cur_step;
	if (first) {
		s->cur_step = step;
		s->idx_in_step = 0;
	}
	uint32_t idx = s->idx_in_step++;
	if (!s->made) /* asked once per recurring allocation: worth keeping */
		s->made = vt_cls_per_step(s);
	uint32_t made = s->made;
	if (!s->grads_per_step || s->grads_per_step >= made)
		return 0;
	if (first)
		mark_step_gradients(c, s, i);
	return idx < s->is_grad_n ? !s->is_grad[idx] : idx < made - s->grads_per_step;
}

/* A tensor of a size that recurs, filled from the host under a framework's
 * model loading (a CONTEXT rule of frame_rules.def: `Module._apply`,
 * `load_state_dict`): a parameter uploaded once that happens to share its
 * size with the activations or batches of every step, not a batch. */
static int weights_by_name(struct ctx *c, uint32_t h2d_stack_id)
{
	return vt_frame_context_is(c->fe, c->proc, h2d_stack_id, VT_CAT_WEIGHTS);
}

/* Filled (nine tenths of it at least) by device-to-device copies, the
 * first from a weight: the parameters a sharded job gathers for the step
 * (FSDP's unsharded flat parameter, its own shard copied in and the other
 * ranks' arriving by peer copies). Who wrote the bytes says weights where
 * the size, no weight's, cannot. */
static int gathered_weights(const struct ctx *c, const struct vt_alloc *a)
{
	uint32_t from = vt_cls_d2d_filled_from(c, a);
	return from != VT_NO_INDEX && c->m->allocs[from].category == VT_CAT_WEIGHTS;
}

/* Is allocation i of this process (not filled from the host, long-lived)
 * written in most steps by device-to-device copies whose first source is a
 * gradient (made every step, or kept between steps: `zero_grad(set_to_none=
 * False)` under DDP)? Who writes the bytes, and how often: evidence a size
 * cannot give by coincidence. Chained buffers (NCCL's channel, filled from the bucket)
 * are not: their source is not a gradient. */
static int written_from_gradients(const struct ctx *c, uint32_t i, const struct facts *f)
{
	uint32_t steps = c->p->nsteps;
	if (steps < 3 || f->recurring || f->host_filled || !f->charged)
		return 0;
	const struct vt_alloc *a = &c->m->allocs[i];
	uint32_t from = vt_cls_d2d_source(c, a);
	if (vt_model_copies(c->m, a)->d2d_in_copies + 1 < steps || from == VT_NO_INDEX)
		return 0;
	const struct vt_alloc *src = &c->m->allocs[from];
	return src->category == VT_CAT_GRADIENTS &&
	       (src->reason == R_GRADIENTS || src->reason == R_KEPT_GRADIENT);
}

/* Gradient buckets of device dev: decided after the per-step gradients are,
 * whatever the long-lived rules made of them before. */
void vt_cls_gradient_buckets(struct ctx *c, int dev)
{
	for (uint32_t i = c->p->alloc_begin; i < c->p->alloc_end; i++) {
		struct facts *f = &c->f[i - c->p->alloc_begin];
		if (f->device == dev && written_from_gradients(c, i, f))
			set_cat(&c->m->allocs[i], f, VT_CAT_GRADIENTS, 80, R_GRAD_BUCKET);
	}
}

/* Buffers of any device written in most steps from a gradient bucket (the
 * all-reduce's NCCL channel, fed by peer copies from the other rank's
 * bucket): a communication buffer, whatever its size matched. After every
 * device's buckets are known. */
void vt_cls_comm_buffers(struct ctx *c)
{
	for (uint32_t i = c->p->alloc_begin; i < c->p->alloc_end; i++) {
		struct vt_alloc *a = &c->m->allocs[i];
		uint32_t from = vt_cls_d2d_source(c, a);
		if (a->reason == R_GRAD_BUCKET || !vt_cls_rewritten_on_device(c, a) ||
		    from == VT_NO_INDEX || c->m->allocs[from].reason != R_GRAD_BUCKET)
			continue;
		set_cat(a, &c->f[i - c->p->alloc_begin], VT_CAT_UNKNOWN, 60, R_COMM_BUFFER);
	}
}

/* A kept record of a folded key's era, of a size whose place in the step
 * decides (activations sharing a gradient size): its place counts the
 * folded ones too, which the classifier does not see. */
static int activation_in_step(struct ctx *c, const struct facts *f, struct size_count *s)
{
	int act = activation_of_weight_size(c, s, (uint32_t)(f - c->f) + c->p->alloc_begin);
	if (c->keys[f->key]->fold && f->born >= (int)vt_fold_keep_steps(c->m) &&
	    s->grads_per_step && s->grads_per_step < s->made)
		vt_fold_set_inexact(c->m, "a kept allocation's place in its step is not known");
	return act;
}

static void set_group(struct vt_fold_group *g, int cat, int conf, enum reason why)
{
	g->category = (uint8_t)cat;
	g->confidence = (uint8_t)conf;
	g->reason = (uint8_t)why;
}

/* A folded group of uploads (filled from the host, made again step after
 * step), as recurring_ones decides each of its allocations. */
static void upload_group(struct ctx *c, struct vt_fold_group *g, int transient_only)
{
	if (weights_by_name(c, g->h2d_stack_id))
		set_group(g, VT_CAT_WEIGHTS, 85, R_WEIGHTS_BY_NAME);
	else if (transient_only)
		set_group(g, VT_CAT_PREFETCH, 70, R_TRANSIENT_BATCH);
	else
		set_group(g, VT_CAT_PREFETCH, 85, R_PREFETCH);
}

/* The folded groups of dev, as recurring_ones decides each of their
 * allocations. */
void vt_cls_recurring_groups(struct ctx *c, int dev, struct size_count *sizes)
{
	uint32_t ng;
	struct vt_fold_group *g = vt_fold_groups(c->m, &ng);
	for (uint32_t i = 0; i < ng; i++) {
		if (g[i].proc != c->proc || g[i].device != dev)
			continue;
		int transient_only;
		vt_cls_group_recurs(c, &g[i], &transient_only);
		if (g[i].h2d_copies) {
			upload_group(c, &g[i], transient_only);
			continue;
		}
		struct size_count *s = vt_cls_size_find(sizes, g[i].bytes);
		int grad = s && s->gradient_size;
		if (s && !s->made)
			s->made = vt_cls_per_step(s);
		if (s && s->frozen)
			set_group(&g[i], VT_CAT_ACTIVATIONS, 65, R_FROZEN_SIZE_ACT);
		else if (transient_only && !grad)
			set_group(&g[i], VT_CAT_ACTIVATIONS, 70, R_TRANSIENT);
		else if (grad && s->grads_per_step && s->grads_per_step < s->made &&
		         g[i].place < s->made - s->grads_per_step)
			set_group(&g[i], VT_CAT_ACTIVATIONS, 60, R_FORWARD);
		else if (grad)
			set_group(&g[i], VT_CAT_GRADIENTS, 85, R_GRADIENTS);
		else
			set_group(&g[i], VT_CAT_ACTIVATIONS, 75, R_ACTIVATIONS);
	}
}

/* Filled from the host and freed before the first step, of a size that
 * recurs in the steps but that the host filled in fewer than two of them:
 * the size is a weight's (its gradient comes every step), the upload a
 * checkpoint's tensor staged on the device (`torch.load(map_location=
 * "cuda")`, then `load_state_dict` copies it into the parameter and drops
 * it), not the first batch of a loop, which the first step reads. */
static int staged_before_training(const struct ctx *c, const struct facts *f)
{
	const struct key_count *k = c->keys[f->key];
	return c->p->nsteps >= 3 && f->died < 0 && k->steps_seen >= 3 &&
	       k->uploaded_in_training < 2;
}

void vt_cls_recurring_ones(struct ctx *c, int dev, struct size_count *sizes)
{
	for (uint32_t i = c->p->alloc_begin; i < c->p->alloc_end; i++) {
		struct facts *f = &c->f[i - c->p->alloc_begin];
		if (f->device != dev || f->decided || !f->recurring)
			continue;
		struct vt_alloc *a = &c->m->allocs[i];
		struct size_count **slot = &c->size_by_key[f->key];
		if (!*slot)
			*slot = vt_cls_size_find(sizes, fact_bytes(c, f));
		struct size_count *s = *slot;
		if (f->host_filled && weights_by_name(c, vt_model_copies(c->m, a)->h2d_stack_id))
			set_cat(a, f, VT_CAT_WEIGHTS, 85, R_WEIGHTS_BY_NAME);
		else if (!f->host_filled && gathered_weights(c, a))
			set_cat(a, f, VT_CAT_WEIGHTS, 70, R_GATHERED);
		else if (f->host_filled && staged_before_training(c, f))
			set_cat(a, f, VT_CAT_WEIGHTS, 50, R_STAGED_UPLOAD);
		else if (f->host_filled && f->transient)
			set_cat(a, f, VT_CAT_PREFETCH, 70, R_TRANSIENT_BATCH);
		else if (f->host_filled)
			set_cat(a, f, VT_CAT_PREFETCH, 85, R_PREFETCH);
		else if (s && s->frozen)
			set_cat(a, f, VT_CAT_ACTIVATIONS, 65, R_FROZEN_SIZE_ACT);
		else if (f->transient && !(s && s->gradient_size))
			set_cat(a, f, VT_CAT_ACTIVATIONS, 70, R_TRANSIENT);
		else if (s && s->gradient_size && activation_in_step(c, f, s))
			set_cat(a, f, VT_CAT_ACTIVATIONS, 60, R_FORWARD);
		else if (s && s->gradient_size)
			set_cat(a, f, VT_CAT_GRADIENTS, 85, R_GRADIENTS);
		else
			set_cat(a, f, VT_CAT_ACTIVATIONS, 75, R_ACTIVATIONS);
	}
}

/* Where the device holds optimizer state but no gradient shows, the step's
 * gradients live inside something it makes every step: XLA runs a step's
 * executable in one temp buffer holding every intermediate, the gradients
 * among them (JAX, with or without donation). That buffer is the step's
 * largest recurring allocation, made once a step: an allocator's region
 * (pool), activations the alternative. A per-tensor job's gradients show
 * themselves; an inference job keeps no optimizer state. A gradient shows
 * when its size is made in half the steps at least and it holds 1 KiB or
 * more: a logged scalar the size of a counter, or an evaluation pass's
 * temp the size of a kernel, read as a gradient by its size, is no sign of
 * where a step's gradients are. */
#define SHOWN_GRADIENT_BYTES 1024

/* Its (size, device) key's steps count the folded ones too (a folding
 * model keeps few of a recurring size's allocations). */
static int gradient_shows(const struct ctx *c, const struct key_count *k)
{
	return k->key.bytes >= SHOWN_GRADIENT_BYTES && (uint64_t)k->steps_seen * 2 >= c->p->nsteps;
}

static int largest_per_step(struct ctx *c, int dev, struct size_count *sizes, uint64_t *bytes)
{
	uint32_t ng;
	const struct vt_fold_group *g = vt_fold_groups(c->m, &ng);
	int optimizer = 0;
	*bytes = 0;
	for (uint32_t i = c->p->alloc_begin; i < c->p->alloc_end; i++) {
		const struct vt_alloc *a = &c->m->allocs[i];
		if (a->device != dev || !(a->flags & VT_AF_CHARGED))
			continue;
		if (a->category == VT_CAT_GRADIENTS &&
		    gradient_shows(c, c->keys[c->f[i - c->p->alloc_begin].key]))
			return 0;
		optimizer |= a->category == VT_CAT_OPTIMIZER;
		if (a->reason == R_ACTIVATIONS && a->bytes > *bytes)
			*bytes = a->bytes;
	}
	for (uint32_t i = 0; i < ng; i++) {
		if (g[i].proc != c->proc || g[i].device != dev)
			continue;
		if (g[i].category == VT_CAT_GRADIENTS &&
		    gradient_shows(c, c->keys[vt_cls_key_index(c, g[i].bytes, g[i].device)]))
			return 0;
		if (g[i].reason == R_ACTIVATIONS && g[i].bytes > *bytes)
			*bytes = g[i].bytes;
	}
	const struct size_count *s = *bytes ? vt_cls_size_find(sizes, *bytes) : NULL;
	return optimizer && s && vt_cls_per_step(s) == 1;
}

void vt_cls_temp_buffers(struct ctx *c, int dev, struct size_count *sizes)
{
	uint64_t bytes;
	if (!largest_per_step(c, dev, sizes, &bytes))
		return;
	for (uint32_t i = c->p->alloc_begin; i < c->p->alloc_end; i++) {
		struct vt_alloc *a = &c->m->allocs[i];
		if (a->device == dev && a->bytes == bytes && a->reason == R_ACTIVATIONS)
			set_cat(a, &c->f[i - c->p->alloc_begin], VT_CAT_POOL, 60, R_TEMP_BUFFER);
	}
	uint32_t ng;
	struct vt_fold_group *g = vt_fold_groups(c->m, &ng);
	for (uint32_t i = 0; i < ng; i++)
		if (g[i].proc == c->proc && g[i].device == dev && g[i].bytes == bytes &&
		    g[i].reason == R_ACTIVATIONS)
			set_group(&g[i], VT_CAT_POOL, 60, R_TEMP_BUFFER);
}
