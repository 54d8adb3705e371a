/* Sub-allocation inside driver allocations, with part truth:
 *   vtc_region   one range carved first-fit (TensorFlow's BFC region, an
 *                XLA arena, one caching-allocator segment)
 *   vtc_cache    PyTorch's CUDACachingAllocator shape: blocks <= 1 MiB in
 *                2 MiB segments, 1..10 MiB in 20 MiB segments, larger ones
 *                in their own segment rounded to 2 MiB; freed blocks stay
 *                cached in their segment and are reused; segments go back
 *                to the driver only at vtc_cache_empty (empty_cache / exit)
 *                or, wholly free ones, at vtc_cache_release (what the
 *                allocator does before it retries a refused cudaMalloc).
 * A region remembers which categories it ever held: vtc_region_settle
 * records it as that category when it held one kind, else as pool. */
#ifndef VTC_POOL_H
#define VTC_POOL_H

#include "vtc.h"

struct vtc_block {
	uint64_t off, size;
	int used, cat;
};

struct vtc_region {
	int dev, record, small;
	CUdeviceptr base;
	uint64_t size;
	unsigned cats; /* bit per category ever carved here */
	struct vtc_block *b;
	int n, cap;
};

/* region over memory the caller allocated (record: its truth record) */
void vtc_region_init(struct vtc_region *r, int dev, CUdeviceptr base, uint64_t size, int record);
/* 0 when full */
CUdeviceptr vtc_region_take(struct vtc_region *r, uint64_t bytes, enum vtc_cat cat);
int vtc_region_give(struct vtc_region *r, CUdeviceptr p); /* 1 if p was in r */
void vtc_region_settle(struct vtc_region *r);

#define VTC_CACHE_MAX_SEGMENTS 256
struct vtc_cache {
	int dev;
	struct vtc_region seg[VTC_CACHE_MAX_SEGMENTS];
	int nseg;
};

void vtc_cache_init(struct vtc_cache *c, int dev);
CUdeviceptr vtc_cache_alloc(struct vtc_cache *c, uint64_t bytes, enum vtc_cat cat);
/* as vtc_cache_alloc, but when the driver refuses the segment: every wholly
 * free segment goes back (release_cached_blocks) and the driver is asked once
 * more; 0 when it refuses again (each refusal recorded as failed_alloc) */
CUdeviceptr vtc_cache_try_alloc(struct vtc_cache *c, uint64_t bytes, enum vtc_cat cat);
void vtc_cache_free(struct vtc_cache *c, CUdeviceptr p);
void vtc_cache_release(struct vtc_cache *c); /* cuMemFree every segment with no block in use */
void vtc_cache_empty(struct vtc_cache *c);   /* settle and cuMemFree every segment */
void vtc_cache_settle(struct vtc_cache *c);  /* settle every segment, freeing none (exit) */

#endif
