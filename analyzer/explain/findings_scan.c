/* One scan of the classified model for the finding rules (see
 * findings_scan.h). */
#include "findings_scan.h"

#include <stdlib.h>
#include <string.h>

#include "model_fold.h"
#include "model_query.h"
#include "nomem.h"

#define MIB (1024ull * 1024ull)

/* Whether the stack that filled bytes names a framework path that makes
 * something other than data (a model loaded, optimizer state restored, a
 * batch pinned and copied): no whole-dataset finding, whatever its size
 * and shape. Only a CONTEXT rule counts; a conversion any caller uses
 * (a MECHANISM rule) says nothing about what the bytes are. */
int vt_findings_not_data(const struct vt_findings_scan *ds, uint32_t proc, uint32_t stack_id)
{
	struct vt_frame_hint h = vt_frame_hint(ds->fe, proc, stack_id);
	return h.strength == VT_FRAME_CONTEXT && h.category != VT_CAT_DATASET;
}

/* What the copies into a pool region brought during training (batches
 * land in the region, so they count in the per-step upload too): blocks
 * refilled, and what was first copied from the second step on. */
static uint64_t uploads_in_training(const struct vt_model *m, const struct vt_proc *p, uint32_t idx)
{
	uint32_t n = 0;
	const struct vt_copy_range *r =
	    m->allocs[idx].flags & VT_AF_PARTIAL_COPIES ? vt_model_ranges(m, idx, &n) : NULL;
	uint64_t sum = 0;
	/* from the second step: a step found without markers may start before
	 * the dataset's own upload */
	uint64_t from = p->step_t[p->nsteps >= 2 ? 1 : 0];
	for (uint32_t i = 0; i < n; i++)
		if (r[i].t_first >= from)
			sum += r[i].total_bytes;
		else if (r[i].copies > 1) /* refilled: all but the first copy */
			sum += r[i].total_bytes - r[i].bytes;
	return sum;
}

/* The same for a tensor, whatever its category (a batch the classifier got
 * wrong still counts): all of it when first filled from the second step on,
 * else its refills. */
static uint64_t tensor_uploads_in_training(const struct vt_model *m, const struct vt_proc *p,
                                           const struct vt_alloc *a)
{
	const struct vt_alloc_copies *cp = vt_model_copies(m, a);
	uint64_t from = p->step_t[p->nsteps >= 2 ? 1 : 0];
	if (cp->t_first_h2d >= from)
		return cp->h2d_bytes;
	return cp->h2d_bytes > a->bytes ? cp->h2d_bytes - a->bytes : 0;
}

/* A folding model's uploads (model_fold.h), each made in a step the
 * folding kept none of, so from the second step on: all their bytes. */
static void folded_uploads(const struct vt_model *m, uint64_t *h2d, uint32_t *steps)
{
	uint32_t ng;
	const struct vt_fold_group *g = vt_fold_groups(m, &ng);
	for (uint32_t i = 0; i < ng; i++) {
		const struct vt_proc *p = &m->procs[g[i].proc];
		if (!g[i].h2d_copies)
			continue;
		if (p->nsteps < 2 || g[i].t_first_h2d < p->step_t[1])
			vt_fold_set_inexact(m, "a folded upload before the second step");
		if (p->nsteps > steps[g[i].device])
			steps[g[i].device] = p->nsteps;
		h2d[g[i].device] += g[i].h2d_bytes;
	}
}

void vt_findings_scan_make(const struct vt_model *m, struct vt_findings_scan *ds)
{
	uint64_t h2d[VT_MAX_DEVICES] = {0};
	uint32_t steps[VT_MAX_DEVICES] = {0}, cap = 0;
	memset(ds, 0, sizeof *ds);
	for (uint32_t i = 0; i < m->nallocs; i++) {
		const struct vt_alloc *a = &m->allocs[i];
		int c = a->category;
		if (c == VT_CAT_DATASET || c == VT_CAT_POOL || c == VT_CAT_PREFETCH) {
			if (ds->n == cap) {
				cap = cap ? cap * 2 : 64;
				uint32_t *v = realloc(ds->idx, cap * sizeof *v);
				if (!v)
					vt_nomem();
				ds->idx = v;
			}
			ds->idx[ds->n++] = i;
		}
		uint64_t h2d_bytes = vt_model_copies(m, a)->h2d_bytes;
		if (a->device == VT_DEVICE_UNKNOWN || !h2d_bytes)
			continue;
		const struct vt_proc *p = &m->procs[a->proc];
		if (p->nsteps > steps[a->device])
			steps[a->device] = p->nsteps;
		if (c == VT_CAT_POOL && p->nsteps)
			h2d[a->device] += uploads_in_training(m, p, i);
		else if (p->nsteps)
			h2d[a->device] += tensor_uploads_in_training(m, p, a);
		else if (c == VT_CAT_PREFETCH || c == VT_CAT_ACTIVATIONS || c == VT_CAT_GRADIENTS)
			h2d[a->device] += h2d_bytes;
	}
	folded_uploads(m, h2d, steps);
	for (int d = 0; d < VT_MAX_DEVICES; d++)
		ds->step_h2d[d] = steps[d] ? h2d[d] / steps[d] : 0;
}

int vt_findings_big_enough(const struct vt_model *m, const struct vt_findings_scan *ds, uint8_t dev,
                           uint64_t bytes)
{
	uint64_t total = vt_model_device_total(m, dev);
	if (bytes < MIB)
		return 0;
	return bytes >= 4 * ds->step_h2d[dev] || (total && bytes * 10 >= total);
}
