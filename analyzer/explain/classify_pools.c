/* Allocator regions (pools), see classify_pools.h. */
#include "classify_pools.h"

#include <stdlib.h>

#include "model_fold.h"
#include "model_query.h"
#include "steps.h"

/* Copies that tile the allocation from offset 0, once each: a large tensor
 * uploaded in chunks, not an allocator region. */
static int one_contiguous_upload(const struct vt_copy_range *r, uint32_t n, uint64_t bytes)
{
	uint64_t next = 0;
	for (uint32_t i = 0; i < n; i++) {
		if (r[i].copies != 1 || r[i].offset != next)
			return 0;
		next = r[i].offset + r[i].bytes;
	}
	return next * 10 >= bytes * 9;
}

/* Uploads at several offsets make a region of an allocation only where
 * they fill a share of it: a caching segment or an arena holds the tensors
 * loaded into it, while a few block tables written into a 7 GiB KV cache
 * (0.01 % of it) say nothing of what the rest holds. */
#define UPLOADED_SHARE_DIV 64

static int looks_like_pool(const struct ctx *c, uint32_t idx)
{
	const struct vt_alloc *a = &c->m->allocs[idx];
	uint32_t n = 0;
	const struct vt_copy_range *r =
	    a->flags & VT_AF_PARTIAL_COPIES ? vt_model_ranges(c->m, idx, &n) : NULL;
	/* an allocator keeps its regions; a buffer freed soon after a few
	 * copies into it is scratch (XLA's autotuner writes the two red zones
	 * of each RedzoneAllocator buffer: 3 such "pools" on an H200 made a
	 * --per-tensor JAX run read as pooled); counted in events: a caching
	 * allocator's segments made after a slow first upload were "freed
	 * soon" by the clock on a loaded machine */
	int kept = a->t_free == VT_T_NEVER || lifetime_events(c->p, a) * 10 >= c->span_events;
	if (n >= 2 && kept && !one_contiguous_upload(r, n, a->bytes) &&
	    vt_alloc_data_bytes(c->m, a) * UPLOADED_SHARE_DIV >= a->bytes)
		return 1;
	/* a block of it refilled again and again, the rest used otherwise: an
	 * allocator's segment handing the same block to each batch (PyTorch's
	 * caching allocator), kept or not */
	for (uint32_t i = 0; i < n; i++)
		if (r[i].copies >= 3 && r[i].bytes * 2 <= a->bytes)
			return 1;
	uint64_t total = vt_model_device_total(c->m, a->device);
	/* a preallocated arena (XLA's 75 %): half a device, held start to end */
	return total && a->bytes * 2 >= total && lifetime(c->m, a) * 10 >= c->span_ns * 9 &&
	       vt_model_copies(c->m, a)->h2d_bytes < a->bytes / 2;
}

/* The VMM handle mapped right before or after handle `a`, that the
 * allocator-region rules made a pool? */
static int next_to_pool_chunk(const struct ctx *c, const struct vt_alloc *a)
{
	uint64_t at = vt_model_copies(c->m, a)->mapped_at;
	if (!at)
		return 0;
	for (uint32_t i = c->p->alloc_begin; i < c->p->alloc_end; i++) {
		const struct vt_alloc *b = &c->m->allocs[i];
		uint64_t b_at = vt_model_copies(c->m, b)->mapped_at;
		if (b == a || !(b->flags & VT_AF_HANDLE) || b->category != VT_CAT_POOL || !b_at ||
		    b->device != a->device)
			continue;
		if (b_at + b->bytes == at || at + a->bytes == b_at)
			return 1;
	}
	return 0;
}

/* Freed in the step it was made in, before the job's teardown. */
static int released_within_step(const struct facts *f)
{
	return f->freed && !f->torn_down && f->born >= 0 && f->died == f->born;
}

