/* The HTML timeline document (see export_html.h): the embedded page with
 * the trace's data written into its JSON slot. */
#include "export_html.h"
#include "export_html_series.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nomem.h" /* before <uthash.h>: its out-of-memory exit */
#include <uthash.h>

#include "export_html_ranks.h"
#include "export_stack.h"
#include "classify.h"
#include "findings.h"
#include "json_out.h"
#include "oom_finding.h"
#include "report.h"
#include "report_json.h"
#include "site_names.h"

/* analyzer/html/timeline.html, made into a C array at build time
 * (analyzer/html/embed.cmake). */
extern const char vt_html_template[];
extern const unsigned long vt_html_template_len;

#define DATA_SLOT "/*VT_DATA*/"
#define STACKS_PER_SITE 3
#define SITES_WITH_STACKS 300 /* the biggest sites carry stacks: size stays bounded */
#define MAX_STEP_MARKS 20000
#define POINTS_BUDGET 16000 /* time buckets over all devices */
#define MAX_SITES 2000      /* the site table: the biggest ones */

/* ---- stacks per site ---------------------------------------------------- */

struct site_stack {
	struct {
		uint32_t site, proc, stack;
	} key;
	uint64_t bytes, allocs;
	UT_hash_handle hh;
};

static int site_stack_cmp(const void *pa, const void *pb)
{
	const struct site_stack *a = *(struct site_stack *const *)pa;
	const struct site_stack *b = *(struct site_stack *const *)pb;
	if (a->key.site != b->key.site)
		return a->key.site < b->key.site ? -1 : 1;
	if (a->bytes != b->bytes)
		return a->bytes > b->bytes ? -1 : 1;
	return a->allocs > b->allocs ? -1 : a->allocs < b->allocs;
}

/* Every (site, stack) pair with its bytes, sorted by site then bytes. */
static struct site_stack **collect_stacks(const struct vt_export *x, size_t *n)
{
	struct site_stack *all = NULL, *e, *tmp;
	for (uint32_t i = 0; i < x->m->nallocs; i++) {
		const struct vt_alloc *a = &x->m->allocs[i];
		uint32_t s = x->alloc_site[i];
		if (s == VT_NO_INDEX || s >= SITES_WITH_STACKS || !a->stack_id)
			continue;
		struct site_stack probe;
		memset(&probe, 0, sizeof probe);
		probe.key.site = s;
		probe.key.proc = a->proc;
		probe.key.stack = a->stack_id;
		HASH_FIND(hh, all, &probe.key, sizeof probe.key, e);
		if (!e) {
			if (!(e = calloc(1, sizeof *e)))
				vt_nomem();
			e->key = probe.key;
			HASH_ADD(hh, all, key, sizeof e->key, e);
		}
		e->bytes += a->bytes;
		e->allocs++;
	}
	*n = HASH_COUNT(all);
	struct site_stack **v = malloc((*n ? *n : 1) * sizeof *v);
	if (!v)
		vt_nomem();
	size_t k = 0;
	HASH_ITER(hh, all, e, tmp)
	{
		HASH_DEL(all, e);
		v[k++] = e;
	}
	qsort(v, *n, sizeof *v, site_stack_cmp);
	return v;
}

static void frame_string(const char *text, void *ctx)
{
	vt_json_string(ctx, text);
}

static void write_stacks(const struct vt_export *x, struct vt_json *j, struct site_stack **v,
                         size_t n, size_t *pos, uint32_t site)
{
	vt_json_key(j, "stacks");
	vt_json_begin_array(j);
	for (int shown = 0; *pos < n && v[*pos]->key.site == site; (*pos)++) {
		if (shown++ >= STACKS_PER_SITE)
			continue;
		const struct site_stack *e = v[*pos];
		vt_json_begin_object(j);
		vt_json_kv_u64(j, "bytes", e->bytes);
		vt_json_kv_u64(j, "allocs", e->allocs);
		vt_json_key(j, "frames");
		vt_json_begin_array(j);
		vt_export_stack_frames(x->m, e->key.proc, e->key.stack, VT_FRAME_LOCATION,
		                       frame_string, j);
		vt_json_end_array(j);
		vt_json_end_object(j);
	}
	vt_json_end_array(j);
}

/* ---- sections of the data ---------------------------------------------- */

static void u64_array(struct vt_json *j, const char *key, const uint64_t *v, size_t n)
{
	vt_json_key(j, key);
	vt_json_begin_array(j);
	for (size_t i = 0; i < n; i++)
		vt_json_u64(j, v[i]);
	vt_json_end_array(j);
}

