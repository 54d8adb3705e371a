/* State grown step after step (see classify_grown.h). */
#include "classify_grown.h"

#include "model_fold.h"

/* Grown state (vt_cls_mark_recurring) the long-lived rules left unknown. */
static int grown(const struct vt_alloc *a, const struct facts *f)
{
	return f->grown && a->reason == R_LONG_UNKNOWN && f->born >= 0;
}

void vt_cls_grown_state(struct ctx *c, int dev)
{
	/* where the step is: after its gradients (the last batch or gradient
	 * made on the device was a gradient), or not; one pass in time order */
	int after_gradients = 0;
	for (uint32_t i = c->p->alloc_begin; i < c->p->alloc_end; i++) {
		struct vt_alloc *a = &c->m->allocs[i];
		struct facts *f = &c->f[i - c->p->alloc_begin];
		if (f->device != dev)
			continue;
		if (a->category == VT_CAT_GRADIENTS || a->category == VT_CAT_PREFETCH)
			after_gradients = a->category == VT_CAT_GRADIENTS;
		if (!grown(a, f))
			continue;
		/* a folding model keeps no gradient of a folded step */
		if ((uint32_t)f->born >= vt_fold_keep_steps(c->m))
			vt_fold_set_inexact(c->m, "grown state read against folded gradients");
		if (!c->trains)
			set_cat(a, f, VT_CAT_ACTIVATIONS, 50, R_KEPT_OUTPUTS);
		else if (after_gradients)
			set_cat(a, f, VT_CAT_OPTIMIZER, 55, R_GROWN_SLOTS);
		else
			set_cat(a, f, VT_CAT_WEIGHTS, 55, R_GROWN_ROWS);
	}
}
