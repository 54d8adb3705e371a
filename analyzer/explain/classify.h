/* Classification (docs/design/classification.md): each allocation of a finished
 * model gets a category, a reason and a confidence; each process gets its
 * allocator mode (per-tensor or pool). Steps are found first (steps.h).
 *
 * The evidence, per process and device:
 *  - recurring: allocations of a size made in most steps (and at least 3),
 *    each living through less than 3/4 of the steps (one still live at the
 *    end only if most of its size were freed); long-lived: the others. The call site is not part of
 * the key: frameworks allocate everything through the same frames;
 *  - host-filled: at least half of the bytes arrived by host-to-device copies;
 *  - a gradient twin: a recurring, not host-filled allocation of the same
 *    size, every step; or a recurring flat bucket whose size is the sum of a
 *    run of consecutive long-lived allocations (DDP, XLA);
 *  - weights: the long-lived allocations with a twin, the first ones of each
 *    size, as many as the step makes gradients of it (optimizer slots come
 *    after the weights they mirror, even when they exist before the first
 *    step as in JAX); when activations share the size (square layers) and
 *    the optimizer state was made during training, the ones made before it;
 *  - optimizer: long-lived, same size as a weight, allocated after it;
 *  - dataset: long-lived, host-filled, no twin, not refilled, its upload
 *    site no loader of many tensors (upload_sites.h); from a loader site:
 *    weights (frozen or inference), unsure; refilled in place: prefetch;
 *  - twins are believed only when a flat bucket was found or most tensors
 *    made before training have one (or training made slots of their size
 *    early, a few per tensor);
 *  - prefetch: recurring, host-filled; gradients: recurring, a weight's size
 *    or the flat bucket (the last ones of that size in a step when
 *    activations share it); activations: the other recurring ones;
 *  - pool: a region that copies land inside at several offsets (not one
 *    contiguous upload), or that holds half a device from start to end;
 *  - the step the job stopped in (made in the last step, still live at the
 *    end, e.g. a SIGKILL between a batch's allocation and its upload): its
 *    evidence is cut short, so it takes the category that nine in ten of its
 *    twins from earlier steps share, twins matched by (stack, size, device);
 *    never without a stack.
 * Each decision records its reason (static text) and a confidence.
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

/* The classifier's reason for a's category (static text). */
const char *vt_alloc_reason(const struct vt_alloc *a);

/* a is a caching allocator's small-tensor segment (PyTorch's 2 MiB and
 * 20 MiB segments: tensors of up to 10 MiB packed inside, larger ones in
 * segments of their own). */
int vt_alloc_is_caching_segment(const struct vt_alloc *a);

/* The other categories the same evidence fits, most likely first, each with
 * its share of the confidence the verdict leaves (100 - a->confidence). */
struct vt_alternative {
	uint8_t category;   /* enum vt_category */
	uint8_t confidence; /* 0..100 */
};
uint32_t vt_alloc_alternatives(const struct vt_alloc *a, struct vt_alternative *out, uint32_t max);

/* Confidence below which a verdict is shown as a guess (the text report's
 * "dataset or weights?"), and findings built on it are not raised. */
#define VT_CONFIDENT 70

/* Bytes a job feeds a device per step from the host when it streams its
 * input, at least: a batch (token ids of a small batch are tens of KiB),
 * not the scalars a trainer sends with a step (a learning rate, a loss
 * scale, a step counter). A job that streams its batches does not, as a
 * rule, also slice them out of data it keeps on the device. */
#define VT_STREAMED_BATCH_BYTES (16u * 1024u)

/* Whether pool region i takes the job's batches from the host: a part of it
 * refilled again and again (3 copies or more, 3 batches' bytes in all). */
int vt_region_takes_batches(const struct vt_model *m, uint32_t i);

#endif
