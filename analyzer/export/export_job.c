/* A distributed job's traces on one timeline (export_job.h). */
#include "export_job.h"

#include <stdlib.h>
#include <string.h>

int vt_export_job_wanted(const struct vt_export *x, uint32_t n)
{
	const struct vt_report **reports = calloc(n ? n : 1, sizeof *reports);
	if (!reports)
		return 0;
	for (uint32_t i = 0; i < n; i++)
		reports[i] = &x[i].r;
	int wanted = vt_job_wanted(reports, n);
	free(reports);
	return wanted;
}

/* CLOCK_REALTIME at the trace's time 0, from the first log that recorded
 * one; 0 when none did (logs older than the wall-clock base). */
static int64_t wall_at_zero(const struct vt_model *m)
{
	for (uint32_t p = 0; p < m->nprocs; p++)
		if (m->procs[p].realtime_base_ns)
			return (int64_t)m->procs[p].realtime_base_ns -
			       (int64_t)m->procs[p].clock_offset_ns;
	return 0;
}

/* The trace time of the earliest first step of the trace's ranks, -1:
 * none. Trace times, not wall clock: the model put a trace's logs on one
 * clock, where each log's wall-clock base has a few microseconds of its own
 * jitter. */
static int64_t first_step(const struct vt_job *j, uint32_t trace)
{
	int64_t first = -1;
	for (uint32_t i = 0; i < j->nrows; i++) {
		const struct vt_rank_row *row = &j->rows[i];
		const struct vt_proc *p = &row->r->m->procs[row->proc];
		if (row->trace == trace && p->nsteps &&
		    (first < 0 || (int64_t)p->step_t[0] < first))
			first = (int64_t)p->step_t[0];
	}
	return first;
}

/* Each trace's offset (export_job.h), shifted so the smallest is 0. By
 * wall clock: its time 0 after the earliest trace's. By step markers: its
 * first step at the same time as every other trace's; a trace without a
 * rank's step is placed by wall clock beside the first trace with one. */
static void place_traces(struct vt_export_job *e)
{
	int64_t *off = calloc(e->n ? e->n : 1, sizeof *off);
	if (!off)
		return; /* offsets stay 0: each trace's own times */
	int have_wall = 1, by_steps = e->job.alignment.by == VT_ALIGN_STEP_MARKERS;
	int64_t wall0 = INT64_MAX, lowest = INT64_MAX;
	uint32_t anchor = UINT32_MAX; /* the first trace with a rank's step */
	for (uint32_t t = 0; t < e->n; t++) {
		int64_t w = wall_at_zero(e->x[t].m);
		have_wall &= w != 0;
		wall0 = w < wall0 ? w : wall0;
		if (anchor == UINT32_MAX && first_step(&e->job, t) >= 0)
			anchor = t;
	}
	for (uint32_t t = 0; t < e->n; t++)
		off[t] = have_wall ? wall_at_zero(e->x[t].m) - wall0 : 0;
	int64_t anchor_wall = anchor != UINT32_MAX ? off[anchor] : 0;
	for (uint32_t t = 0; by_steps && anchor != UINT32_MAX && t < e->n; t++) {
		int64_t s = first_step(&e->job, t);
		off[t] = s >= 0 ? -s : off[t] - anchor_wall - first_step(&e->job, anchor);
	}
	for (uint32_t t = 0; t < e->n; t++)
		lowest = off[t] < lowest ? off[t] : lowest;
	for (uint32_t t = 0; t < e->n; t++)
		e->offset_ns[t] = (uint64_t)(off[t] - lowest);
	free(off);
}

int vt_export_job_open(struct vt_export_job *e, const struct vt_export *x, const char *const *dirs,
                       uint32_t n)
{
	memset(e, 0, sizeof *e);
	e->x = x;
	e->dirs = dirs;
	e->n = n;
	const struct vt_report **reports = calloc(n ? n : 1, sizeof *reports);
	e->offset_ns = calloc(n ? n : 1, sizeof *e->offset_ns);
	if (!reports || !e->offset_ns) {
		free(reports);
		free(e->offset_ns);
		return -1;
	}
	for (uint32_t i = 0; i < n; i++)
		reports[i] = &x[i].r;
	int rc = vt_job_build(&e->job, reports, n);
	free(reports);
	if (rc != 0) {
		free(e->offset_ns);
		return -1;
	}
	place_traces(e);
	for (uint32_t t = 0; t < n; t++) {
		uint64_t end = vt_export_job_time(e, t, x[t].m->end_t_ns);
		e->end_ns = end > e->end_ns ? end : e->end_ns;
	}
	return 0;
}

void vt_export_job_close(struct vt_export_job *e)
{
	vt_job_free(&e->job);
	free(e->offset_ns);
	memset(e, 0, sizeof *e);
}

uint64_t vt_export_job_time(const struct vt_export_job *e, uint32_t trace, uint64_t t_ns)
{
	return t_ns + e->offset_ns[trace];
}

int64_t vt_export_job_row_of(const struct vt_export_job *e, uint32_t trace, uint32_t proc)
{
	for (uint32_t i = 0; i < e->job.nrows; i++)
		if (e->job.rows[i].trace == trace && e->job.rows[i].proc == proc)
			return i;
	return -1;
}
