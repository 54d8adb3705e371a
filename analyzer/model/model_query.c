/* The model after replay: peaks per device and queries of the state at any
 * moment (see model.h). */
#include "model_query.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model_hash.h"
#include "model_internal.h"
#include "nomem.h"

int vt_moment_cmp(const struct vt_moment *a, const struct vt_moment *b)
{
	if (a->t_ns != b->t_ns)
		return a->t_ns < b->t_ns ? -1 : 1;
	if (a->proc != b->proc)
		return a->proc < b->proc ? -1 : 1;
	if (a->seq != b->seq)
		return a->seq < b->seq ? -1 : 1;
	return 0;
}

struct vt_moment vt_alloc_born(const struct vt_model *m, const struct vt_alloc *a)
{
	(void)m;
	return (struct vt_moment){a->t_alloc, a->proc, a->seq_alloc};
}

struct vt_moment vt_alloc_died(const struct vt_model *m, const struct vt_alloc *a)
{
	(void)m;
	if (a->t_free == VT_T_NEVER)
		return (struct vt_moment){VT_T_NEVER, UINT32_MAX, VT_T_NEVER};
	return (struct vt_moment){a->t_free, a->proc, a->seq_free};
}

struct vt_moment vt_moment_at_time(uint64_t t_ns)
{
	return (struct vt_moment){t_ns, UINT32_MAX, UINT64_MAX - 1};
}

struct vt_moment vt_moment_at_seq(uint32_t proc, uint64_t seq, uint64_t t_ns)
{
	return (struct vt_moment){t_ns, proc, seq};
}

void vt_proc_walk_begin(const struct vt_proc *p, struct vt_proc_walk *w)
{
	*w = (struct vt_proc_walk){p->alloc_begin, p->free_begin};
}

int vt_proc_walk_next(const struct vt_model *m, const struct vt_proc *p, struct vt_proc_walk *w,
                      uint32_t *idx, int *is_free)
{
	const struct vt_alloc *a = w->ai < p->alloc_end ? &m->allocs[w->ai] : NULL;
	const struct vt_alloc *f = w->fi < p->free_end ? &m->allocs[m->free_order[w->fi]] : NULL;
	if (!a && !f)
		return 0;
	*is_free = f && (!a || f->seq_free <= a->seq_alloc);
	*idx = *is_free ? m->free_order[w->fi++] : w->ai++;
	return 1;
}

struct vt_moment vt_moment_end(const struct vt_model *m)
{
	return vt_moment_at_time(m->end_t_ns);
}

struct vt_moment vt_moment_peak(const struct vt_model *m, int dev)
{
	int best = -1;
	if (dev >= 0 && dev < VT_MAX_DEVICES) {
		best = dev;
	} else {
		for (int d = 0; d < VT_MAX_DEVICES; d++)
			if (m->devices[d].seen &&
			    (best < 0 || m->devices[d].peak_bytes > m->devices[best].peak_bytes))
				best = d;
	}
	if (best < 0 || m->devices[best].peak_bytes == 0)
		return vt_moment_end(m);
	const struct vt_device *d = &m->devices[best];
	return (struct vt_moment){d->peak_t_ns, d->peak_proc, d->peak_seq};
}

int vt_alloc_live_at(const struct vt_model *m, const struct vt_alloc *a, const struct vt_moment *at)
{
	/* Every report asks this of every allocation, several times: the times
	 * decide it unless one ties with the moment's (then process and seq do) */
	if (a->t_alloc > at->t_ns || a->t_free < at->t_ns)
		return 0;
	if (a->t_alloc < at->t_ns && a->t_free > at->t_ns)
		return 1;
	struct vt_moment born = vt_alloc_born(m, a), died = vt_alloc_died(m, a);
	return vt_moment_cmp(&born, at) <= 0 && vt_moment_cmp(at, &died) < 0;
}

int vt_model_for_each_live(const struct vt_model *m, const struct vt_moment *at, int dev,
                           vt_alloc_fn fn, void *ctx)
{
	for (uint32_t i = 0; i < m->nallocs; i++) {
		const struct vt_alloc *a = &m->allocs[i];
		if (!(a->flags & VT_AF_CHARGED) || (dev >= 0 && a->device != dev))
			continue;
		if (!vt_alloc_live_at(m, a, at))
			continue;
		int rc = fn(m, i, a, ctx);
		if (rc)
			return rc;
	}
	return 0;
}

struct sum_ctx {
	uint64_t total;
	uint64_t *by_cat;
};

static int sum_live(const struct vt_model *m, uint32_t idx, const struct vt_alloc *a, void *vctx)
{
	struct sum_ctx *c = vctx;
	(void)m;
	(void)idx;
	c->total += a->bytes;
	if (c->by_cat)
		c->by_cat[a->category < VT_CAT_COUNT ? a->category : VT_CAT_UNKNOWN] += a->bytes;
	return 0;
}

