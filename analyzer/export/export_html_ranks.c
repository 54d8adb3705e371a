/* The rank view's data for the HTML page (export_html_ranks.h). */
#include "export_html_ranks.h"
#include "export_html_series.h"

#include <stdlib.h>
#include <string.h>

#include "model_query.h"
#include "nomem.h"
#include "ranks_out.h"

#define RANK_POINTS_BUDGET 8000 /* time buckets over all ranks */
#define MAX_RANK_STEP_MARKS 2000

/* One rank's downsampled series, built while its trace's timeline is
 * replayed: the open bucket's moment with the most bytes and its last one. */
struct rank_series {
	uint64_t cats[VT_CAT_COUNT], live;
	uint64_t bucket, max_live;
	int open, max_is_peak, last_is_max;
	struct vt_html_point max, last;
	struct vt_html_point *p;
	uint32_t n, cap;
	int64_t peak_i; /* point of the rank's peak, -1: none */
};

static void append(struct rank_series *s, const struct vt_html_point *pt)
{
	if (s->n == s->cap) {
		s->cap = s->cap ? s->cap * 2 : 64;
		struct vt_html_point *p = realloc(s->p, s->cap * sizeof *p);
		if (!p)
			vt_nomem();
		s->p = p;
	}
	s->p[s->n++] = *pt;
}

static void flush_bucket(struct rank_series *s)
{
	if (!s->open)
		return;
	if (s->max_is_peak)
		s->peak_i = s->n;
	append(s, &s->max);
	if (!s->last_is_max)
		append(s, &s->last);
	s->open = 0;
}

/* One allocation or free of the rank at job time t_ns; is_peak: the
 * moment of its peak (kept whatever else its bucket holds). */
static void rank_step(struct rank_series *s, const struct vt_alloc *a, int sign, uint64_t t_ns,
                      uint64_t bucket, int is_peak)
{
	int c = a->category < VT_CAT_COUNT ? a->category : VT_CAT_UNKNOWN;
	uint64_t delta = sign > 0 ? a->bytes : (uint64_t)-a->bytes;
	s->cats[c] += delta;
	s->live += delta;
	if (s->open && bucket != s->bucket)
		flush_bucket(s);
	struct vt_html_point now = {.t_ns = t_ns}; /* times on the job's timeline */
	memcpy(now.cats, s->cats, sizeof now.cats);
	s->last = now;
	s->last_is_max = !s->open || is_peak || (!s->max_is_peak && s->live > s->max_live);
	if (s->last_is_max) {
		s->max = now;
		s->max_live = s->live;
		s->max_is_peak = is_peak;
	}
	if (!s->open) {
		s->open = 1;
		s->bucket = bucket;
	}
}

/* Replay trace t's timeline into the series of its ranks. */
static int replay_trace(const struct vt_export_job *e, uint32_t t, struct rank_series *series,
                        uint32_t buckets)
{
	const struct vt_export *x = &e->x[t];
	uint32_t n;
	struct vt_step *steps = vt_export_timeline(x, &n);
	int64_t *row_of = malloc((x->m->nprocs ? x->m->nprocs : 1) * sizeof *row_of);
	if (!steps || !row_of) {
		free(steps);
		free(row_of);
		return -1;
	}
	for (uint32_t p = 0; p < x->m->nprocs; p++)
		row_of[p] = vt_export_job_row_of(e, t, p);
	uint64_t span = e->end_ns + 1;
	for (uint32_t i = 0; i < n; i++) {
		const struct vt_alloc *a = &x->m->allocs[steps[i].alloc];
		int64_t k = row_of[a->proc];
		if (k < 0)
			continue;
		const struct vt_rank_row *row = &e->job.rows[k];
		uint64_t tj = vt_export_job_time(e, t, steps[i].when.t_ns);
		uint64_t bucket = (uint64_t)((unsigned __int128)tj * buckets / span);
		int is_peak = steps[i].sign > 0 && !vt_moment_cmp(&steps[i].when, &row->peak);
		rank_step(&series[k], a, steps[i].sign, tj, bucket, is_peak);
	}
	free(row_of);
	free(steps);
	return 0;
}

static void write_series(const struct vt_export_job *e, uint32_t k, const struct rank_series *s,
                         struct vt_json *j)
{
	const struct vt_rank_row *row = &e->job.rows[k];
	const struct vt_proc *p = &row->r->m->procs[row->proc];
	vt_json_begin_object(j);
	vt_json_kv_u64(j, "peak_t_ns", vt_export_job_time(e, row->trace, row->peak.t_ns));
	vt_json_kv_i64(j, "peak_i", s->peak_i);
	vt_html_points_json(j, s->p, s->n);
	uint32_t stride = p->nsteps > MAX_RANK_STEP_MARKS
	                      ? (p->nsteps + MAX_RANK_STEP_MARKS - 1) / MAX_RANK_STEP_MARKS
	                      : 1;
	vt_json_key(j, "steps");
	vt_json_begin_array(j);
	for (uint32_t i = 0; i < p->nsteps; i += stride)
		vt_json_u64(j, vt_export_job_time(e, row->trace, p->step_t[i]));
	vt_json_end_array(j);
	vt_json_end_object(j);
}

static int build_series(const struct vt_export_job *e, struct rank_series *series)
{
	uint32_t rows = e->job.nrows ? e->job.nrows : 1;
	uint32_t buckets = RANK_POINTS_BUDGET / rows;
	buckets = buckets > 600 ? 600 : buckets < 60 ? 60 : buckets;
	for (uint32_t k = 0; k < e->job.nrows; k++)
		series[k].peak_i = -1;
	for (uint32_t t = 0; t < e->n; t++)
		if (replay_trace(e, t, series, buckets) != 0)
			return -1;
	for (uint32_t k = 0; k < e->job.nrows; k++)
		flush_bucket(&series[k]);
	return 0;
}

int vt_html_ranks_json(const struct vt_export_job *e, struct vt_json *j)
{
	struct rank_series *series = calloc(e->job.nrows ? e->job.nrows : 1, sizeof *series);
	int rc = series ? build_series(e, series) : -1;
	vt_json_key(j, "job");
	vt_json_begin_object(j);
	vt_json_key(j, "traces");
	vt_json_begin_array(j);
	for (uint32_t t = 0; t < e->n; t++)
		vt_json_string(j, e->dirs[t] ? e->dirs[t] : "");
	vt_json_end_array(j);
	vt_json_key(j, "offsets_ns");
	vt_json_begin_array(j);
	for (uint32_t t = 0; t < e->n; t++)
		vt_json_u64(j, e->offset_ns[t]);
	vt_json_end_array(j);
	vt_json_kv_u64(j, "end_t_ns", e->end_ns);
	vt_job_json_fields(&e->job, j);
	vt_json_key(j, "series");
	vt_json_begin_array(j);
	for (uint32_t k = 0; rc == 0 && k < e->job.nrows; k++)
		write_series(e, k, &series[k], j);
	vt_json_end_array(j);
	vt_json_end_object(j);
	for (uint32_t k = 0; series && k < e->job.nrows; k++)
		free(series[k].p);
	free(series);
	return rc;
}
