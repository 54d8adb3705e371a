/* What the exports of a distributed job share: the traces (one per host,
 * each opened as a vt_export), the job's rank view over their reports
 * (ranks.h), and where each trace sits on the job's one timeline.
 *
 * Hosts' monotonic clocks are unrelated, so a trace's times are moved by
 * its own offset, as the rank view aligned the job (ranks.h): by wall
 * clock, each trace starts where its logs' recorded CLOCK_REALTIME says,
 * relative to the earliest trace; by step markers, each trace's first step
 * (its ranks' earliest) starts at the same time as every other trace's.
 * Offsets are never negative. */
#ifndef VT_EXPORT_JOB_H
#define VT_EXPORT_JOB_H

#include <stdint.h>

#include "export_data.h"
#include "ranks.h"

struct vt_export_job {
	const struct vt_export *x; /* [n]: one per trace, x[0] the one shown in full */
	const char *const *dirs;   /* [n]: their directories (NULL: none to read) */
	uint32_t n;
	struct vt_job job;
	uint64_t *offset_ns; /* [n]: added to a trace's times on the job's timeline */
	uint64_t end_ns;     /* the job's timeline ends here */
};

/* Whether the traces make a job (vt_job_wanted over their reports). */
int vt_export_job_wanted(const struct vt_export *x, uint32_t n);

/* The job over x[0..n) (each opened with vt_export_open, kept open by the
 * caller). 0, or -1 when out of memory. */
int vt_export_job_open(struct vt_export_job *e, const struct vt_export *x, const char *const *dirs,
                       uint32_t n);
void vt_export_job_close(struct vt_export_job *e);

/* Trace time t_ns of trace `trace` on the job's timeline. */
uint64_t vt_export_job_time(const struct vt_export_job *e, uint32_t trace, uint64_t t_ns);

/* The row of the job that is process `proc` of trace `trace`, or -1. */
int64_t vt_export_job_row_of(const struct vt_export_job *e, uint32_t trace, uint32_t proc);

#endif
