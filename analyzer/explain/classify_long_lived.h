/* The long-lived allocations of a device the twin rules left: decided by
 * the stacks' names, by who wrote their bytes (parameters flattened into
 * one buffer), by their upload site (a model loaded tensor by tensor), by
 * how the job uses them (data or frozen weights), by the weights they
 * mirror; else optimizer slots, early weights, a caching allocator's
 * activations or unknown. A device that never trains gets serving buffers
 * (caches, workspaces, outputs) instead of weights made on the device. */
#ifndef VT_CLASSIFY_LONG_LIVED_H
#define VT_CLASSIFY_LONG_LIVED_H

#include "classify_ctx.h"

/* Undecided long-lived allocations of device dev, in time order, into out:
 * how many. */
uint32_t vt_cls_long_lived(const struct ctx *c, int dev, uint32_t *out);

/* What the device's rules read in c (weights_loaded_t, trains): when its
 * weights were last filled from the host (0: never), and whether anything
 * trains on it (the twin rules found gradients or optimizer slots). */
uint64_t vt_cls_weights_loaded_t(const struct ctx *c, int dev);
int vt_cls_trains(struct size_count *sizes);

/* What the twin rules left of the n allocations of ll. */
void vt_cls_rest_of_long_lived(struct ctx *c, struct size_count *sizes, const uint32_t *ll,
                               uint32_t n);

/* Of the n allocations of ll that only their age explained (R_EARLY_WEIGHTS,
 * R_LONG_UNKNOWN), those made on the device from a dataset array while it
 * lived (a cast, a normalisation) and outliving it are the dataset. */
void vt_cls_converted_datasets(struct ctx *c, const uint32_t *ll, uint32_t n);

/* On a device of a job that trains where allocations stop after the first
 * steps (an allocator that keeps what it took: Paddle's auto-growth,
 * MXNet's pooled storage), the unexplained long-lived chunks made in those
 * first steps hold the passes' tensors: activations, not confident. */
void vt_cls_warmed_cache(struct ctx *c, int dev);

/* On a device where nothing trains and whose weights came from the host:
 * the long-lived buffers made on it (R_EARLY_WEIGHTS) are state mirroring
 * the weights, outputs, or caches and workspaces. */
void vt_cls_serving_buffers(struct ctx *c, int dev);

/* With a flat weights buffer on the device (R_FLATTENED), the sizes of the
 * parameters packed into it are gradient sizes. */
void vt_cls_flattened_parameter_sizes(struct ctx *c, int dev, struct size_count *sizes);

#endif