uint64_t vt_model_live_bytes(const struct vt_model *m, const struct vt_moment *at, int dev)
{
	struct sum_ctx c = {0, NULL};
	vt_model_for_each_live(m, at, dev, sum_live, &c);
	return c.total;
}

void vt_model_bytes_by_category(const struct vt_model *m, const struct vt_moment *at, int dev,
                                uint64_t out[VT_CAT_COUNT])
{
	memset(out, 0, VT_CAT_COUNT * sizeof out[0]);
	struct sum_ctx c = {0, out};
	vt_model_for_each_live(m, at, dev, sum_live, &c);
}

int vt_model_parse_at(const struct vt_model *m, const char *spec, struct vt_moment *out,
                      char *label, size_t labellen)
{
	if (!spec || !strcmp(spec, "peak")) {
		*out = vt_moment_peak(m, -1);
		snprintf(label, labellen, "peak");
		return 0;
	}
	if (!strcmp(spec, "end")) {
		*out = vt_moment_end(m);
		snprintf(label, labellen, "end");
		return 0;
	}
	char *endp;
	errno = 0;
	double s = strtod(spec, &endp);
	if (errno || endp == spec || *endp || !isfinite(s) || s < 0 || s > 1e9)
		return -1;
	*out = vt_moment_at_time((uint64_t)(s * 1e9 + 0.5));
	snprintf(label, labellen, "t=%ss", spec);
	return 0;
}

int vt_model_device_used(const struct vt_model *m, int dev)
{
	if (dev < 0 || dev >= VT_MAX_DEVICES || !m->devices[dev].seen)
		return 0;
	if (m->devices[dev].alloc_calls)
		return 1;
	for (int d = 0; d < VT_MAX_DEVICES; d++)
		if (m->devices[d].alloc_calls)
			return 0;
	return 1;
}

uint64_t vt_model_device_total(const struct vt_model *m, int dev)
{
	return dev >= 0 && dev < VT_MAX_DEVICES ? m->devices[dev].total_bytes : 0;
}

/* ---- stacks and ranges ------------------------------------------------ */

const struct vt_model_stack *vt_model_stack(const struct vt_model *m, uint32_t proc, uint32_t id)
{
	if (proc >= m->nprocs || id == 0)
		return NULL;
	struct vt_stack_entry *e;
	HASH_FIND(hh, m->procs[proc].stacks, &id, sizeof id, e);
	return e ? &e->s : NULL;
}

const struct vt_copy_range *vt_model_ranges(const struct vt_model *m, uint32_t alloc, uint32_t *n)
{
	*n = 0;
	if (!m->finished || !m->nranges)
		return NULL;
	/* lower bound of alloc in the sorted ranges */
	uint32_t lo = 0, hi = m->nranges;
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		if (m->ranges[mid].alloc < alloc)
			lo = mid + 1;
		else
			hi = mid;
	}
	uint32_t end = lo;
	while (end < m->nranges && m->ranges[end].alloc == alloc)
		end++;
	*n = end - lo;
	return *n ? &m->ranges[lo] : NULL;
}

uint32_t vt_model_frame_fanin(const struct vt_model *m, uint32_t proc, uint64_t ip)
{
	if (proc >= m->nprocs)
		return 0;
	struct vt_frame_fanin *f;
	HASH_FIND(hh, m->procs[proc].fanin, &ip, sizeof ip, f);
	return f ? f->stacks : 0;
}

uint32_t vt_alloc_fill_stack(const struct vt_model *m, const struct vt_alloc *a)
{
	uint32_t h2d = vt_model_copies(m, a)->h2d_stack_id;
	return h2d ? h2d : a->stack_id;
}

uint64_t vt_alloc_data_bytes(const struct vt_model *m, const struct vt_alloc *a)
{
	uint64_t h2d = vt_model_copies(m, a)->h2d_bytes;
	if (a->flags & VT_AF_PARTIAL_COPIES) {
		/* each offset's largest copy once: an array written again in
		 * place is still one array */
		uint32_t n;
		const struct vt_copy_range *r = vt_model_ranges(m, (uint32_t)(a - m->allocs), &n);
		h2d = 0;
		for (uint32_t i = 0; i < n; i++)
			h2d += r[i].bytes;
	}
	return h2d && h2d < a->bytes ? h2d : a->bytes;
}

const struct vt_copy_range *vt_alloc_only_range(const struct vt_model *m, const struct vt_alloc *a)
{
	if (!(a->flags & VT_AF_PARTIAL_COPIES))
		return NULL;
	uint32_t n;
	const struct vt_copy_range *r = vt_model_ranges(m, (uint32_t)(a - m->allocs), &n);
	return n == 1 && r[0].total_bytes == vt_model_copies(m, a)->h2d_bytes ? r : NULL;
}
