/* The rank view as text and JSON (ranks_out.h). */
#include "ranks_out.h"

#include <math.h>
#include <string.h>

#include "rank_env.h"
#include "report_json.h"
#include "report_text.h"
#include "term.h"
#include "units.h"

const char *vt_rank_identified_by(const struct vt_rank_row *row)
{
	const struct vt_proc *p = &row->r->m->procs[row->proc];
	return row->rank >= 0 ? vt_rank_source_variable(p->rank_source) : "host and pid";
}

static const char *align_name(enum vt_align_by by)
{
	return by == VT_ALIGN_STEP_MARKERS ? "step markers" : "wall clock";
}

/* The categories some rank held at its peak: the table's columns. */
static int category_shown(const struct vt_job *j, int c)
{
	for (uint32_t i = 0; i < j->nrows; i++)
		if (j->rows[i].cats[c])
			return 1;
	return 0;
}

static void text_row(const struct vt_job *j, const struct vt_rank_row *row, FILE *out)
{
	const struct vt_proc *p = &row->r->m->procs[row->proc];
	char label[96], host[80], b[32];
	vt_rank_label(row, label, sizeof label);
	vt_format_bytes(row->peak_bytes, b, sizeof b);
	fprintf(out, "  %-22s %-16s %8d  %6d  %10s", label,
	        vt_term_safe(p->hostname, host, sizeof host), (int)p->pid, row->device, b);
	for (int c = 0; c < VT_CAT_COUNT; c++) {
		if (!category_shown(j, c))
			continue;
		vt_format_bytes(row->cats[c], b, sizeof b);
		fprintf(out, " %11s", b);
	}
	fprintf(out, " %8u", row->findings);
	if (row->failed_allocs)
		fprintf(out, "  out of memory (%u failed)", row->failed_allocs);
	else if (!p->clean_exit)
		fprintf(out, "  %s", p->running ? "running" : "did not exit cleanly");
	fputc('\n', out);
}

static void text_table(const struct vt_job *j, FILE *out)
{
	fprintf(out, "  %-22s %-16s %8s  %6s  %10s", "rank", "host", "pid", "device", "peak");
	for (int c = 0; c < VT_CAT_COUNT; c++)
		if (category_shown(j, c))
			fprintf(out, " %11s", vt_category_name(c));
	fprintf(out, " %8s\n", "findings");
	for (uint32_t i = 0; i < j->nrows; i++)
		text_row(j, &j->rows[i], out);
}

static void text_imbalance(const struct vt_job *j, const struct vt_rank_imbalance *im, FILE *out)
{
	const struct vt_rank_row *hi = &j->rows[im->hi], *lo = &j->rows[im->lo];
	char hl[96], ll[96], hb[32], lb[32], site[256];
	vt_rank_label(hi, hl, sizeof hl);
	vt_rank_label(lo, ll, sizeof ll);
	vt_format_bytes(hi->cats[im->category], hb, sizeof hb);
	vt_format_bytes(lo->cats[im->category], lb, sizeof lb);
	fprintf(out, "  %-11s %s holds %s, %s %s", vt_category_name(im->category), hl, hb, ll, lb);
	if (lo->cats[im->category])
		fprintf(out, " (%.2fx)\n", (double)hi->cats[im->category] / lo->cats[im->category]);
	else
		fprintf(out, " (%s holds none)\n", ll);
	for (uint32_t s = 0; s < im->nsites; s++) {
		vt_format_bytes(im->sites[s].hi_bytes - im->sites[s].lo_bytes, hb, sizeof hb);
		fprintf(out, "      +%s at %s\n", hb,
		        vt_term_safe(im->sites[s].name, site, sizeof site));
	}
}

#define RANKS_NAMED_PER_STEP 8 /* a 64-rank job's line stays a line */

/* "peak in step 1: rank 0, rank 1, ...": ranks grouped by the step their
 * peak fell in, steps in order. */
