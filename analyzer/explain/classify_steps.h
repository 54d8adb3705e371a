/* The steps the rules read: the process's, or a device's own where two or
 * more devices are driven by threads out of phase with each other (each
 * rank's steps are its own), and the step of each allocation and free. */
#ifndef VT_CLASSIFY_STEPS_H
#define VT_CLASSIFY_STEPS_H

#include "classify_ctx.h"

/* Gives the devices that need them their own steps (c->own). */
void vt_cls_own_steps(struct ctx *c);
void vt_cls_free_own_steps(struct ctx *c);

/* The step table of device dev: its own, or the process's. */
const struct vt_step_table *vt_cls_steps_of(const struct ctx *c, int dev);

/* The step of time t: walking cursor *cur over allocations in time order,
 * or forward from the step of the allocation (from) for its free. */
int vt_cls_step_cursor(const struct vt_step_table *st, uint32_t *cur, uint64_t t);
int vt_cls_step_from(const struct vt_step_table *st, int from, uint64_t t);

#endif
