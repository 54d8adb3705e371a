/* A downsampled live-bytes curve (see live_curve.h). */
#include "live_curve.h"

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
