/* A downsampled live-bytes curve (see live_curve.h). */
#include "live_curve.h"

#include <stdlib.h>

#include "nomem.h"

#define GRID_MAX 65536 /* buckets of the common grid, at most */

void vt_curve_init(struct vt_live_curve *c, uint64_t t0, unsigned shift)
{
	c->t0 = t0;
	c->shift = shift < 63 ? shift : 63;
	c->width = 1ull << c->shift;
	c->n = 0;
}

/* Half the resolution: bucket i becomes buckets 2i and 2i+1. */
static void halve(struct vt_live_curve *c)
{
	uint32_t n = 0;
	for (uint32_t i = 0; i < c->n; i += 2, n++) {
		uint64_t max = c->max[i], last = c->last[i];
		if (i + 1 < c->n) {
			max = c->max[i + 1] > max ? c->max[i + 1] : max;
			last = c->last[i + 1];
		}
		c->max[n] = max;
		c->last[n] = last;
	}
	c->n = n;
	if (c->shift < 63)
		c->width = 1ull << ++c->shift;
}

void vt_curve_add_slow(struct vt_live_curve *c, uint64_t t, uint64_t bytes)
{
	uint64_t d = t > c->t0 ? t - c->t0 : 0;
	while ((d >> c->shift) >= VT_CURVE_BUCKETS && c->shift < 63)
		halve(c);
	uint32_t b = (uint32_t)(d >> c->shift);
	if (b >= VT_CURVE_BUCKETS) /* past 2^63 ns: the last bucket */
		b = VT_CURVE_BUCKETS - 1;
	uint64_t carry = c->n ? c->last[c->n - 1] : 0;
	for (; c->n <= b; c->n++) /* buckets no point fell in: the value goes on */
		c->max[c->n] = c->last[c->n] = carry;
	if (bytes > c->max[b])
		c->max[b] = bytes;
	if (b == c->n - 1)
		c->last[b] = bytes;
}

/* Times of a hostile log reach 2^64: the grid's arithmetic saturates. */
static uint64_t sat_add(uint64_t a, uint64_t b)
{
	return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

static uint64_t sat_mul(uint64_t a, uint64_t b)
{
	return b && a > UINT64_MAX / b ? UINT64_MAX : a * b;
}

uint64_t vt_curve_bucket_t(const struct vt_live_curve *k, uint64_t b)
{
	return sat_add(k->t0, sat_mul(b, k->width));
}

/* Where the curves start and end, and the common grid's width: the widest
 * bucket, doubled until the grid has at most GRID_MAX buckets. */
static uint64_t grid_of(const struct vt_live_curve *const *c, uint32_t n, uint64_t *start,
                        uint64_t *buckets)
{
	uint64_t lo = UINT64_MAX, hi = 0, w = 1;
	for (uint32_t i = 0; i < n; i++) {
		uint64_t end = vt_curve_bucket_t(c[i], c[i]->n);
		lo = c[i]->t0 < lo ? c[i]->t0 : lo;
		hi = end > hi ? end : hi;
		w = c[i]->width > w ? c[i]->width : w;
	}
	while ((hi - lo) / w >= GRID_MAX && w <= UINT64_MAX / 2)
		w *= 2;
	*start = lo;
	*buckets = (hi - lo) / w + 1;
	return w;
}

/* The grid bucket of time t (at or after start); a time past the grid
 * (saturated) counts in its last bucket, which keeps the bound a bound. */
static uint64_t grid_at(uint64_t t, uint64_t start, uint64_t w, uint64_t g)
{
	uint64_t x = (t - start) / w;
	return x < g ? x : g - 1;
}

uint64_t vt_curves_sum_bound(const struct vt_live_curve *const *c, uint32_t n)
{
	uint64_t start, g, w;
	if (!n)
		return 0;
	w = grid_of(c, n, &start, &g);
	uint64_t *sum = calloc(g, sizeof *sum), *one = malloc(g * sizeof *one);
	if (!sum || !one)
		vt_nomem();
	for (uint32_t i = 0; i < n; i++) {
		const struct vt_live_curve *k = c[i];
		for (uint64_t x = 0; x < g; x++)
			one[x] = 0;                   /* nothing live before the curve starts */
		for (uint32_t b = 0; b < k->n; b++) { /* a bucket spans one or two of the grid's */
			uint64_t s = vt_curve_bucket_t(k, b);
			uint64_t g0 = grid_at(s, start, w, g);
			uint64_t g1 = grid_at(sat_add(s, k->width - 1), start, w, g);
			for (uint64_t x = g0; x <= g1; x++)
				one[x] = k->max[b] > one[x] ? k->max[b] : one[x];
		}
		uint64_t after = grid_at(vt_curve_bucket_t(k, k->n), start, w, g);
		for (uint64_t x = after; k->n && x < g; x++) /* its last value goes on */
			one[x] = k->last[k->n - 1] > one[x] ? k->last[k->n - 1] : one[x];
		for (uint64_t x = 0; x < g; x++)
			sum[x] = sat_add(sum[x], one[x]);
	}
	uint64_t top = 0;
	for (uint64_t x = 0; x < g; x++)
		top = sum[x] > top ? sum[x] : top;
	free(sum);
	free(one);
	return top;
}
