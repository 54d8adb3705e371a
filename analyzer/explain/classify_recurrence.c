/* Allocations made again step after step, see classify_recurrence.h. */
#include "classify_recurrence.h"

#include <stdlib.h>
#include <string.h>

#include "model_fold.h"

/* The index of the (size, device) counter, made on first sight. */
static uint32_t key_index_slow(struct ctx *c, uint64_t bytes, uint8_t device)
{
	struct key_count probe, *k;
	memset(&probe.key, 0, sizeof probe.key);
	probe.key.bytes = bytes;
	probe.key.device = device;
	HASH_FIND(hh, c->key_hash, &probe.key, sizeof probe.key, k);
	if (k)
		return k->index;
	if (c->nkeys == c->cap_keys) {
		uint32_t cap = c->cap_keys ? 2 * c->cap_keys : 64;
		struct key_count **v = realloc(c->keys, cap * sizeof *v);
		if (!v)
			vt_nomem();
		c->keys = v;
		c->cap_keys = cap;
	}
	k = calloc(1, sizeof *k);
	if (!k)
		vt_nomem();
	k->key = probe.key;
	k->last_step = -2;
	k->index = c->nkeys;
	c->keys[c->nkeys++] = k;
	HASH_ADD(hh, c->key_hash, key, sizeof k->key, k);
	return k->index;
}

uint32_t vt_cls_key_index(struct ctx *c, uint64_t bytes, uint8_t device)
{
	uint64_t h = (bytes ^ ((uint64_t)device << 56)) * 0x9e3779b97f4a7c15ull;
	uint32_t slot = (uint32_t)(h >> 56); /* 256 slots */
	if (c->key_cache[slot].index_plus_1 && c->key_cache[slot].bytes == bytes &&
	    c->key_cache[slot].device == device)
		return c->key_cache[slot].index_plus_1 - 1;
	uint32_t index = key_index_slow(c, bytes, device);
	c->key_cache[slot].bytes = bytes;
	c->key_cache[slot].device = device;
	c->key_cache[slot].index_plus_1 = index + 1;
	return index;
}

void vt_cls_free_keys(struct ctx *c)
{
	struct key_count *k, *tmp;
	HASH_ITER(hh, c->key_hash, k, tmp)
	{
		HASH_DEL(c->key_hash, k);
		free(k);
	}
	free(c->keys);
}

/* Of k's folded allocations, those its device's teardown freed (after the
 * device's last allocation) count as kept, as a record does: the groups
 * count those freed after the last allocation made before them. Where
 * clocks disagree with that order, any of them may be (torn_unsure). */
static void folded_torn_down(const struct ctx *c, struct key_count *k)
{
	const struct vt_fold_dev *fd = vt_fold_dev_of(c->m, c->proc, (uint8_t)k->key.device);
	if (!fd || fd->last_t_free <= c->last_alloc_t[k->key.device])
		return;
	if (fd->skew)
		k->torn_unsure = (uint32_t)k->fold->folded;
	else if (k->fold->torn_mark == fd->allocs)
		k->kept_from_training += (uint32_t)k->fold->torn;
}

static void count_keys(struct ctx *c)
{
	uint32_t n = c->p->alloc_end - c->p->alloc_begin;
	for (uint32_t i = 0; i < n; i++) {
		struct facts *f = &c->f[i];
		struct key_count *k = c->keys[f->key];
		k->count++;
		k->freed += f->freed;
		if (f->born >= 0) {
			k->in_training++;
			k->uploaded_in_training += f->host_filled;
			k->kept_from_training += !f->freed || f->torn_down;
		}
		int s = f->born;
		if (s >= 0 && s != k->last_step) {
			k->steps_seen++;
			k->last_step = s;
		}
	}
	/* a folding model counted every allocation of a folded key as it came
	 * (a key may have been folded whole: it needs its counter too) */
	uint32_t ng;
	const struct vt_fold_group *g = vt_fold_groups(c->m, &ng);
	for (uint32_t i = 0; i < ng; i++)
		if (g[i].proc == c->proc)
			vt_cls_key_index(c, g[i].bytes, g[i].device);
	for (uint32_t i = 0; i < c->nkeys; i++) {
		struct key_count *k = c->keys[i];
		k->fold = vt_fold_size_of(c->m, c->proc, k->key.bytes, (uint8_t)k->key.device);
		if (!k->fold)
			continue;
		k->count = k->fold->count;
		k->steps_seen = k->fold->steps_seen;
		k->freed += (uint32_t)k->fold->folded;
		k->in_training += (uint32_t)k->fold->folded; /* folded: made and freed in steps */
		k->uploaded_in_training += (uint32_t)k->fold->uploads;
		folded_torn_down(c, k);
	}
}

/* Made again in most steps, and this one does not live through most of the
 * training (a prefetched batch lives a few steps, a weight all of them). */
