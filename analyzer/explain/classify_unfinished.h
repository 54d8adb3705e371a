/* The step the job stopped in: its allocations still live at the end have
 * their evidence cut short (a batch buffer allocated but not yet uploaded
 * looks like a gradient of its size), so they take the category their twins
 * from earlier steps share (same stack, size and device). */
#ifndef VT_CLASSIFY_UNFINISHED_H
#define VT_CLASSIFY_UNFINISHED_H

#include "classify_ctx.h"

/* After every other rule: the allocations of the unfinished step. */
void vt_cls_unfinished_step(struct ctx *c);

#endif
