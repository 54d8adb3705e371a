/* Classification (DESIGN.md "Classification"): each allocation of a finished
 * model gets a category, a reason and a confidence; each process gets its
 * allocator mode (per-tensor or pool). Steps are found first (steps.h).
 *
 * The evidence, per process and device:
 *  - recurring: allocations of the same size and site made in most steps;
 *    long-lived: the others;
 *  - host-filled: at least half of the bytes arrived by host-to-device copies;
 *  - a gradient twin: a recurring, not host-filled allocation of the same
 *    size, every step; or a recurring flat bucket whose size is the sum of a
 *    run of consecutive long-lived allocations (DDP, XLA);
 *  - weights: the long-lived allocations with a twin, the first ones of each
 *    size (optimizer slots come after the weights they mirror, even when
 *    they exist before the first step as in JAX);
 *  - optimizer: long-lived, same size as a weight, allocated after it;
 *  - dataset: long-lived, host-filled, no twin;
 *  - prefetch: recurring, host-filled; gradients: recurring, a weight's size
 *    or the flat bucket; activations: the other recurring ones;
 *  - pool: a region that copies land inside at several offsets (not one
 *    contiguous upload), or that holds half a device from start to end.
 */
#ifndef VT_CLASSIFY_H
#define VT_CLASSIFY_H

#include "model.h"

/* Run steps + classification over the whole model (idempotent). */
void vt_classify(struct vt_model *m);

/* An allocation that is a pool region (valid after vt_classify). */
static inline int vt_alloc_is_pool(const struct vt_alloc *a)
{
	return a->category == VT_CAT_POOL;
}

#endif
