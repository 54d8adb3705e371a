/* State a job grows as it trains: allocations of one size made in most
 * steps and kept to the end (rows of a sparse embedding made when their
 * ids first come, with the optimizer's slots for them). Nothing per step
 * mirrors them, so the twin rules leave them unknown; where they are made
 * in the step says whose they are. */
#ifndef VT_CLASSIFY_GROWN_H
#define VT_CLASSIFY_GROWN_H

#include "classify_ctx.h"

/* After the gradients and batches of device dev are known: its grown state
 * made after a batch (before the forward pass) is the model's, made after
 * a gradient (in the optimizer's update) the optimizer's. */
void vt_cls_grown_state(struct ctx *c, int dev);

#endif