/* Physical chunks mapped back to back into one reservation make one arena
 * (XLA's GpuVirtualMemAllocator, PyTorch's expandable segments): a chunk
 * next to one that is an allocator's region is part of that region too,
 * whatever it held at the peak, unless the host filled it (then what filled
 * it says what it is). Where a chunk sits is evidence no size can
 * fake. Repeated until no chunk joins (an arena grows one chunk at a time). */
void vt_cls_arena_chunks(struct ctx *c)
{
	int joined = 1;
	while (joined) {
		joined = 0;
		for (uint32_t i = c->p->alloc_begin; i < c->p->alloc_end; i++) {
			struct vt_alloc *a = &c->m->allocs[i];
			struct facts *f = &c->f[i - c->p->alloc_begin];
			/* a chunk the host filled is judged by what filled it; one
			 * mapped and released within a step held that step's
			 * temporaries (anything kept would have kept it mapped) */
			if (!(a->flags & VT_AF_HANDLE) || !f->charged || f->host_filled ||
			    released_within_step(f) || a->category == VT_CAT_POOL ||
			    !next_to_pool_chunk(c, a))
				continue;
			set_cat(a, f, VT_CAT_POOL, 75, R_ARENA_CHUNK);
			joined = 1;
		}
	}
}

/* Whether a folding model folded, on device dev of this process, an
 * allocation whose size is not a multiple of `unit` (0: any allocation). */
static int folded_size_on(const struct ctx *c, int dev, uint64_t unit)
{
	uint32_t ng;
	const struct vt_fold_group *g = vt_fold_groups(c->m, &ng);
	for (uint32_t i = 0; i < ng; i++)
		if (g[i].proc == c->proc && g[i].device == dev && (!unit || g[i].bytes % unit))
			return 1;
	return 0;
}

#define CACHING_SMALL_SEGMENT VT_CACHING_ROUND
#define CACHING_LARGE_SEGMENT (20ull << 20)

/* cuMemAllocAsync and cuMemAllocFromPoolAsync: the driver's stream-ordered
 * pool, a second allocator beside a framework's (DALI's buffers next to
 * PyTorch's segments), whose sizes say nothing of the caching allocator's. */
static int stream_ordered(const struct vt_alloc *a)
{
	return a->kind == VT_ALLOC_ASYNC || a->kind == VT_ALLOC_POOL;
}

/* PyTorch's caching allocator (c10/cuda/CUDACachingAllocator.cpp) asks the
 * driver only for segments of three shapes: 2 MiB (kSmallBuffer) for
 * tensors up to 1 MiB, 20 MiB (kLargeBuffer) for tensors up to 10 MiB, and
 * larger tensors rounded up to 2 MiB (kRoundLarge). A device whose every
 * allocation is a multiple of 2 MiB, with segments of both fixed sizes,
 * shows that allocator: a per-tensor job would have its biases, scalars and
 * odd-sized activations at the driver. Its 2 MiB and 20 MiB segments hold
 * many tensors each: pools, whatever one tensor in them happens to do,
 * unless the host filled one whole in one upload (then that upload says
 * what it is). The larger ones hold one tensor each until freed and are
 * left to the other rules. */
int vt_cls_caching_allocator_sizes(const struct ctx *c, int dev)
{
	uint32_t small = 0, large = 0;
	for (uint32_t i = c->p->alloc_begin; i < c->p->alloc_end; i++) {
		const struct vt_alloc *a = &c->m->allocs[i];
		const struct facts *f = &c->f[i - c->p->alloc_begin];
		if (f->device != dev || !f->charged || (a->flags & VT_AF_HANDLE) ||
		    stream_ordered(a))
			continue;
		if (a->bytes % VT_CACHING_ROUND)
			return 0;
		small += a->bytes == CACHING_SMALL_SEGMENT;
		large += a->bytes == CACHING_LARGE_SEGMENT;
	}
	if (!small || !large)
		return 0;
	/* a folding model's per-step allocations count too, but a folded group
	 * does not say whether it was stream-ordered: the full model decides */
	if (folded_size_on(c, dev, VT_CACHING_ROUND)) {
		vt_fold_set_inexact(c->m,
		                    "a folded allocation of an odd size beside caching segments");
		return 0;
	}
	return 1;
}

