/* `vramtrace report --stream`: what a streaming model (model_stream.h)
 * knows, as text or JSON. Per process and device: the peak, when, what was
 * live then by allocating site and the largest allocations, what was left
 * at the end; the trace's totals and its failed allocations. No categories:
 * those need the full model. */
#include "report_stream.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "json_out.h"
#include "live_curve.h"
#include "nomem.h"
#include "model_stream.h"
#include "record_text.h"
#include "report.h"
#include "report_json.h"
#include "report_text.h"
#include "site_names.h"
#include "term.h"
#include "units.h"

/* A snapshot's sites grouped by name, as the full report groups them. */
struct named_site {
	char name[256];
	uint64_t bytes;
	uint32_t allocs;
};

static int by_name(const void *pa, const void *pb)
{
	return strcmp(((const struct named_site *)pa)->name, ((const struct named_site *)pb)->name);
}

static int by_bytes(const void *pa, const void *pb)
{
	const struct named_site *a = pa, *b = pb;
	if (a->bytes != b->bytes)
		return a->bytes > b->bytes ? -1 : 1;
	return strcmp(a->name, b->name);
}

/* The snapshot's sites by name, largest first; *n of them (freed by the
 * caller). */
static struct named_site *named_sites(const struct vt_model *m, const struct vt_stream_peak *pk,
                                      uint32_t *n)
{
	struct named_site *v = calloc(pk->nsites ? pk->nsites : 1, sizeof *v);
	if (!v)
		vt_nomem();
	for (uint32_t i = 0; i < pk->nsites; i++) {
		vt_name_site(m, pk->proc, pk->sites[i].stack_id, v[i].name, sizeof v[i].name);
		v[i].bytes = pk->sites[i].bytes;
		v[i].allocs = pk->sites[i].allocs;
	}
	qsort(v, pk->nsites, sizeof *v, by_name);
	uint32_t k = 0;
	for (uint32_t i = 0; i < pk->nsites; i++) {
		if (k && !strcmp(v[k - 1].name, v[i].name)) {
			v[k - 1].bytes += v[i].bytes;
			v[k - 1].allocs += v[i].allocs;
		} else {
			v[k++] = v[i];
		}
	}
	qsort(v, k, sizeof *v, by_bytes);
	*n = k;
	return v;
}

static const char *device_name(const struct vt_model *m, int dev)
{
	return m->devices[dev].name ? m->devices[dev].name : "?";
}

/* ---- text ---------------------------------------------------------------- */

static void text_sites(const struct vt_model *m, const struct vt_stream_peak *pk, const char *when,
                       int top, FILE *out)
{
	uint32_t n = 0;
	struct named_site *v = named_sites(m, pk, &n);
	fprintf(out, "    %s, by allocating site:\n    %10s %8s  site\n", when, "bytes", "live");
	for (uint32_t i = 0; i < n && i < (uint32_t)top; i++) {
		char b[32], safe[512];
		vt_format_bytes(v[i].bytes, b, sizeof b);
		fprintf(out, "    %10s %8" PRIu32 "  %s\n", b, v[i].allocs,
		        vt_term_safe(v[i].name, safe, sizeof safe));
	}
	if (n > (uint32_t)top)
		fprintf(out, "    ... %" PRIu32 " more sites\n", n - (uint32_t)top);
	free(v);
}

#define SPARK_COLS 64

/* The curve in SPARK_COLS columns, each the most live in its share of the
 * run, as a level of " .:-=+*#%@" ('@' is the peak). */
