/* The HTML timeline: one self-contained file (analyzer/html/timeline.html,
 * embedded at build time, with the trace's data as JSON inside it): per
 * device a stacked area chart of bytes in use over time by category with
 * the capacity line, the peak, out-of-memory and step markers; a tooltip
 * with the exact bytes by category and the top sites at that moment;
 * clicking a band lists its sites with their stacks; a sortable site table;
 * the flags with their advice at the top. Nothing is fetched from anywhere.
 *
 * Big traces are downsampled for drawing (export_html_series.h): per time
 * bucket the moment with the most bytes and the last moment are kept, each
 * an exact state, and each device's peak always. */
#ifndef VT_EXPORT_HTML_H
#define VT_EXPORT_HTML_H

#include <stdint.h>
#include <stdio.h>

#include "export_data.h"
#include "export_job.h"

int vt_export_html(const struct vt_export *x, const char *dir, FILE *out);

/* A distributed job's page: the rank view of all its traces (every rank a
 * row of small charts on one scale, the imbalance between them, how they
 * were aligned) above the full view of its first trace. */
int vt_export_html_job(const struct vt_export_job *e, FILE *out);

/* The page from the traces' loaded models into path (written beside it,
 * then renamed): `report --html FILE`. A job (several traces, or one with
 * ranked processes) gets vt_export_html_job's page, a trace on its own
 * vt_export_html's. 0, or -1 and a one-line reason. */
int vt_export_html_file(struct vt_model *const *models, const char *const *dirs, uint32_t n,
                        const char *path, char *err, size_t errlen);

#endif
