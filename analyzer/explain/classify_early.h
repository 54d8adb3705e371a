/* Long-lived buffers a job made on a device before its steps, never
 * written from the host, where nothing else on the device shows a weight
 * (no gradient twin, no loader, no upload): a model initialised on the
 * device with its optimizer state, or memory the job fills itself. */
#ifndef VT_CLASSIFY_EARLY_H
#define VT_CLASSIFY_EARLY_H

#include "classify_ctx.h"

/* After the long-lived rules of device dev: where no allocation of it is a
 * weight by evidence other than its age, its buffers made before the first
 * step (R_EARLY_WEIGHTS) are a model and its state when they come in
 * repeated sizes, else working memory. */
void vt_cls_unproven_weights(struct ctx *c, int dev);

#endif