static void text_curve(const struct vt_model *m, const struct vt_stream_peak *pk, FILE *out)
{
	static const char levels[] = " .:-=+*#%@";
	const struct vt_live_curve *c = vt_stream_curve(m, pk->proc, pk->device);
	if (!c || !c->n || !pk->bytes)
		return;
	char line[SPARK_COLS + 1], from[32], to[32];
	uint32_t cols = c->n < SPARK_COLS ? c->n : SPARK_COLS;
	for (uint32_t j = 0; j < cols; j++) {
		uint64_t top = 0;
		for (uint32_t b = j * c->n / cols; b < (j + 1) * c->n / cols; b++)
			top = c->max[b] > top ? c->max[b] : top;
		double share = (double)top / (double)pk->bytes; /* no product to overflow */
		int lv = share >= 1.0 ? 9 : (int)(share * 9.0);
		line[j] = levels[lv > 0 ? lv : top ? 1 : 0]; /* ' ' only for nothing */
	}
	line[cols] = 0;
	vt_format_seconds(c->t0, from, sizeof from);
	vt_format_seconds(m->procs[pk->proc].last_t_ns, to, sizeof to); /* its last event */
	fprintf(out, "    live bytes over time, %s to %s ('@' the peak):\n    |%s|\n", from, to,
	        line);
}

static void text_largest(const struct vt_model *m, const struct vt_stream_peak *pk, FILE *out)
{
	fprintf(out, "    largest allocations at the peak:\n    %10s %12s %10s  site\n", "bytes",
	        "made at", "from host");
	for (uint32_t i = 0; i < pk->nlargest; i++) {
		const struct vt_stream_alloc *a = &pk->largest[i];
		char b[32], when[32], h2d[32], site[256], safe[512];
		vt_format_bytes(a->bytes, b, sizeof b);
		vt_format_seconds(a->t_alloc, when, sizeof when);
		vt_format_bytes(a->h2d_bytes, h2d, sizeof h2d);
		vt_name_site(m, pk->proc, a->stack_id, site, sizeof site);
		fprintf(out, "    %10s %12s %10s  %s (%s)\n", b, when, a->h2d_bytes ? h2d : "-",
		        vt_term_safe(site, safe, sizeof safe), vt_api_name(a->api));
	}
}

static void text_peak(const struct vt_model *m, const struct vt_stream_peak *pk, int top, FILE *out)
{
	char peak[32], when[32], endb[32], cap[32];
	vt_format_bytes(pk->bytes, peak, sizeof peak);
	vt_format_seconds(pk->t_ns, when, sizeof when);
	vt_format_bytes(pk->end_bytes, endb, sizeof endb);
	vt_format_bytes(m->devices[pk->device].total_bytes, cap, sizeof cap);
	fprintf(out,
	        "\nGPU %u %s (capacity %s), pid %d: peak %s at %s, %" PRIu32
	        " allocations live; %s at the end\n",
	        pk->device, device_name(m, pk->device),
	        m->devices[pk->device].total_bytes ? cap : "unknown", m->procs[pk->proc].pid, peak,
	        when, pk->live_allocs, endb);
	uint32_t sharing = vt_stream_procs_on_device(m, pk->device);
	if (sharing > 1) {
		uint64_t lo, hi;
		char los[32], his[32];
		vt_stream_combined_peak(m, pk->device, &lo, &hi);
		vt_format_bytes(lo, los, sizeof los);
		vt_format_bytes(hi, his, sizeof his);
		fprintf(out,
		        "    %" PRIu32 " processes used this GPU: this is this process's own peak; "
		        "together they held between %s and %s at most (`vramtrace report` merges "
		        "them in time)\n",
		        sharing, los, his);
	}
	text_curve(m, pk, out);
	text_sites(m, pk, "at the peak", top, out);
	text_largest(m, pk, out);
}

/* Each failed allocation the model took a snapshot at: what was asked,
 * where, and what its process held on that GPU then (sites for the first). */
