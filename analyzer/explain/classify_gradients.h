/* What each step makes (the recurring allocations): batches from the host,
 * parameters gathered from their shards, gradients, and the forward pass's
 * activations (those of a gradient's size told apart by when they are
 * freed); a folding model's groups decided alike. Then the buffers the
 * gradients are copied into every step (gradient buckets), and those filled
 * from a bucket (communication buffers). */
#ifndef VT_CLASSIFY_GRADIENTS_H
#define VT_CLASSIFY_GRADIENTS_H

#include "classify_ctx.h"

/* The recurring allocations of device dev, and its folded groups. */
void vt_cls_recurring_ones(struct ctx *c, int dev, struct size_count *sizes);
void vt_cls_recurring_groups(struct ctx *c, int dev, struct size_count *sizes);

/* On a device with optimizer state and no visible gradient, the step's
 * largest allocation, made once a step, is the temp buffer the gradients
 * live in (XLA's): a pool. After the per-step allocations are decided. */
void vt_cls_temp_buffers(struct ctx *c, int dev, struct size_count *sizes);

/* Long-lived buffers of device dev written in most steps from a gradient:
 * after the per-step gradients are decided. */
void vt_cls_gradient_buckets(struct ctx *c, int dev);

/* Buffers of any device written in most steps from a gradient bucket:
 * after every device's buckets are known. */
void vt_cls_comm_buffers(struct ctx *c);

#endif
