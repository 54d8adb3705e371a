/* State handed from step to step: a jitted step without buffer donation
 * (JAX's default) returns new parameter and optimizer-state buffers every
 * step, and the old ones die in the next, so no weight is long-lived at any
 * address and the twin rules see none. */
#ifndef VT_CLASSIFY_CARRIED_H
#define VT_CLASSIFY_CARRIED_H

#include "classify_ctx.h"

/* The sizes of device dev whose generations are handed on: the first of a
 * size in each generation weights, later ones optimizer state. */
void vt_cls_carried_state(struct ctx *c, int dev);

#endif
