/* Recurrence: the (size, device) counters, and which allocations are made
 * again step after step (recurring), within one step only (transient), or
 * kept step after step; a folding model's groups counted alike. */
#ifndef VT_CLASSIFY_RECURRENCE_H
#define VT_CLASSIFY_RECURRENCE_H

#include "classify_ctx.h"

struct vt_fold_group;

/* The index in c->keys of the (size, device) counter, made on first sight. */
uint32_t vt_cls_key_index(struct ctx *c, uint64_t bytes, uint8_t device);

/* Counts the keys, then sets each allocation's recurring, transient and
 * kept facts. */
void vt_cls_mark_recurring(struct ctx *c);

/* Whether a folding model's group recurs as its allocations would;
 * *transient_only: only as made and freed within one step. */
int vt_cls_group_recurs(struct ctx *c, const struct vt_fold_group *g, int *transient_only);

void vt_cls_free_keys(struct ctx *c);

#endif