static void peaks_by_step(const struct vt_job *j, FILE *out)
{
	int last = -1;
	for (;;) {
		int step = -1; /* the next step after `last` some rank peaks in */
		for (uint32_t i = 0; i < j->nrows; i++)
			if (j->rows[i].peak_step > last &&
			    (step < 0 || j->rows[i].peak_step < step))
				step = j->rows[i].peak_step;
		if (step < 0)
			return;
		uint32_t named = 0, more = 0;
		fprintf(out, "  peak in step %d:", step);
		for (uint32_t i = 0; i < j->nrows; i++) {
			if (j->rows[i].peak_step != step)
				continue;
			char label[96];
			vt_rank_label(&j->rows[i], label, sizeof label);
			if (named < RANKS_NAMED_PER_STEP)
				fprintf(out, "%s %s", named++ ? "," : "", label);
			else
				more++;
		}
		if (more)
			fprintf(out, " and %u more", more);
		fputc('\n', out);
		last = step;
	}
}

static void text_alignment(const struct vt_job *j, FILE *out)
{
	const struct vt_rank_alignment *al = &j->alignment;
	char spread[32], skew[32];
	vt_format_seconds(al->start_spread_ns, spread, sizeof spread);
	fprintf(out, "aligned by %s: the logs started %s apart (wall clock)", align_name(al->by),
	        spread);
	if (al->by == VT_ALIGN_STEP_MARKERS) {
		vt_format_seconds(al->max_skew_ns, skew, sizeof skew);
		fprintf(out, "; %u steps marked on every rank, a step starts at most %s apart",
		        al->common_steps, skew);
	} else {
		fprintf(out, "; not every rank marked its steps, so times are compared, not steps");
	}
	fprintf(out, "\n");
	peaks_by_step(j, out);
}

void vt_job_write_text(const struct vt_job *j, FILE *out)
{
	fprintf(out, "== ranks: %u processes allocated device memory%s ==\n", j->nrows,
	        j->all_ranked ? "" : "; those without a launcher's rank are named host:pid");
	text_table(j, out);
	if (j->nimbalance) {
		fprintf(out, "\nimbalance between ranks (each at its own peak):\n");
		for (uint32_t i = 0; i < j->nimbalance; i++)
			text_imbalance(j, &j->imbalance[i], out);
	}
	fprintf(out, "\n");
	text_alignment(j, out);
	fprintf(out, "\n");
}

static void json_categories(struct vt_json *json, const uint64_t *cats)
{
	vt_json_key(json, "categories_at_peak");
	vt_json_begin_object(json);
	for (int c = 0; c < VT_CAT_COUNT; c++)
		vt_json_kv_u64(json, vt_category_name(c), cats[c]);
	vt_json_end_object(json);
}

static void json_rank_number(struct vt_json *json, const char *key, int64_t v)
{
	vt_json_key(json, key);
	if (v >= 0)
		vt_json_i64(json, v);
	else
		vt_json_null(json);
}

static void json_row(const struct vt_rank_row *row, struct vt_json *json)
{
	const struct vt_proc *p = &row->r->m->procs[row->proc];
	char label[96];
	vt_rank_label(row, label, sizeof label);
	vt_json_begin_object(json);
	json_rank_number(json, "rank", row->rank);
	vt_json_kv_string(json, "label", label);
	vt_json_kv_string(json, "identified_by", vt_rank_identified_by(row));
	json_rank_number(json, "local_rank", row->rank >= 0 ? p->local_rank : -1);
	json_rank_number(json, "world_size", p->world_size ? (int64_t)p->world_size : -1);
	vt_json_kv_string(json, "role", p->rank_role);
	vt_json_kv_string(json, "host", p->hostname);
	vt_json_kv_i64(json, "pid", p->pid);
	vt_json_kv_u64(json, "trace", row->trace);
	json_rank_number(json, "device", row->device);
	vt_json_kv_u64(json, "peak_bytes", row->peak_bytes);
	vt_json_kv_u64(json, "peak_t_ns", row->peak.t_ns);
	json_rank_number(json, "peak_step", row->peak_step);
	json_categories(json, row->cats);
	vt_json_kv_u64(json, "findings", row->findings);
	vt_json_kv_u64(json, "failed_allocations", row->failed_allocs);
	vt_json_kv_string(json, "state",
	                  p->running      ? "running"
	                  : p->clean_exit ? "exited"
	                                  : "not clean");
	vt_json_kv_u64(json, "start_realtime_ns", row->start_wall_ns);
	vt_json_end_object(json);
}