int vt_cls_shows_caching_allocator(const struct ctx *c, int dev)
{
	return c->caching_on[dev];
}

/* A 2 MiB or 20 MiB segment the host did not fill. */
int vt_cls_caching_segment(const struct ctx *c, const struct vt_alloc *a, const struct facts *f)
{
	(void)c;
	return !(a->flags & VT_AF_HANDLE) && !f->host_filled && !stream_ordered(a) &&
	       (a->bytes == CACHING_SMALL_SEGMENT || a->bytes == CACHING_LARGE_SEGMENT);
}

/* An allocator that grows (TensorFlow's and XLA's BFC allocator with
 * allow_growth or without preallocation) leaves a telling trace at the
 * driver: every allocation of the device a power of two of at least 1 MiB,
 * three or more, all kept to the end, each at least the region size the
 * allocator had reached. Extend() asks for that size, doubled until the
 * request fits; it doubles the size for the next region only when it did
 * not have to (so 2, 8, 16, 16, 64, 64 MiB: a 5 MiB request made the
 * second 8 MiB, and the next region 8 MiB or more). The region size
 * starts at 2 MiB, so the first may have grown too (4, 4, 8 MiB: a 3 MiB
 * request first). Tensors of a job that allocates per tensor repeat
 * sizes, shrink, or are freed. Each such region is a pool, unless one upload
 * filled it whole (then that upload says what it is). */
#define GROWING_REGION_MIN (1ull << 20)
#define GROWING_REGION_FIRST (2ull << 20) /* where the region size starts */
static int is_pow2(uint64_t x)
{
	return x && !(x & (x - 1));
}

int vt_cls_growing_regions(const struct ctx *c, int dev)
{
	uint64_t region = GROWING_REGION_FIRST; /* the size the allocator asks for next */
	uint32_t n = 0;
	for (uint32_t i = c->p->alloc_begin; i < c->p->alloc_end; i++) {
		const struct vt_alloc *a = &c->m->allocs[i];
		const struct facts *f = &c->f[i - c->p->alloc_begin];
		if (f->device != dev || !f->charged)
			continue;
		int kept = a->t_free == VT_T_NEVER ||
		           lifetime(c->m, a) * 10 >= (c->p->last_t_ns - a->t_alloc) * 9;
		if ((a->flags & VT_AF_HANDLE) || !is_pow2(a->bytes) ||
		    a->bytes < GROWING_REGION_MIN || a->bytes < region || !kept)
			return 0;
		/* a region that had to grow to fit its request leaves the size
		 * as it is */
		region = a->bytes > region ? a->bytes : 2 * a->bytes;
		n++;
	}
	/* a folding model's groups are freed per-step tensors: not regions */
	return n >= 3 && !folded_size_on(c, dev, 0);
}

/* One array from the host owns the region: one upload, or uploads that
 * all landed on one range (the same array converted again into the chunk
 * the first conversion left: Keras makes a new DataHandler for evaluate
 * and for predict, and the allocator hands the same chunk back), of more
 * than half of it. The allocator doubled its region size until that
 * request fitted, and BFC's FindChunkPtr splits a chunk only when it is
 * at least twice the request or would waste VT_BFC_MAX_WASTE: the array
 * has the whole region (a 188 MB array in a 256 MiB region). */
#define VT_BFC_MAX_WASTE (128ull << 20) /* kMaxInternalFragmentation */
static int owns(uint64_t array, uint64_t region)
{
	return array * 2 > region && region - array < VT_BFC_MAX_WASTE;
}

static int one_array_fills(const struct ctx *c, const struct vt_alloc *a)
{
	const struct vt_alloc_copies *cp = vt_model_copies(c->m, a);
	if (cp->h2d_copies == 1)
		return owns(cp->h2d_bytes, a->bytes);
	const struct vt_copy_range *r = vt_alloc_only_range(c->m, a);
	return r && owns(r->bytes, a->bytes);
}

