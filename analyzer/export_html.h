/* The HTML timeline: one self-contained file (analyzer/html/timeline.html,
 * embedded at build time, with the trace's data as JSON inside it): per
 * device a stacked area chart of bytes in use over time by category with
 * the capacity line, the peak, out-of-memory and step markers; a tooltip
 * with the exact bytes by category and the top sites at that moment;
 * clicking a band lists its sites with their stacks; a sortable site table;
 * the flags with their advice at the top. Nothing is fetched from anywhere.
 *
 * Big traces are downsampled for drawing (export_html_series.c): per time
 * bucket the moment with the most bytes and the last moment are kept, each
 * an exact state, and each device's peak always. */
#ifndef VT_EXPORT_HTML_H
#define VT_EXPORT_HTML_H

#include <stdint.h>
#include <stdio.h>

#include "export_data.h"

int vt_export_html(const struct vt_export *x, const char *dir, FILE *out);

/* The whole page from a loaded model into path (written beside it, then
 * renamed): `report --html FILE`. 0, or -1 and a one-line reason. */
int vt_export_html_file(struct vt_model *m, const char *dir, const char *path, char *err,
                        size_t errlen);

/* ---- the downsampled series (export_html_series.c) ----------------------- */

#define VT_HTML_TOP_SITES 3

struct vt_html_point {
	uint64_t t_ns;
	uint64_t cats[VT_CAT_COUNT];
	uint32_t top_site[VT_HTML_TOP_SITES];   /* VT_NO_INDEX: none */
	uint64_t top_bytes[VT_HTML_TOP_SITES];
};

struct vt_html_series {
	int device;
	struct vt_html_point *p;
	uint32_t n, cap;
	uint32_t peak_i;                        /* point of the device's peak, VT_NO_INDEX */
	uint8_t used[VT_CAT_COUNT];             /* the device ever held this category */
};

/* One series per listed device (vt_export_devices order), `buckets` time
 * buckets each. Returns the count, -1 on no memory; free with
 * vt_html_series_free. */
int vt_html_series_build(const struct vt_export *x, uint32_t buckets,
                         struct vt_html_series **out);
void vt_html_series_free(struct vt_html_series *s, int n);

#endif
