/* `vramtrace report --stream` (report_stream.c): a streaming model's peaks
 * and what was live at them, as text or JSON. top: sites shown per peak. */
#ifndef VT_REPORT_STREAM_H
#define VT_REPORT_STREAM_H

#include <stdio.h>

#include "model.h"

int vt_report_stream_text(const struct vt_model *m, const char *title, int top, FILE *out);
int vt_report_stream_json(const struct vt_model *m, const char *title, int top, FILE *out);

/* What a full report's site table says, from a streaming model: every site
 * that held memory at a peak, bytes live at each device's peak summed,
 * category unknown (allocs 0: not counted per site). No
 * categories, flags or --at moment: the rest of r stays zero (vt_report_free
 * frees it). For `diff --stream`. */
struct vt_report;
void vt_report_build_stream(struct vt_report *r, struct vt_model *m);

#endif