static void text_failed(const struct vt_model *m, int top, FILE *out)
{
	uint32_t n;
	const struct vt_stream_peak *snap = vt_stream_failures(m, &n);
	fprintf(out, "\nfailed allocations: %" PRIu64 "%s\n", m->totals.failed_allocs,
	        n < m->totals.failed_allocs ? " (the first ones below)" : "");
	for (uint32_t i = 0; i < n && i < m->nfailed; i++) {
		const struct vt_failed_alloc *f = &m->failed[i];
		char b[32], when[32], live[32], site[256], safe[512];
		vt_format_bytes(f->bytes, b, sizeof b);
		vt_format_seconds(f->t_ns, when, sizeof when);
		vt_format_bytes(snap[i].bytes, live, sizeof live);
		vt_name_site(m, f->proc, f->stack_id, site, sizeof site);
		fprintf(out,
		        "  %" PRIu32 ". %s on GPU %u at %s, pid %d, %s (%s, error %d): %s live on "
		        "that GPU then, %" PRIu32 " allocations\n",
		        i + 1, b, f->device, when, m->procs[f->proc].pid,
		        vt_term_safe(site, safe, sizeof safe), vt_api_name(f->api), f->result, live,
		        snap[i].live_allocs);
		if (i == 0 && snap[i].nsites)
			text_sites(m, &snap[i], "at that moment", top, out);
	}
}

static void text_processes(const struct vt_model *m, FILE *out)
{
	for (uint32_t i = 0; i < m->nprocs; i++) {
		const struct vt_proc *p = &m->procs[i];
		char exe[1024], status[64];
		vt_report_proc_status(p, status, sizeof status);
		fprintf(out, "  pid %-7d %s  %s, %" PRIu64 " step markers\n", p->pid,
		        vt_term_safe(p->exe, exe, sizeof exe), status, vt_stream_steps(m, i));
		vt_report_recording_cost_text(p, out);
	}
}

int vt_report_stream_text(const struct vt_model *m, const char *title, int top, FILE *out)
{
	char safe[1024];
	fprintf(out, "vramtrace report --stream: %s\n", vt_term_safe(title, safe, sizeof safe));
	fprintf(out,
	        "  %" PRIu64 " events, %" PRIu64 " allocations, %" PRIu64 " frees; at most %" PRIu32
	        " allocation records held\n",
	        m->totals.events, m->totals.alloc_calls, m->totals.free_calls,
	        vt_stream_records_high(m));
	fprintf(out, "  (categories need the whole trace in memory: vramtrace report DIR)\n");
	text_processes(m, out);
	uint32_t n;
	const struct vt_stream_peak *pk = vt_stream_peaks(m, &n);
	for (int d = 0; d < VT_MAX_DEVICES; d++)
		for (uint32_t i = 0; i < n; i++)
			if (pk[i].device == d)
				text_peak(m, &pk[i], top, out);
	if (!n)
		fprintf(out, "\nno device memory was allocated\n");
	text_failed(m, top, out);
	return ferror(out) ? -1 : 0;
}

/* ---- the site table, for diff --stream -------------------------------------- */

static int stat_by_bytes(const void *pa, const void *pb)
{
	const struct vt_site_stat *a = pa, *b = pb;
	if (a->bytes_at_peak != b->bytes_at_peak)
		return a->bytes_at_peak > b->bytes_at_peak ? -1 : 1;
	return strcmp(a->name, b->name);
}

static int stat_by_name(const void *pa, const void *pb)
{
	return strcmp(((const struct vt_site_stat *)pa)->name,
	              ((const struct vt_site_stat *)pb)->name);
}

