/* Upload sites (see upload_sites.h). */
#include "upload_sites.h"

#include <stdlib.h>

#include "nomem.h" /* before <uthash.h>: its out-of-memory exit */
#include "model_hash.h"
#include <uthash.h>

#include "model_query.h"

struct site {
	uint32_t stack_id, tensors;
	uint32_t alive, most_alive; /* its tensors alive now, and at most at once */
	uint64_t bytes;
	uint64_t t_first, t_last; /* its first and last tensor's upload */
	UT_hash_handle hh;
};

struct vt_upload_sites {
	struct site *by_stack;
};

static struct site *site_of(struct vt_upload_sites *s, uint32_t stack_id)
{
	struct site *e;
	HASH_FIND(hh, s->by_stack, &stack_id, sizeof stack_id, e);
	if (!e) {
		e = calloc(1, sizeof *e);
		if (!e)
			vt_nomem();
		e->stack_id = stack_id;
		HASH_ADD(hh, s->by_stack, stack_id, sizeof e->stack_id, e);
	}
	return e;
}

/* One more tensor of the site, uploaded at t and alive from now on (until
 * forget). */
static void note(struct vt_upload_sites *s, uint32_t stack_id, uint64_t bytes, uint64_t t)
{
	if (!stack_id)
		return;
	struct site *e = site_of(s, stack_id);
	if (!e->tensors || t < e->t_first)
		e->t_first = t;
	if (t > e->t_last)
		e->t_last = t;
	e->tensors++;
	e->bytes += bytes;
	e->alive++;
	if (e->alive > e->most_alive)
		e->most_alive = e->alive;
}

static void forget(struct vt_upload_sites *s, uint32_t stack_id)
{
	struct site *e = NULL;
	if (stack_id)
		HASH_FIND(hh, s->by_stack, &stack_id, sizeof stack_id, e);
	if (e && e->alive)
		e->alive--;
}

/* An allocation's tensors: its single-copy ranges in a pool region (alive
 * as long as the region: a range is not freed on its own), or itself. */
static void note_alloc(struct vt_upload_sites *s, const struct vt_model *m, uint32_t i, int in_pool)
{
	const struct vt_alloc *a = &m->allocs[i];
	if (!in_pool) {
		const struct vt_alloc_copies *cp = vt_model_copies(m, a);
		note(s, cp->h2d_stack_id, a->bytes, cp->t_first_h2d);
		return;
	}
	uint32_t n = 0;
	const struct vt_copy_range *r =
	    a->flags & VT_AF_PARTIAL_COPIES ? vt_model_ranges(m, i, &n) : NULL;
	for (uint32_t k = 0; k < n; k++)
		if (r[k].copies == 1)
			note(s, r[k].stack_id, r[k].bytes, r[k].t_first);
}

struct vt_upload_sites *
vt_upload_sites_count(const struct vt_model *m, uint32_t proc,
                      int (*counts)(const struct vt_model *, uint32_t, void *),
                      int (*pool)(const struct vt_model *, uint32_t, void *), void *arg)
{
	struct vt_upload_sites *s = calloc(1, sizeof *s);
	if (!s)
		vt_nomem();
	const struct vt_proc *p = &m->procs[proc];
	/* allocations and frees in the order they happened, so that a site
	 * knows how many of its tensors were alive at once: a model's, all of
	 * them; a per-epoch upload's, the new array and the one it replaces */
	struct vt_proc_walk w;
	uint32_t i;
	int take_free;
	vt_proc_walk_begin(p, &w);
	while (vt_proc_walk_next(m, p, &w, &i, &take_free)) {
		const struct vt_alloc *e = &m->allocs[i];
		if (!(e->flags & VT_AF_COPIES))
			continue;
		int in_pool = pool && pool(m, i, arg);
		if (take_free && !in_pool && counts(m, i, arg))
			forget(s, vt_model_copies(m, e)->h2d_stack_id);
		else if (!take_free && (in_pool || counts(m, i, arg)))
			note_alloc(s, m, i, in_pool);
	}
	return s;
}

static const struct site *find(const struct vt_upload_sites *s, uint32_t stack_id)
{
	struct site *e = NULL;
	if (s && stack_id)
		HASH_FIND(hh, s->by_stack, &stack_id, sizeof stack_id, e);
	return e;
}

uint32_t vt_upload_site_tensors(const struct vt_upload_sites *s, uint32_t stack_id)
{
	const struct site *e = find(s, stack_id);
	return e ? e->tensors : 0;
}

uint32_t vt_upload_site_most_alive(const struct vt_upload_sites *s, uint32_t stack_id)
{
	const struct site *e = find(s, stack_id);
	return e ? e->most_alive : 0;
}

uint64_t vt_upload_site_span_ns(const struct vt_upload_sites *s, uint32_t stack_id)
{
	const struct site *e = find(s, stack_id);
	return e ? e->t_last - e->t_first : 0;
}

int vt_upload_site_is_loader(const struct vt_upload_sites *s, uint32_t stack_id, uint64_t bytes)
{
	const struct site *e = find(s, stack_id);
	if (!e || e->most_alive < VT_LOADER_TENSORS)
		return 0;
	uint64_t rest = e->bytes > bytes ? e->bytes - bytes : 0;
	return rest * 4 >= bytes;
}

int vt_upload_site_is_feeder(const struct vt_upload_sites *s, uint32_t stack_id)
{
	const struct site *e = find(s, stack_id);
	return e && e->tensors >= VT_FEEDER_TENSORS && e->most_alive < VT_LOADER_TENSORS;
}

int vt_upload_sites_model_loaded(const struct vt_upload_sites *s)
{
	const struct site *e, *tmp;
	HASH_ITER(hh, s->by_stack, e, tmp)
	{
		if (e->most_alive >= VT_MODEL_TENSORS)
			return 1;
	}
	return 0;
}

void vt_upload_sites_free(struct vt_upload_sites *s)
{
	if (!s)
		return;
	struct site *e, *tmp;
	HASH_ITER(hh, s->by_stack, e, tmp)
	{
		HASH_DEL(s->by_stack, e);
		free(e);
	}
	free(s);
}
