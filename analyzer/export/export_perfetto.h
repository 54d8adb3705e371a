/* Chrome Trace Event Format JSON (opens in ui.perfetto.dev and
 * chrome://tracing):
 *  - each device is a process "GPU N" (pid VT_PERFETTO_GPU_PID + N) with
 *    one counter "GPU N bytes" ("ph":"C") whose args are the eight
 *    categories: a stacked chart in chrome://tracing, one track per
 *    category in Perfetto; one sample per allocation or free;
 *  - each allocation is an async slice ("ph":"b"/"e", cat = category,
 *    name = category) on its device from birth to death, args: bytes,
 *    site, pid, address, confidence, reason;
 *  - copies are instants ("ph":"i") on the job's own pid/tid with their
 *    direction, bytes, device and site (read again from the logs, because
 *    the model keeps copies only per allocation);
 *  - step and user marks, failed allocations (OOM), each device's peak and
 *    the report's flags (cat "flag", with their advice) are instants;
 *    process and thread names are metadata ("ph":"M").
 * Times ("ts") are microseconds with ns decimals; "displayTimeUnit":"ns". */
#ifndef VT_EXPORT_PERFETTO_H
#define VT_EXPORT_PERFETTO_H

#include <stdio.h>

#include "export_data.h"

#define VT_PERFETTO_GPU_PID 100000000u  /* above any Linux pid (pid_max <= 2^22) */

/* dir: the trace directory (copies are read from its logs). */
int vt_export_perfetto(const struct vt_export *x, const char *dir, FILE *out);

#endif
