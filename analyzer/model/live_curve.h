/* Live bytes over time in bounded memory, for the streaming model's
 * timeline: VT_CURVE_BUCKETS buckets of equal width from the first point.
 * When a point falls past the last bucket, neighbouring buckets merge in
 * pairs and the width doubles, so the curve always spans what was seen at
 * 1/VT_CURVE_BUCKETS to 2/VT_CURVE_BUCKETS of its length, whatever the
 * trace's length. Each bucket keeps the most bytes live at any point in it
 * and the value it ended with; a bucket no point fell in carries the value
 * before it (live bytes do not change between events). */
#ifndef VT_LIVE_CURVE_H
#define VT_LIVE_CURVE_H

#include <stdint.h>

#define VT_CURVE_BUCKETS 1024

struct vt_live_curve {
	uint64_t t0, width; /* bucket i covers [t0 + i*width, t0 + (i+1)*width) */
	unsigned shift;     /* width = 1 << shift: a shift, not a division, an event */
	uint32_t n;         /* buckets in use, each valid */
	uint64_t max[VT_CURVE_BUCKETS], last[VT_CURVE_BUCKETS];
};

/* The first buckets are 2^shift ns wide (the width doubles as needed). */
void vt_curve_init(struct vt_live_curve *c, uint64_t t0, unsigned shift);
/* An upper bound on the most bytes the n curves held together at any one
 * time (processes sharing a GPU): their bucket maxima summed on a common
 * grid, each curve holding its last value after its end. 0 for no curve. */
uint64_t vt_curves_sum_bound(const struct vt_live_curve *const *c, uint32_t n);

/* When bucket b starts (b = n: where the curve ends), saturated at 2^64-1:
 * a hostile log's times reach it. */
uint64_t vt_curve_bucket_t(const struct vt_live_curve *c, uint64_t b);

/* vt_curve_add past the last bucket in use. */
void vt_curve_add_slow(struct vt_live_curve *c, uint64_t t, uint64_t bytes);

/* bytes live from time t on (points come in time order; an earlier one
 * counts in the bucket of its time). Inline: the replay adds a point at
 * every allocation and free, and nearly all fall in the last bucket. */
static inline void vt_curve_add(struct vt_live_curve *c, uint64_t t, uint64_t bytes)
{
	uint64_t at = (t > c->t0 ? t - c->t0 : 0) >> c->shift;
	if (at + 1 != c->n) {
		vt_curve_add_slow(c, t, bytes);
		return;
	}
	if (bytes > c->max[at])
		c->max[at] = bytes;
	c->last[at] = bytes;
}

#endif