void vt_report_build_stream(struct vt_report *r, struct vt_model *m)
{
	memset(r, 0, sizeof *r);
	r->m = m;
	vt_model_finish(m);
	uint32_t npeaks, cap = 0;
	const struct vt_stream_peak *pk = vt_stream_peaks(m, &npeaks);
	for (uint32_t i = 0; i < npeaks; i++)
		cap += pk[i].nsites;
	r->sites = calloc(cap ? cap : 1, sizeof *r->sites);
	if (!r->sites)
		vt_nomem();
	uint32_t n = 0; /* every peak's sites, then the same names merged */
	for (uint32_t i = 0; i < npeaks; i++) {
		uint32_t nv = 0;
		struct named_site *v = named_sites(m, &pk[i], &nv);
		for (uint32_t k = 0; k < nv; k++) {
			struct vt_site_stat *s = &r->sites[n++];
			snprintf(s->name, sizeof s->name, "%s", v[k].name);
			s->category = VT_CAT_UNKNOWN;
			s->bytes_at_peak = s->bytes_by_cat[VT_CAT_UNKNOWN] = v[k].bytes;
		}
		free(v);
	}
	qsort(r->sites, n, sizeof *r->sites, stat_by_name);
	for (uint32_t i = 0; i < n; i++) {
		struct vt_site_stat *last = r->nsites ? &r->sites[r->nsites - 1] : NULL;
		if (last && !strcmp(last->name, r->sites[i].name)) {
			last->bytes_at_peak += r->sites[i].bytes_at_peak;
			last->bytes_by_cat[VT_CAT_UNKNOWN] += r->sites[i].bytes_at_peak;
		} else {
			r->sites[r->nsites++] = r->sites[i];
		}
	}
	qsort(r->sites, r->nsites, sizeof *r->sites, stat_by_bytes);
}

/* ---- JSON ---------------------------------------------------------------- */

static void json_sites(struct vt_json *j, const struct vt_model *m, const struct vt_stream_peak *pk,
                       int top)
{
	uint32_t n = 0;
	struct named_site *v = named_sites(m, pk, &n);
	vt_json_key(j, "sites");
	vt_json_begin_array(j);
	for (uint32_t i = 0; i < n && i < (uint32_t)top; i++) {
		vt_json_begin_object(j);
		vt_json_kv_string(j, "site", v[i].name);
		vt_json_kv_u64(j, "bytes", v[i].bytes);
		vt_json_kv_u64(j, "allocs", v[i].allocs);
		vt_json_end_object(j);
	}
	vt_json_end_array(j);
	vt_json_kv_u64(j, "sites_total", n);
	free(v);
}

static void json_largest(struct vt_json *j, const struct vt_model *m,
                         const struct vt_stream_peak *pk)
{
	vt_json_key(j, "largest");
	vt_json_begin_array(j);
	for (uint32_t i = 0; i < pk->nlargest; i++) {
		const struct vt_stream_alloc *a = &pk->largest[i];
		char site[256];
		vt_name_site(m, pk->proc, a->stack_id, site, sizeof site);
		vt_json_begin_object(j);
		vt_json_kv_u64(j, "bytes", a->bytes);
		vt_json_kv_u64(j, "t_ns", a->t_alloc);
		vt_json_kv_u64(j, "h2d_bytes", a->h2d_bytes);
		vt_json_kv_string(j, "site", site);
		vt_json_kv_string(j, "api", vt_api_name(a->api));
		vt_json_end_object(j);
	}
	vt_json_end_array(j);
}

static void json_curve(struct vt_json *j, const struct vt_model *m, const struct vt_stream_peak *pk)
{
	const struct vt_live_curve *c = vt_stream_curve(m, pk->proc, pk->device);
	vt_json_key(j, "timeline");
	if (!c) {
		vt_json_null(j);
		return;
	}
	vt_json_begin_object(j);
	vt_json_kv_u64(j, "t0_ns", c->t0);
	vt_json_kv_u64(j, "bucket_ns", c->width);
	vt_json_key(j, "max_bytes");
	vt_json_begin_array(j);
	for (uint32_t i = 0; i < c->n; i++)
		vt_json_u64(j, c->max[i]);
	vt_json_end_array(j);
	vt_json_end_object(j);
}

