/* Allocator regions (pools): a buffer that copies land inside at several
 * offsets, or that holds half a device for the whole run; the chunks mapped
 * next to one; a caching allocator's segments; an allocator growing its
 * regions; tables of samples written a row at a time into such a region;
 * and batch buffers refilled in place (rings). */
#ifndef VT_CLASSIFY_POOLS_H
#define VT_CLASSIFY_POOLS_H

#include "classify_ctx.h"

/* PyTorch's caching allocator asks the driver for multiples of this only
 * (kRoundLarge; its small segments are one of it). */
#define VT_CACHING_ROUND (2ull << 20)

/* gather's per-allocation rules: allocation i (a, facts f) a pool region,
 * or a buffer refilled from the host again and again (a ring). */
void vt_cls_classify_pool(struct ctx *c, uint32_t i, struct vt_alloc *a, struct facts *f);
void vt_cls_classify_ring(struct ctx *c, struct vt_alloc *a, struct facts *f);

/* Whether a was written from the host again and again through the run: a
 * batch buffer reused in place. */
int vt_cls_refilled(const struct ctx *c, const struct vt_alloc *a);

/* Pool regions written from the host a row at a time beside a sibling of
 * as many rows: a table of samples (dataset); then the process's
 * pool_mode again. */
void vt_cls_row_stores(struct ctx *c);

/* Physical chunks mapped next to a pool region's chunk: the same arena. */
void vt_cls_arena_chunks(struct ctx *c);

/* Whether every allocation of device dev is a multiple of 2 MiB, with
 * segments of 2 MiB and 20 MiB: PyTorch's caching allocator (asked once per
 * device, into c->caching_on, which vt_cls_shows_caching_allocator reads). */
int vt_cls_caching_allocator_sizes(const struct ctx *c, int dev);
int vt_cls_shows_caching_allocator(const struct ctx *c, int dev);
/* A 2 MiB or 20 MiB segment the host did not fill. */
int vt_cls_caching_segment(const struct ctx *c, const struct vt_alloc *a, const struct facts *f);

/* Whether device dev's allocations are an allocator's growing regions
 * (powers of two, each at least twice the one before, kept to the end),
 * and whether a is such a region (no single upload filled it whole). */
int vt_cls_growing_regions(const struct ctx *c, int dev);
int vt_cls_growing_region(const struct ctx *c, const struct vt_alloc *a, const struct facts *f);

/* In a job that never trains: its growing regions the host never wrote,
 * made after the host's first upload to the device (the model and inputs
 * sent, the passes begun), hold what the passes computed (no gradient or
 * optimizer state exists to share them): activations. */
void vt_cls_served_regions(struct ctx *c);

/* On each device of devs whose allocations show the allocator
 * (device_shows), the undecided ones that are its regions (is_region) are
 * pools, for reason why. */
void vt_cls_allocator_regions(struct ctx *c, const int *devs,
                              int (*device_shows)(const struct ctx *, int),
                              int (*is_region)(const struct ctx *, const struct vt_alloc *,
                                               const struct facts *),
                              enum reason why);

#endif