/* What the table shows of a site beyond the report's row: its allocations
 * and bytes at peak by category, and how sure the classifier was of them
 * (bytes-weighted over the site's allocations live at peak, over all of
 * them when none was), with the alternative holding the most such bytes. */
struct site_tally {
	uint64_t cat_allocs[VT_CAT_COUNT], cat_peak[VT_CAT_COUNT];
	uint64_t alt_bytes[VT_CAT_COUNT];
	double conf_peak, bytes_peak, conf_all, bytes_all;
};

static void tally_alloc(struct site_tally *t, const struct vt_alloc *a, int at_peak)
{
	int c = a->category < VT_CAT_COUNT ? a->category : VT_CAT_UNKNOWN;
	t->cat_allocs[c]++;
	t->conf_all += (double)a->bytes * a->confidence;
	t->bytes_all += (double)a->bytes;
	if (at_peak) {
		t->cat_peak[c] += a->bytes;
		t->conf_peak += (double)a->bytes * a->confidence;
		t->bytes_peak += (double)a->bytes;
	}
	struct vt_alternative alt;
	if (a->confidence < VT_CONFIDENT && vt_alloc_alternatives(a, &alt, 1))
		t->alt_bytes[alt.category] += a->bytes;
}

static void write_site_confidence(struct vt_json *j, const struct site_tally *t)
{
	double conf = t->bytes_peak > 0  ? t->conf_peak / t->bytes_peak
	              : t->bytes_all > 0 ? t->conf_all / t->bytes_all
	                                 : 100.0;
	vt_json_kv_i64(j, "confidence", (int64_t)(conf + 0.5));
	int best = -1;
	for (int c = 0; c < VT_CAT_COUNT; c++)
		if (t->alt_bytes[c] && (best < 0 || t->alt_bytes[c] > t->alt_bytes[best]))
			best = c;
	vt_json_key(j, "alternative");
	if (best >= 0)
		vt_json_string(j, vt_category_name(best));
	else
		vt_json_null(j);
}

static void write_sites(const struct vt_export *x, struct vt_json *j)
{
	uint32_t ns = x->r.nsites;
	struct site_tally *tally = calloc(ns ? ns : 1, sizeof *tally);
	if (!tally)
		vt_nomem();
	for (uint32_t i = 0; i < x->m->nallocs; i++) {
		const struct vt_alloc *a = &x->m->allocs[i];
		uint32_t s = x->alloc_site[i];
		if (s != VT_NO_INDEX)
			tally_alloc(&tally[s], a, vt_report_live_at_peak(&x->r, a));
	}
	size_t nstacks, pos = 0;
	struct site_stack **stacks = collect_stacks(x, &nstacks);
	vt_json_key(j, "sites");
	vt_json_begin_array(j);
	for (uint32_t s = 0; s < ns && s < MAX_SITES; s++) {
		const struct vt_site_stat *st = &x->r.sites[s];
		vt_json_begin_object(j);
		vt_json_kv_string(j, "name", st->name);
		vt_json_kv_string(j, "category", vt_category_name(st->category));
		write_site_confidence(j, &tally[s]);
		vt_json_kv_u64(j, "bytes_at_peak", st->bytes_at_peak);
		vt_json_kv_u64(j, "allocs", st->allocs);
		u64_array(j, "cat_allocs", tally[s].cat_allocs, VT_CAT_COUNT);
		u64_array(j, "cat_peak", tally[s].cat_peak, VT_CAT_COUNT);
		write_stacks(x, j, stacks, nstacks, &pos, s);
		vt_json_kv_bool(j, "stacks_left_out", s >= SITES_WITH_STACKS);
		vt_json_end_object(j);
	}
	vt_json_end_array(j);
	vt_json_kv_u64(j, "sites_left_out", ns > MAX_SITES ? ns - MAX_SITES : 0);
	for (size_t k = 0; k < nstacks; k++)
		free(stacks[k]);
	free(stacks);
	free(tally);
}

static void frame_json(const char *text, void *ctx)
{
	vt_json_string(ctx, text);
}

/* A growth_per_step flag's rate and fill in words, and its site's stack. */
static void growth_keys(const struct vt_export *x, const struct vt_finding *f, struct vt_json *j)
{
	char text[512];
	vt_growth_text(&f->growth, text, sizeof text);
	vt_json_kv_string(j, "summary", text);
	vt_json_key(j, "stack");
	vt_json_begin_array(j);
	vt_export_stack_frames(x->m, f->proc, f->stack_id, VT_FRAME_LOCATION, frame_json, j);
	vt_json_end_array(j);
}