/* A region no single array from the host filled. */
int vt_cls_growing_region(const struct ctx *c, const struct vt_alloc *a, const struct facts *f)
{
	(void)f;
	return !one_array_fills(c, a);
}

void vt_cls_served_regions(struct ctx *c)
{
	uint64_t first_h2d[VT_MAX_DEVICES];
	for (int d = 0; d < VT_MAX_DEVICES; d++)
		first_h2d[d] = VT_T_NEVER;
	for (uint32_t i = c->p->alloc_begin; i < c->p->alloc_end; i++) {
		const struct vt_alloc *a = &c->m->allocs[i];
		uint64_t t = vt_model_copies(c->m, a)->t_first_h2d;
		if (a->device != VT_DEVICE_UNKNOWN && t < first_h2d[a->device])
			first_h2d[a->device] = t;
	}
	uint32_t ng;
	const struct vt_fold_group *g = vt_fold_groups(c->m, &ng);
	for (uint32_t i = 0; i < ng; i++) /* folded uploads: t_first_h2d VT_T_NEVER if none */
		if (g[i].proc == c->proc && g[i].t_first_h2d < first_h2d[g[i].device])
			first_h2d[g[i].device] = g[i].t_first_h2d;
	for (uint32_t i = c->p->alloc_begin; i < c->p->alloc_end; i++) {
		struct vt_alloc *a = &c->m->allocs[i];
		struct facts *f = &c->f[i - c->p->alloc_begin];
		/* made once the host had sent what it runs on: the passes' */
		if (a->reason == R_GROWING_REGION && !vt_model_copies(c->m, a)->h2d_bytes &&
		    a->t_alloc > first_h2d[a->device])
			set_cat(a, f, VT_CAT_ACTIVATIONS, 55, R_SERVED_REGION);
	}
}

/* On each device whose allocations show the allocator (device_shows), the
 * undecided ones that are its regions (is_region) are pools. */
void vt_cls_allocator_regions(struct ctx *c, const int *devs,
                              int (*device_shows)(const struct ctx *, int),
                              int (*is_region)(const struct ctx *, const struct vt_alloc *,
                                               const struct facts *),
                              enum reason why)
{
	for (int d = 0; d < VT_MAX_DEVICES; d++) {
		if (!devs[d] || !device_shows(c, d))
			continue;
		for (uint32_t i = c->p->alloc_begin; i < c->p->alloc_end; i++) {
			struct vt_alloc *a = &c->m->allocs[i];
			struct facts *f = &c->f[i - c->p->alloc_begin];
			if (f->device != d || !f->charged || f->decided || !is_region(c, a, f))
				continue;
			set_cat(a, f, VT_CAT_POOL, 70, why);
			c->p->pool_mode = 1;
		}
	}
}

void vt_cls_classify_pool(struct ctx *c, uint32_t i, struct vt_alloc *a, struct facts *f)
{
	if (!f->charged || !looks_like_pool(c, i))
		return;
	set_cat(a, f, VT_CAT_POOL, 80, R_POOL);
	c->p->pool_mode = 1;
}

/* A buffer kept and refilled from the host again and again through the
 * run (at least 3 uploads, twice its size in all, spread over 3 steps, or
 * without steps over a quarter of the run, or over a quarter of its own
 * life where the host reads results back at least as often: a server's
 * input binding made after a long model load, each request's input
 * answered by its output): a batch buffer reused in place, as a DALI-style
 * ring or a static input buffer does. A dataset is uploaded once; weights
 * restored from a checkpoint are written twice at most. */
