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
 * Times ("ts") are microseconds with ns decimals; "displayTimeUnit":"ns".
 *
 * A distributed job (export_job.h): each process that allocated device
 * memory is a process track "rank N (host:pid)" ("host:pid" without a
 * launcher's rank) sorted in rank order, launchers after them. With
 * several traces, trace T's processes get pid + T * VT_PERFETTO_PID_STRIDE
 * (two hosts may run the same pid), its devices VT_PERFETTO_JOB_GPU_PID +
 * T * VT_MAX_DEVICES + N, named "GPU N name (trace directory)", and its
 * times are moved onto the job's timeline. */
#ifndef VT_EXPORT_PERFETTO_H
#define VT_EXPORT_PERFETTO_H

#include <stdio.h>

#include "export_data.h"
#include "export_job.h"

#define VT_PERFETTO_GPU_PID 100000000u    /* above any Linux pid (pid_max <= 2^22) */
#define VT_PERFETTO_PID_STRIDE (1u << 22) /* Linux's largest pid_max */
/* above every remapped pid of a job's traces (64 * 2^22 = 2^28) */
#define VT_PERFETTO_JOB_GPU_PID (1u << 30)

/* dir: the trace directory (copies are read from its logs). */
int vt_export_perfetto(const struct vt_export *x, const char *dir, FILE *out);

/* The job's traces in one document (copies read from each trace's logs,
 * where its directory is not NULL). */
int vt_export_perfetto_job(const struct vt_export_job *e, FILE *out);

#endif