static void json_side(struct vt_json *json, const char *key, const struct vt_rank_row *row, int cat)
{
	char label[96];
	vt_rank_label(row, label, sizeof label);
	vt_json_key(json, key);
	vt_json_begin_object(json);
	json_rank_number(json, "rank", row->rank);
	vt_json_kv_string(json, "label", label);
	vt_json_kv_u64(json, "bytes", row->cats[cat]);
	vt_json_end_object(json);
}

static void json_imbalance(const struct vt_job *j, const struct vt_rank_imbalance *im,
                           struct vt_json *json)
{
	const struct vt_rank_row *hi = &j->rows[im->hi], *lo = &j->rows[im->lo];
	vt_json_begin_object(json);
	vt_json_kv_string(json, "category", vt_category_name(im->category));
	json_side(json, "most", hi, im->category);
	json_side(json, "least", lo, im->category);
	vt_json_kv_u64(json, "difference_bytes", hi->cats[im->category] - lo->cats[im->category]);
	vt_json_kv_double(json, "ratio",
	                  lo->cats[im->category]
	                      ? (double)hi->cats[im->category] / (double)lo->cats[im->category]
	                      : INFINITY);
	vt_json_key(json, "sites");
	vt_json_begin_array(json);
	for (uint32_t s = 0; s < im->nsites; s++) {
		vt_json_begin_object(json);
		vt_json_kv_string(json, "site", im->sites[s].name);
		vt_json_kv_u64(json, "most_bytes", im->sites[s].hi_bytes);
		vt_json_kv_u64(json, "least_bytes", im->sites[s].lo_bytes);
		vt_json_end_object(json);
	}
	vt_json_end_array(json);
	vt_json_end_object(json);
}

static void json_alignment(const struct vt_job *j, struct vt_json *json)
{
	const struct vt_rank_alignment *al = &j->alignment;
	vt_json_key(json, "alignment");
	vt_json_begin_object(json);
	vt_json_kv_string(json, "by", align_name(al->by));
	vt_json_kv_u64(json, "common_steps", al->common_steps);
	vt_json_kv_u64(json, "max_step_skew_ns", al->max_skew_ns);
	vt_json_kv_u64(json, "start_spread_ns", al->start_spread_ns);
	vt_json_end_object(json);
}

void vt_job_json_fields(const struct vt_job *j, struct vt_json *json)
{
	vt_json_key(json, "ranks");
	vt_json_begin_array(json);
	for (uint32_t i = 0; i < j->nrows; i++)
		json_row(&j->rows[i], json);
	vt_json_end_array(json);
	vt_json_key(json, "imbalance");
	vt_json_begin_array(json);
	for (uint32_t i = 0; i < j->nimbalance; i++)
		json_imbalance(j, &j->imbalance[i], json);
	vt_json_end_array(json);
	json_alignment(j, json);
}

static int write_job_json(const struct vt_job *j, const struct vt_report *const *reports,
                          uint32_t n, FILE *out)
{
	struct vt_json json;
	vt_json_init(&json, out, 1);
	vt_json_begin_object(&json);
	if (n == 1) {
		vt_report_json_fields(reports[0], &json);
	} else {
		vt_json_key(&json, "traces");
		vt_json_begin_array(&json);
		for (uint32_t i = 0; i < n; i++) {
			vt_json_begin_object(&json);
			vt_report_json_fields(reports[i], &json);
			vt_json_end_object(&json);
		}
		vt_json_end_array(&json);
	}
	vt_job_json_fields(j, &json);
	vt_json_end_object(&json);
	return vt_json_finish(&json);
}

int vt_job_write_report(const struct vt_job *j, const struct vt_report *const *reports, uint32_t n,
                        int json, FILE *out)
{
	if (json)
		return write_job_json(j, reports, n, out);
	vt_job_write_text(j, out);
	for (uint32_t i = 0; i < n; i++)
		if (vt_report_write_text(reports[i], out) != 0)
			return -1;
	return ferror(out) ? -1 : 0;
}
