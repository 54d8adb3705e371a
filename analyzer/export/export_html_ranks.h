/* The HTML page's rank view of a distributed job (export_job.h): the data
 * key "job" with the rank view's own keys (ranks_out.h: "ranks",
 * "imbalance", "alignment"), the traces with their offsets on the job's
 * timeline, and per rank its bytes over time by category ("series"),
 * downsampled as the device charts are: per time bucket the moment with the
 * most bytes and the last one, each an exact state, and the rank's own peak
 * always. timeline.html draws them as rows sharing one scale. */
#ifndef VT_EXPORT_HTML_RANKS_H
#define VT_EXPORT_HTML_RANKS_H

#include "export_job.h"
#include "json_out.h"

/* Writes "job": {...} into the object j has open. 0, or -1 when out of
 * memory (the key is then written without series). */
int vt_html_ranks_json(const struct vt_export_job *e, struct vt_json *j);

#endif
