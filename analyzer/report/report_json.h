/* The report as JSON (docs/report.md lists every key). */
#ifndef VT_REPORT_JSON_H
#define VT_REPORT_JSON_H

#include <stdio.h>

#include "report.h"

int vt_report_write_json(const struct vt_report *r, FILE *out);
struct vt_json;
/* The report's keys, into an object j has open (a job's trace, report.md). */
void vt_report_json_fields(const struct vt_report *r, struct vt_json *j);
/* "recording_cost": what recording cost process p, as an object, or null. */
void vt_report_recording_cost_json(struct vt_json *j, const struct vt_proc *p);
/* "accounting": used memory per device by holder (accounting.h). */
void vt_report_accounting_json(struct vt_json *j, const struct vt_accounting *a);
/* "live_by_category" and "top_sites" of the out-of-memory finding. */
void vt_report_oom_holders_json(struct vt_json *j, const struct vt_oom_finding *o);
/* "low_confidence_at_peak": the bytes at peak whose category is a guess,
 * by (category, its most likely alternative), largest first. */
void vt_report_low_confidence_json(struct vt_json *j, const struct vt_report *r);
/* A growth_per_step flag's own keys (bytes_per_step, steps, ... fill_t_ns). */
void vt_report_growth_json(struct vt_json *j, const struct vt_growth *g);

#endif