static void write_flags(const struct vt_export *x, struct vt_json *j)
{
	vt_json_key(j, "flags");
	vt_json_begin_array(j);
	for (uint32_t i = 0; i < x->r.findings.n; i++) {
		const struct vt_finding *f = &x->r.findings.v[i];
		char site[256];
		vt_name_site(x->m, f->proc, f->stack_id, site, sizeof site);
		vt_json_begin_object(j);
		vt_json_kv_string(j, "kind", vt_finding_kind_name(f->kind));
		vt_json_key(j, "devices");
		vt_json_begin_array(j);
		for (uint32_t d = 0; d < f->ndev; d++)
			vt_json_u64(j, f->devices[d]);
		vt_json_end_array(j);
		u64_array(j, "bytes", f->bytes, f->ndev);
		vt_json_kv_u64(j, "copies", f->copies);
		vt_json_kv_string(j, "site", site);
		vt_json_kv_u64(j, "t_ns", f->t_ns);
		vt_json_kv_i64(j, "confidence", f->confidence);
		vt_json_kv_string(j, "advice", f->advice);
		if (f->kind == VT_FINDING_GROWTH)
			growth_keys(x, f, j);
		vt_json_end_object(j);
	}
	vt_json_end_array(j);
}

/* The out-of-memory finding (report.h), null when the job had none; the
 * verdict line; each category's colour (the text report's). */
static void write_oom(const struct vt_export *x, const char *dir, struct vt_json *j)
{
	const struct vt_oom_finding *o = &x->r.oom;
	char verdict[1024], cmd[4200];
	vt_report_verdict(&x->r, verdict, sizeof verdict);
	vt_json_kv_string(j, "verdict", verdict);
	vt_json_key(j, "category_colors");
	vt_json_begin_array(j);
	for (int c = 0; c < VT_CAT_COUNT; c++) {
		char hex[8];
		snprintf(hex, sizeof hex, "#%06x", (unsigned)vt_category_rgb(c));
		vt_json_string(j, hex);
	}
	vt_json_end_array(j);
	vt_json_key(j, "oom");
	if (!o->present) {
		vt_json_null(j);
		return;
	}
	vt_oom_finding_command(dir && *dir ? dir : "DIR", cmd, sizeof cmd);
	vt_json_begin_object(j);
	vt_json_kv_i64(j, "device", o->device);
	vt_json_kv_string(j, "api", o->api);
	vt_json_kv_u64(j, "requested_bytes", o->request_bytes);
	vt_json_kv_u64(j, "t_ns", o->t_ns);
	vt_json_kv_string(j, "site", o->site);
	vt_json_kv_i64(j, "pid", o->pid);
	vt_json_kv_bool(j, "have_free", o->have_free);
	vt_json_kv_u64(j, "free_bytes", o->free_bytes);
	vt_json_kv_u64(j, "total_bytes", o->total_bytes);
	vt_json_kv_u64(j, "live_bytes", o->live_bytes);
	vt_report_oom_holders_json(j, o);
	vt_json_kv_string(j, "message", o->message);
	vt_json_kv_string(j, "likely_cause", o->likely_cause);
	vt_json_kv_string(j, "command", cmd);
	vt_json_end_object(j);
}

static void write_processes(const struct vt_export *x, struct vt_json *j)
{
	vt_json_key(j, "processes");
	vt_json_begin_array(j);
	for (uint32_t p = 0; p < x->m->nprocs; p++) {
		const struct vt_proc *pr = &x->m->procs[p];
		vt_json_begin_object(j);
		vt_json_kv_i64(j, "pid", pr->pid);
		vt_json_kv_string(j, "exe", pr->exe ? pr->exe : "");
		vt_json_kv_string(j, "mode", pr->pool_mode ? "pool" : "per-tensor");
		vt_json_kv_string(j, "framework", vt_framework_name(vt_framework_of(pr)));
		vt_json_kv_u64(j, "steps", pr->nsteps);
		struct vt_self_cost_summary sc; /* the shim's own time, when measured */
		if (vt_self_cost_summarize(&pr->self_cost, 0, &sc) == 0)
			vt_json_kv_u64(j, "recording_ns", (uint64_t)(sc.total_ns + 0.5));
		vt_json_end_object(j);
	}
	vt_json_end_array(j);
}

