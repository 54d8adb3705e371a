/* The report as text, for a terminal or a file (colours only on a terminal). */
#ifndef VT_REPORT_TEXT_H
#define VT_REPORT_TEXT_H

#include <stddef.h>
#include <stdio.h>

#include "report.h"

int vt_report_write_text(const struct vt_report *r, FILE *out);
/* How process p ended, in the text report's words ("exited 0", "exec'd",
 * "did NOT exit cleanly"); 1 when it died. */
int vt_report_proc_status(const struct vt_proc *p, char *buf, size_t len);
/* The text report's line for what recording cost process p (the shim's own
 * measure, recording_cost.h), nothing when its log has none. */
void vt_report_recording_cost_text(const struct vt_proc *p, FILE *out);

/* The log's integrity, when it is short of complete: chunks missing (cut
 * short) or failing their seal check (format.h). */
void vt_report_integrity_text(const struct vt_proc *p, FILE *out);

/* The other processes NVML listed beside a reading: "pid 4242 python
 * 1.00 GiB, pid 77 ? size unknown and 3 more" (names made safe for a
 * terminal). */
void vt_report_nvml_others(const struct vt_nvml_reading *n, char *buf, size_t len);

#endif
