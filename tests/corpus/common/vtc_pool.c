/* vtc_pool: see vtc_pool.h. */
#include "vtc_pool.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ALIGN 512ull
#define SMALL_SIZE (1 * MIB)
#define SMALL_BUFFER (2 * MIB)
#define LARGE_BUFFER (20 * MIB)
#define MIN_LARGE_ALLOC (10 * MIB)
#define ROUND_LARGE (2 * MIB)

static uint64_t round_up(uint64_t x, uint64_t a)
{
	return (x + a - 1) / a * a;
}

void vtc_region_init(struct vtc_region *r, int dev, CUdeviceptr base, uint64_t size, int record)
{
	memset(r, 0, sizeof *r);
	r->dev = dev;
	r->base = base;
	r->size = size;
	r->record = record;
	r->cap = 16;
	r->b = malloc(r->cap * sizeof *r->b);
	r->b[0] = (struct vtc_block){0, size, 0, 0};
	r->n = 1;
}

CUdeviceptr vtc_region_take(struct vtc_region *r, uint64_t bytes, enum vtc_cat cat)
{
	bytes = round_up(bytes ? bytes : 1, ALIGN);
	for (int i = 0; i < r->n; i++) {
		struct vtc_block *b = &r->b[i];
		if (b->used || b->size < bytes)
			continue;
		if (b->size > bytes) { /* split */
			if (r->n == r->cap) {
				r->cap *= 2;
				r->b = realloc(r->b, r->cap * sizeof *r->b);
				b = &r->b[i];
			}
			memmove(&r->b[i + 1], &r->b[i], (r->n - i) * sizeof *r->b);
			r->n++;
			r->b[i + 1].off = b->off + bytes;
			r->b[i + 1].size = b->size - bytes;
			r->b[i + 1].used = 0;
			b->size = bytes;
		}
		b->used = 1;
		b->cat = cat;
		r->cats |= 1u << cat;
		CUdeviceptr p = r->base + b->off;
		vtc_part(r->dev, p, bytes, cat);
		return p;
	}
	return 0;
}

int vtc_region_give(struct vtc_region *r, CUdeviceptr p)
{
	if (p < r->base || p >= r->base + r->size)
		return 0;
	uint64_t off = p - r->base;
	for (int i = 0; i < r->n; i++) {
		if (r->b[i].off != off || !r->b[i].used)
			continue;
		r->b[i].used = 0;
		vtc_part_free(r->dev, p);
		/* merge with the free neighbours */
		if (i + 1 < r->n && !r->b[i + 1].used) {
			r->b[i].size += r->b[i + 1].size;
			memmove(&r->b[i + 1], &r->b[i + 2], (r->n - i - 2) * sizeof *r->b);
			r->n--;
		}
		if (i > 0 && !r->b[i - 1].used) {
			r->b[i - 1].size += r->b[i].size;
			memmove(&r->b[i], &r->b[i + 1], (r->n - i - 1) * sizeof *r->b);
			r->n--;
		}
		return 1;
	}
	fprintf(stderr, "vtc_region_give: 0x%llx is not a block\n", (unsigned long long)p);
	exit(1);
}

void vtc_region_settle(struct vtc_region *r)
{
	int kinds = __builtin_popcount(r->cats);
	if (kinds == 1)
		vtc_set_category(r->record, (enum vtc_cat)__builtin_ctz(r->cats));
	else
		vtc_set_category(r->record, VTC_POOL);
}

void vtc_cache_init(struct vtc_cache *c, int dev)
{
	memset(c, 0, sizeof *c);
	c->dev = dev;
}

/* a block from a cached segment of its pool (small or large), or 0 */
static CUdeviceptr cached_block(struct vtc_cache *c, uint64_t bytes, int small, enum vtc_cat cat)
{
	for (int i = 0; i < c->nseg; i++) {
		if (c->seg[i].small != small)
			continue;
		CUdeviceptr p = vtc_region_take(&c->seg[i], bytes, cat);
		if (p)
			return p;
	}
	return 0;
}

static uint64_t segment_size(uint64_t bytes, int small)
{
	return small                     ? SMALL_BUFFER
	       : bytes < MIN_LARGE_ALLOC ? LARGE_BUFFER
	                                 : round_up(bytes, ROUND_LARGE);
}

/* a new segment from the driver (cudaMalloc) holding the block; its category
 * is settled when it goes back. 0 when the driver refuses (only when may_fail) */
static CUdeviceptr new_segment(struct vtc_cache *c, uint64_t bytes, int small, enum vtc_cat cat,
                               int may_fail)
{
	uint64_t size = segment_size(bytes, small);
	if (c->nseg == VTC_CACHE_MAX_SEGMENTS) {
		fprintf(stderr, "vtc_cache: too many segments\n");
		exit(1);
	}
	CUdeviceptr base = 0;
	if (!may_fail)
		base = vtc_alloc(c->dev, size, VTC_POOL);
	else if (vtc_try_alloc(c->dev, size, cat, &base) != CUDA_SUCCESS)
		return 0;
	struct vtc_region *r = &c->seg[c->nseg++];
	vtc_region_init(r, c->dev, base, size, vtc_record_of(c->dev, base));
	r->small = small;
	return vtc_region_take(r, bytes, cat);
}

CUdeviceptr vtc_cache_alloc(struct vtc_cache *c, uint64_t bytes, enum vtc_cat cat)
{
	int small = bytes <= SMALL_SIZE;
	bytes = round_up(bytes ? bytes : 1, ALIGN);
	CUdeviceptr p = cached_block(c, bytes, small, cat);
	return p ? p : new_segment(c, bytes, small, cat, 0);
}

CUdeviceptr vtc_cache_try_alloc(struct vtc_cache *c, uint64_t bytes, enum vtc_cat cat)
{
	int small = bytes <= SMALL_SIZE;
	bytes = round_up(bytes ? bytes : 1, ALIGN);
	CUdeviceptr p = cached_block(c, bytes, small, cat);
	if (!p)
		p = new_segment(c, bytes, small, cat, 1);
	if (!p) { /* release_cached_blocks(), then cudaMalloc once more */
		vtc_cache_release(c);
		p = new_segment(c, bytes, small, cat, 1);
	}
	return p;
}

static int segment_unused(const struct vtc_region *r)
{
	return r->n == 1 && !r->b[0].used;
}

static void segment_return(struct vtc_cache *c, struct vtc_region *r)
{
	vtc_region_settle(r);
	vtc_free(c->dev, r->base);
	free(r->b);
}

void vtc_cache_release(struct vtc_cache *c)
{
	int kept = 0;
	for (int i = 0; i < c->nseg; i++) {
		if (segment_unused(&c->seg[i]))
			segment_return(c, &c->seg[i]);
		else
			c->seg[kept++] = c->seg[i];
	}
	c->nseg = kept;
}

void vtc_cache_free(struct vtc_cache *c, CUdeviceptr p)
{
	for (int i = 0; i < c->nseg; i++)
		if (vtc_region_give(&c->seg[i], p))
			return;
	fprintf(stderr, "vtc_cache_free: 0x%llx not in any segment\n", (unsigned long long)p);
	exit(1);
}

void vtc_cache_empty(struct vtc_cache *c)
{
	for (int i = 0; i < c->nseg; i++)
		segment_return(c, &c->seg[i]);
	c->nseg = 0;
}

void vtc_cache_settle(struct vtc_cache *c)
{
	for (int i = 0; i < c->nseg; i++)
		vtc_region_settle(&c->seg[i]);
}
