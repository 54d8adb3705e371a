/* The HTML timeline's series, downsampled for drawing: per time bucket the
 * moment with the most bytes and the last moment are kept, each an exact
 * state, and each device's peak always. */
#ifndef VT_EXPORT_HTML_SERIES_H
#define VT_EXPORT_HTML_SERIES_H

#include <stdint.h>

#include "export_data.h"

#define VT_HTML_TOP_SITES 3

struct vt_html_point {
	uint64_t t_ns;
	uint64_t cats[VT_CAT_COUNT];
	uint32_t top_site[VT_HTML_TOP_SITES]; /* VT_NO_INDEX: none */
	uint64_t top_bytes[VT_HTML_TOP_SITES];
};

struct vt_html_series {
	int device;
	struct vt_html_point *p;
	uint32_t n, cap;
	uint32_t peak_i;            /* point of the device's peak, VT_NO_INDEX */
	uint8_t used[VT_CAT_COUNT]; /* the device ever held this category */
};

/* One series per listed device (vt_export_devices order), `buckets` time
 * buckets each. Returns the count, -1 on no memory; free with
 * vt_html_series_free. */
int vt_html_series_build(const struct vt_export *x, uint32_t buckets, struct vt_html_series **out);
void vt_html_series_free(struct vt_html_series *s, int n);

/* The keys "t" (each point's time) and "v" (its VT_CAT_COUNT bytes by
 * category, flat) of n points, into the object j has open. */
struct vt_json;
void vt_html_points_json(struct vt_json *j, const struct vt_html_point *p, uint32_t n);

#endif