static int recurs(const struct ctx *c, const struct key_count *k, uint32_t idx,
                  const struct facts *f)
{
	uint32_t steps = c->p->nsteps;
	/* still there at the end while most of its kind were freed: a batch or
	 * an activation in flight when the job stopped; while most were kept:
	 * state that grows (a leak, metrics), not a per-step tensor */
	if ((!f->freed && k->freed * 2 < k->count) || f->grown)
		return 0;
	if (steps >= 3) {
		if (k->steps_seen < 3 || k->steps_seen * 2 < steps)
			return 0;
		/* a per-step tensor lives a few steps (a prefetched batch, a ring
		 * of them); a tensor of a recurring size that lives through a
		 * quarter of the steps is kept for a stretch of them (an epoch's
		 * reshuffled training set, the size of an embedding) */
		uint32_t lived = (uint32_t)(f->died - f->born);
		return lived * 4 < steps * 3 && (lived <= 8 || lived * 4 <= steps);
	}
	/* no steps: made again and again, each one short-lived. A tensor the
	 * host fills is counted in events: uploads into fresh pages can take
	 * most of a short run's time, and a model loaded tensor by tensor
	 * then served would look short-lived by the clock (batches uploaded
	 * per request are short-lived either way) */
	const struct vt_alloc *a = &c->m->allocs[idx];
	if (f->host_filled)
		return k->count >= 3 && lifetime_events(c->p, a) * 4 < c->span_events;
	return k->count >= 3 && lifetime(c->m, a) * 4 < c->span_ns;
}

/* Made and freed within one step, like at least two others of its size,
 * most of which were freed: a tensor of a pass that is not a training step
 * (an evaluation pass, a forward-only pass between steps), too rare across
 * the steps to recur but no more long-lived than an activation. */
static int transient(const struct ctx *c, const struct key_count *k, const struct facts *f)
{
	return c->p->nsteps >= 3 && f->freed && !f->grown && f->died == f->born && k->count >= 3 &&
	       k->freed * 2 >= k->count;
}

/* Never freed, while its size was made in most steps and never freed
 * either: kept step after step (outputs appended to a list). */
static int kept_per_step(const struct ctx *c, const struct key_count *k, const struct facts *f)
{
	uint32_t steps = c->p->nsteps;
	return steps >= 3 && !f->freed && f->born >= 0 && !k->freed && k->steps_seen >= 3 &&
	       k->steps_seen * 2 >= steps;
}

/* Whether a folding model's group recurs, as recurs() and transient() say
 * of each of its allocations (freed, within a step or two of its making);
 * transient_only: only as transient() says. 0: they would be long-lived,
 * which the folded evidence cannot tell the full model's way. */
int vt_cls_group_recurs(struct ctx *c, const struct vt_fold_group *g, int *transient_only)
{
	const struct key_count *k = c->keys[vt_cls_key_index(c, g->bytes, g->device)];
	uint32_t steps = c->p->nsteps;
	*transient_only = 0;
	if (steps < 3)
		return 0;
	if (k->steps_seen >= 3 && k->steps_seen * 2 >= steps)
		return 1; /* and a span of one step at most is under 3/4 of them */
	if (g->span == 0 && k->count >= 3 && k->freed * 2 >= k->count) {
		*transient_only = 1;
		return 1;
	}
	return 0;
}

/* Freed only by the teardown, not from the host, while its size was made
 * in most steps and three in four of those made in training were kept to
 * the end: state the job grows step after step (rows of a sparse table
 * made when their ids first came), no per-step tensor, even made in the
 * last step. The last step's tensors are freed after the job's last
 * allocation too, but a size with per-step tensors is mostly freed within
 * the run (three steps of a gradient, one of them the last, beside Adam's
 * two slots: 3 of 5 kept). A batch from the host may be one in flight. */
static int grown(const struct ctx *c, const struct key_count *k, const struct facts *f)
{
	uint32_t steps = c->p->nsteps;
	return steps >= 3 && f->torn_down && !f->host_filled &&
	       4 * k->kept_from_training >= 3 * k->in_training && k->steps_seen >= 3 &&
	       k->steps_seen * 2 >= steps;
}

/* grown() where k's folded allocations the teardown freed may be more
 * than count_keys counted (key_count.torn_unsure): the same answer either
 * way, or the full model answers. */
static int grown_folded(const struct ctx *c, struct key_count *k, const struct facts *f)
{
	int g = grown(c, k, f);
	if (!k->torn_unsure)
		return g;
	k->kept_from_training += k->torn_unsure;
	if (grown(c, k, f) != g)
		vt_fold_set_inexact(c->m, "a folded allocation may be freed by the teardown");
	k->kept_from_training -= k->torn_unsure;
	return g;
}

void vt_cls_mark_recurring(struct ctx *c)
{
	count_keys(c);
	for (uint32_t i = c->p->alloc_begin; i < c->p->alloc_end; i++) {
		struct facts *f = &c->f[i - c->p->alloc_begin];
		struct key_count *k = c->keys[f->key];
		f->grown = grown_folded(c, k, f);
		f->recurring = recurs(c, k, i, f);
		if (!f->recurring && transient(c, k, f))
			f->recurring = f->transient = 1;
		f->kept = kept_per_step(c, k, f);
	}
	uint32_t ng;
	const struct vt_fold_group *g = vt_fold_groups(c->m, &ng);
	for (uint32_t i = 0; i < ng; i++) {
		int transient_only;
		if (g[i].proc == c->proc && !vt_cls_group_recurs(c, &g[i], &transient_only))
			vt_fold_set_inexact(c->m, "a folded allocation would be long-lived");
	}
}