static void json_peak(struct vt_json *j, const struct vt_model *m, const struct vt_stream_peak *pk,
                      int top)
{
	vt_json_begin_object(j);
	vt_json_kv_i64(j, "pid", m->procs[pk->proc].pid);
	vt_json_kv_u64(j, "device", pk->device);
	vt_json_kv_string(j, "device_name", device_name(m, pk->device));
	vt_json_kv_u64(j, "capacity_bytes", m->devices[pk->device].total_bytes);
	vt_json_kv_u64(j, "peak_bytes", pk->bytes);
	vt_json_kv_u64(j, "peak_t_ns", pk->t_ns);
	vt_json_kv_u64(j, "end_bytes", pk->end_bytes);
	vt_json_kv_u64(j, "live_allocs", pk->live_allocs);
	vt_json_kv_u64(j, "processes_on_device", vt_stream_procs_on_device(m, pk->device));
	uint64_t lo, hi; /* the device's peak over all its processes, bounded */
	vt_stream_combined_peak(m, pk->device, &lo, &hi);
	vt_json_kv_u64(j, "device_peak_at_least", lo);
	vt_json_kv_u64(j, "device_peak_at_most", hi);
	json_sites(j, m, pk, top);
	json_largest(j, m, pk);
	json_curve(j, m, pk);
	vt_json_end_object(j);
}

static void json_failures(struct vt_json *j, const struct vt_model *m, int top)
{
	uint32_t n;
	const struct vt_stream_peak *snap = vt_stream_failures(m, &n);
	vt_json_key(j, "failures");
	vt_json_begin_array(j);
	for (uint32_t i = 0; i < n && i < m->nfailed; i++) {
		const struct vt_failed_alloc *f = &m->failed[i];
		char site[256];
		vt_name_site(m, f->proc, f->stack_id, site, sizeof site);
		vt_json_begin_object(j);
		vt_json_kv_i64(j, "pid", m->procs[f->proc].pid);
		vt_json_kv_u64(j, "device", f->device);
		vt_json_kv_u64(j, "bytes", f->bytes);
		vt_json_kv_u64(j, "t_ns", f->t_ns);
		vt_json_kv_i64(j, "result", f->result);
		vt_json_kv_string(j, "api", vt_api_name(f->api));
		vt_json_kv_string(j, "site", site);
		vt_json_kv_u64(j, "live_bytes", snap[i].bytes);
		vt_json_kv_u64(j, "live_allocs", snap[i].live_allocs);
		json_sites(j, m, &snap[i], top);
		json_largest(j, m, &snap[i]);
		vt_json_end_object(j);
	}
	vt_json_end_array(j);
}

int vt_report_stream_json(const struct vt_model *m, const char *title, int top, FILE *out)
{
	struct vt_json j;
	vt_json_init(&j, out, 1);
	vt_json_begin_object(&j);
	vt_json_kv_string(&j, "mode", "stream");
	vt_json_kv_string(&j, "trace", title);
	vt_json_kv_u64(&j, "events", m->totals.events);
	vt_json_kv_u64(&j, "allocations", m->totals.alloc_calls);
	vt_json_kv_u64(&j, "frees", m->totals.free_calls);
	vt_json_kv_u64(&j, "records_held", vt_stream_records_high(m));
	vt_json_kv_u64(&j, "failed_allocs", m->totals.failed_allocs);
	vt_json_key(&j, "processes");
	vt_json_begin_array(&j);
	for (uint32_t i = 0; i < m->nprocs; i++) {
		vt_json_begin_object(&j);
		vt_json_kv_i64(&j, "pid", m->procs[i].pid);
		vt_json_kv_string(&j, "exe", m->procs[i].exe);
		vt_json_kv_bool(&j, "clean_exit", m->procs[i].clean_exit);
		vt_json_kv_u64(&j, "step_markers", vt_stream_steps(m, i));
		vt_report_recording_cost_json(&j, &m->procs[i]);
		vt_json_end_object(&j);
	}
	vt_json_end_array(&j);
	uint32_t n;
	const struct vt_stream_peak *pk = vt_stream_peaks(m, &n);
	vt_json_key(&j, "peaks");
	vt_json_begin_array(&j);
	for (int d = 0; d < VT_MAX_DEVICES; d++)
		for (uint32_t i = 0; i < n; i++)
			if (pk[i].device == d)
				json_peak(&j, m, &pk[i], top);
	vt_json_end_array(&j);
	json_failures(&j, m, top);
	vt_json_end_object(&j);
	return vt_json_finish(&j);
}
