/* The rank view of a job (ranks.h) as text, and as the JSON keys "ranks",
 * "imbalance" and "alignment" (written into an object the caller opened). */
#ifndef VT_RANKS_OUT_H
#define VT_RANKS_OUT_H

#include <stdio.h>

#include "json_out.h"
#include "ranks.h"

void vt_job_write_text(const struct vt_job *j, FILE *out);
void vt_job_json_fields(const struct vt_job *j, struct vt_json *json);

/* `report` of a job: the rank view, then each trace's report (text), or
 * one object with the trace's keys (one trace) or "traces" (several) and
 * the rank view's (JSON). Returns 0, or -1 when writing failed. */
int vt_job_write_report(const struct vt_job *j, const struct vt_report *const *reports, uint32_t n,
                        int json, FILE *out);

/* How a row was identified: "RANK", "OMPI_COMM_WORLD_RANK", ... or
 * "host and pid". */
const char *vt_rank_identified_by(const struct vt_rank_row *row);

#endif