static void write_points(struct vt_json *j, const struct vt_html_series *s)
{
	vt_html_points_json(j, s->p, s->n);
	vt_json_key(j, "top"); /* per point: [site, bytes, site, bytes, ...] */
	vt_json_begin_array(j);
	for (uint32_t i = 0; i < s->n; i++) {
		vt_json_begin_array(j);
		for (int k = 0; k < VT_HTML_TOP_SITES && s->p[i].top_site[k] != VT_NO_INDEX; k++) {
			vt_json_u64(j, s->p[i].top_site[k]);
			vt_json_u64(j, s->p[i].top_bytes[k]);
		}
		vt_json_end_array(j);
	}
	vt_json_end_array(j);
}

static void write_markers(const struct vt_export *x, struct vt_json *j, int dev)
{
	const struct vt_proc *main = x->m->nprocs ? &x->m->procs[x->r.main_proc] : NULL;
	uint32_t nsteps = main ? main->nsteps : 0;
	uint32_t stride =
	    nsteps > MAX_STEP_MARKS ? (nsteps + MAX_STEP_MARKS - 1) / MAX_STEP_MARKS : 1;
	vt_json_key(j, "steps");
	vt_json_begin_array(j);
	for (uint32_t i = 0; i < nsteps; i += stride)
		vt_json_u64(j, main->step_t[i]);
	vt_json_end_array(j);
	vt_json_key(j, "ooms");
	vt_json_begin_array(j);
	for (uint32_t i = 0; i < x->m->nfailed; i++) {
		const struct vt_failed_alloc *f = &x->m->failed[i];
		if (f->device != dev && f->device != VT_DEVICE_UNKNOWN)
			continue;
		char site[256];
		vt_name_site(x->m, f->proc, f->stack_id, site, sizeof site);
		vt_json_begin_object(j);
		vt_json_kv_u64(j, "t_ns", f->t_ns);
		vt_json_kv_u64(j, "bytes", f->bytes);
		vt_json_kv_i64(j, "result", f->result);
		vt_json_kv_string(j, "site", site);
		vt_json_end_object(j);
	}
	vt_json_end_array(j);
}

static int write_devices(const struct vt_export *x, struct vt_json *j)
{
	int devs[VT_MAX_DEVICES], ndev = vt_export_devices(x, devs);
	uint32_t buckets = POINTS_BUDGET / (uint32_t)(ndev ? ndev : 1);
	buckets = buckets > 3000 ? 3000 : buckets < 500 ? 500 : buckets;
	struct vt_html_series *series;
	int n = vt_html_series_build(x, buckets, &series);
	if (n < 0)
		return -1;
	vt_json_key(j, "devices");
	vt_json_begin_array(j);
	for (int k = 0; k < n; k++) {
		const struct vt_device *d = &x->m->devices[series[k].device];
		vt_json_begin_object(j);
		vt_json_kv_u64(j, "ordinal", (uint64_t)series[k].device);
		vt_json_kv_string(j, "name", d->name ? d->name : "");
		vt_json_kv_u64(j, "total_bytes", d->total_bytes);
		vt_json_kv_u64(j, "peak_bytes", d->peak_bytes);
		vt_json_kv_u64(j, "peak_t_ns", d->peak_t_ns);
		u64_array(j, "peak_cats", x->r.dev_cats[series[k].device], VT_CAT_COUNT);
		vt_json_key(j, "used");
		vt_json_begin_array(j);
		for (int c = 0; c < VT_CAT_COUNT; c++)
			vt_json_u64(j, series[k].used[c]);
		vt_json_end_array(j);
		if (series[k].peak_i == VT_NO_INDEX)
			vt_json_kv_i64(j, "peak_i", -1);
		else
			vt_json_kv_u64(j, "peak_i", series[k].peak_i);
		write_points(j, &series[k]);
		write_markers(x, j, series[k].device);
		vt_json_end_object(j);
	}
	vt_json_end_array(j);
	vt_html_series_free(series, n);
	return 0;
}

/* Each device's used memory by holder, at its highest reading and its last
 * (accounting.h): the page's accounting panels. */
static void write_accounting(const struct vt_export *x, struct vt_json *j)
{
	vt_report_accounting_json(j, &x->r.accounting);
}

