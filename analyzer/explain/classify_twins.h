/* Twins: gradients and the weights they mirror. A backward pass makes a
 * gradient for every trained weight, of its size, every step; an optimizer
 * with state makes its slots of that size during training. The per-size
 * counts of a device (struct size_count) say which long-lived tensors are
 * weights: those with a twin made every step, a run of them that adds up
 * to a flat gradient bucket, or those whose gradients and slots were kept
 * between steps; a size that got no optimizer state where others did is
 * frozen. */
#ifndef VT_CLASSIFY_TWINS_H
#define VT_CLASSIFY_TWINS_H

#include "classify_ctx.h"

/* The per-size counts of device dev: recurring allocations, how many each
 * step makes, long-lived ones (the n of ll) made before and during
 * training; a folding model's counts merged in. */
void vt_cls_count_sizes(struct ctx *c, int dev, struct size_count **sizes, const uint32_t *ll,
                        uint32_t n);
/* A size's entry, lookup only: count_sizes entered every size the rules ask about. */
struct size_count *vt_cls_size_find(struct size_count *sizes, uint64_t bytes);
/* How many of this size a step makes: the most common count. */
uint32_t vt_cls_per_step(const struct size_count *s);
void vt_cls_free_sizes(struct size_count **sizes);

/* Whether twins are evidence here at all: not where only a minority of the
 * tensors made before training have one (an inference job's activations
 * sharing a weight's size). */
int vt_cls_twins_believable(struct ctx *c, struct size_count *sizes, const uint32_t *ll,
                            uint32_t n);

/* The rules over the device's long-lived allocations ll (n of them), in
 * this order: a flat bucket's weights (1: found), weights whose gradients
 * and slots were kept between steps, weights with a per-step twin and
 * frozen sizes. */
int vt_cls_find_flat_bucket(struct ctx *c, struct size_count *sizes, const uint32_t *ll,
                            uint32_t n);
void vt_cls_weights_by_kept_twins(struct ctx *c, struct size_count *sizes, const uint32_t *ll,
                                  uint32_t n, int two_may_be_kept);
void vt_cls_weights_by_twin(struct ctx *c, struct size_count *sizes, const uint32_t *ll,
                            uint32_t n);

/* Written by device-to-device copies in most steps (a bucket, a
 * communication buffer): what a weight, updated in place, is not. */
int vt_cls_rewritten_on_device(const struct ctx *c, const struct vt_alloc *a);

/* The allocation of this process that the first device-to-device copy into
 * a came from; VT_NO_INDEX when none did (or another process's did). */
uint32_t vt_cls_d2d_source(const struct ctx *c, const struct vt_alloc *a);
/* vt_cls_d2d_source, where device-to-device copies wrote nine tenths of a
 * at least: who wrote its bytes. */
uint32_t vt_cls_d2d_filled_from(const struct ctx *c, const struct vt_alloc *a);

/* Whether long-lived allocation i (facts f) is a model's parameters packed
 * into one flat buffer: filled, most of its bytes, by device-to-device
 * copies from host-filled tensors gone before training. */
int vt_cls_flattened_weights(const struct ctx *c, uint32_t i, const struct facts *f);

#endif