int vt_cls_refilled(const struct ctx *c, const struct vt_alloc *a)
{
	const struct vt_alloc_copies *cp = vt_model_copies(c->m, a);
	if (cp->h2d_copies < 3 || cp->h2d_bytes < 2 * a->bytes || cp->t_first_h2d == VT_T_NEVER)
		return 0;
	if (c->p->nsteps >= 3)
		return vt_step_of(c->p, cp->t_last_h2d) - vt_step_of(c->p, cp->t_first_h2d) >= 2;
	uint64_t spread = cp->t_last_h2d - cp->t_first_h2d;
	return spread * 4 >= c->span_ns ||
	       (spread * 4 >= lifetime(c->m, a) && c->readbacks >= cp->h2d_copies);
}

void vt_cls_classify_ring(struct ctx *c, struct vt_alloc *a, struct facts *f)
{
	if (f->decided || !f->charged || !f->host_filled || !vt_cls_refilled(c, a))
		return;
	set_cat(a, f, VT_CAT_PREFETCH, 80, R_RING);
}

/* How many rows allocation i holds when the host wrote it a row at a time:
 * copies at three offsets at least, every one the same size at a multiple
 * of it, the allocation a whole number (16 at least) of such rows; else 0. */
#define ROW_STORE_MIN_ROWS 16
static uint64_t rows_written(const struct ctx *c, uint32_t i)
{
	const struct vt_alloc *a = &c->m->allocs[i];
	uint32_t n = 0;
	const struct vt_copy_range *r =
	    a->flags & VT_AF_PARTIAL_COPIES ? vt_model_ranges(c->m, i, &n) : NULL;
	if (n < 3 || !r[0].bytes || a->bytes % r[0].bytes)
		return 0;
	for (uint32_t k = 0; k < n; k++)
		if (r[k].bytes != r[0].bytes || r[k].offset % r[0].bytes)
			return 0;
	uint64_t rows = a->bytes / r[0].bytes;
	return rows >= ROW_STORE_MIN_ROWS ? rows : 0;
}

/* Buffers the pool rule took for allocator regions, written from the host a
 * row at a time, with a sibling of as many rows written as often: one table
 * of samples stored a column per key (TorchRL's LazyTensorStorage: every
 * environment step writes one row of observations, actions, rewards...).
 * An allocator region gets tensors of many sizes at offsets that do not
 * line up; two regions with the same row count and copy count would be a
 * coincidence. Such a table holds the training data: dataset, with pool the
 * alternative; it never arrives whole, so it raises no whole-dataset
 * finding. */
struct row_store {
	uint64_t rows;
	uint32_t idx, copies;
	uint8_t device;
};

void vt_cls_row_stores(struct ctx *c)
{
	struct row_store *rs = NULL;
	uint32_t n = 0, cap = 0;
	for (uint32_t i = c->p->alloc_begin; i < c->p->alloc_end; i++) {
		const struct vt_alloc *a = &c->m->allocs[i];
		uint64_t rows = a->reason == R_POOL ? rows_written(c, i) : 0;
		if (!rows)
			continue;
		if (n == cap) {
			cap = cap ? 2 * cap : 8;
			if (!(rs = realloc(rs, cap * sizeof *rs)))
				vt_nomem();
		}
		rs[n++] =
		    (struct row_store){rows, i, vt_model_copies(c->m, a)->h2d_copies, a->device};
	}
	for (uint32_t x = 0; x < n; x++)
		for (uint32_t y = 0; y < n; y++)
			if (x != y && rs[x].rows == rs[y].rows && rs[x].device == rs[y].device &&
			    rs[x].copies == rs[y].copies) {
				uint32_t i = rs[x].idx;
				set_cat(&c->m->allocs[i], &c->f[i - c->p->alloc_begin],
				        VT_CAT_DATASET, 65, R_ROW_STORE);
				break;
			}
	free(rs);
	c->p->pool_mode = 0;
	for (uint32_t i = c->p->alloc_begin; i < c->p->alloc_end && !c->p->pool_mode; i++)
		c->p->pool_mode = c->m->allocs[i].category == VT_CAT_POOL;
}