/* job: the rank view's data too (NULL: a trace on its own). */
static int write_data(const struct vt_export *x, const char *dir, const struct vt_export_job *job,
                      FILE *out)
{
	struct vt_json j;
	vt_json_init(&j, out, 0);
	vt_json_begin_object(&j);
	vt_json_kv_u64(&j, "version", 1);
	vt_json_kv_string(&j, "trace", dir ? dir : "");
	vt_json_kv_u64(&j, "events", x->m->totals.events);
	vt_json_kv_u64(&j, "end_t_ns", x->m->end_t_ns);
	vt_json_key(&j, "categories");
	vt_json_begin_array(&j);
	for (int c = 0; c < VT_CAT_COUNT; c++)
		vt_json_string(&j, vt_category_name(c));
	vt_json_end_array(&j);
	if (!x->at_each_peak) { /* --at end|SECONDS: marked on every chart */
		vt_json_key(&j, "at");
		vt_json_begin_object(&j);
		vt_json_kv_string(&j, "label", x->r.at_label);
		vt_json_kv_u64(&j, "t_ns", x->at.t_ns == VT_T_NEVER ? x->m->end_t_ns : x->at.t_ns);
		vt_json_end_object(&j);
	}
	write_processes(x, &j);
	write_oom(x, dir, &j);
	write_flags(x, &j);
	vt_json_kv_i64(&j, "confident", VT_CONFIDENT);
	vt_report_low_confidence_json(&j, &x->r);
	int rc = write_devices(x, &j);
	write_accounting(x, &j);
	write_sites(x, &j);
	if (job && vt_html_ranks_json(job, &j) != 0)
		rc = -1;
	vt_json_end_object(&j);
	return vt_json_finish(&j) || rc ? -1 : 0;
}

/* JSON inside <script>: "</script>" or "<!--" in a site name (C++
 * templates have '<') would change how HTML reads the element. '<' only
 * occurs inside JSON strings, where "\u003c" means the same. */
static void put_script_safe(FILE *out, const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (s[i] == '<')
			fputs("\\u003c", out);
		else
			fputc(s[i], out);
	}
}

static int write_page(const struct vt_export *x, const char *dir, const struct vt_export_job *job,
                      FILE *out)
{
	const char *tpl = vt_html_template;
	const char *slot = strstr(tpl, DATA_SLOT);
	if (!slot)
		return -1;
	char *data = NULL;
	size_t len = 0;
	FILE *mem = open_memstream(&data, &len);
	if (!mem)
		return -1;
	int rc = write_data(x, dir, job, mem);
	if (fclose(mem) != 0)
		rc = -1;
	fwrite(tpl, 1, (size_t)(slot - tpl), out);
	put_script_safe(out, data, len);
	const char *rest = slot + strlen(DATA_SLOT);
	fwrite(rest, 1, vt_html_template_len - (size_t)(rest - tpl), out);
	free(data);
	return rc || ferror(out) ? -1 : 0;
}

int vt_export_html(const struct vt_export *x, const char *dir, FILE *out)
{
	return write_page(x, dir, NULL, out);
}

int vt_export_html_job(const struct vt_export_job *e, FILE *out)
{
	return write_page(&e->x[0], e->dirs[0], e, out);
}

struct html_job {
	const struct vt_export *x;
	const char *dir;
};

static int write_html_job(FILE *out, void *ctx)
{
	const struct html_job *job = ctx;
	return vt_export_html(job->x, job->dir, out);
}

static int write_html_of_job(FILE *out, void *ctx)
{
	return vt_export_html_job(ctx, out);
}

/* Each model opened as an export, the job over them (when they make one:
 * several traces, or one with ranked processes), the page written. */
int vt_export_html_file(struct vt_model *const *models, const char *const *dirs, uint32_t n,
                        const char *path, char *err, size_t errlen)
{
	struct vt_export *x = calloc(n, sizeof *x);
	uint32_t opened = 0;
	int rc = -1;
	if (!x)
		snprintf(err, errlen, "out of memory");
	while (x && opened < n &&
	       vt_export_open(&x[opened], models[opened], NULL, err, errlen) == 0)
		opened++;
	struct vt_export_job job;
	if (x && opened == n && !vt_export_job_wanted(x, n)) { /* one trace, no ranks */
		struct html_job one = {&x[0], dirs[0]};
		rc = vt_export_write_file(path, write_html_job, &one, err, errlen);
	} else if (x && opened == n) {
		if (vt_export_job_open(&job, x, dirs, n) == 0) {
			rc = vt_export_write_file(path, write_html_of_job, &job, err, errlen);
			vt_export_job_close(&job);
		} else {
			snprintf(err, errlen, "out of memory");
		}
	}
	while (opened-- > 0)
		vt_export_close(&x[opened]);
	free(x);
	return rc;
}
