/* `vramtrace report --stream` (report_stream.c): a streaming model's peaks
 * and what was live at them, as text or JSON. top: sites shown per peak. */
#ifndef VT_REPORT_STREAM_H
#define VT_REPORT_STREAM_H

#include <stdio.h>

#include "model.h"

int vt_report_stream_text(const struct vt_model *m, const char *title, int top, FILE *out);
int vt_report_stream_json(const struct vt_model *m, const char *title, int top, FILE *out);

#endif
