/* `vramtrace report --json` (keys documented in the README; they never
 * change meaning). */
#include "report_json.h"

#include <inttypes.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "findings.h"
#include "json_out.h"
#include "site_names.h"
#include "steps.h"
#include "model_query.h"
#include "classify.h"
#include "oom.h"
#include "record_text.h"
#include "report.h"

static void categories(struct vt_json *j, const char *key, const uint64_t *cats)
{
	vt_json_key(j, key);
	vt_json_begin_object(j);
	for (int c = 0; c < VT_CAT_COUNT; c++)
		vt_json_kv_u64(j, vt_category_name(c), cats[c]);
	vt_json_end_object(j);
}

/* The one-line verdict, and whether the job still runs. */
static void verdict(struct vt_json *j, const struct vt_report *r)
{
	char text[1024];
	int running = 0;
	uint64_t last = 0;
	for (uint32_t i = 0; i < r->m->nprocs; i++) {
		running |= r->m->procs[i].running;
		if (r->m->procs[i].last_t_ns > last)
			last = r->m->procs[i].last_t_ns;
	}
	vt_report_verdict(r, text, sizeof text);
	vt_json_kv_string(j, "verdict", text);
	vt_json_kv_string(j, "state", running ? "running" : "ended");
	vt_json_kv_u64(j, "last_event_ns", last);
}

static void totals(struct vt_json *j, const struct vt_totals *t)
{
	vt_json_key(j, "totals");
	vt_json_begin_object(j);
	vt_json_kv_u64(j, "alloc_calls", t->alloc_calls);
	vt_json_kv_u64(j, "free_calls", t->free_calls);
	vt_json_kv_u64(j, "htod_calls", t->htod_calls);
	vt_json_kv_u64(j, "htod_bytes", t->htod_bytes);
	vt_json_kv_u64(j, "failed_allocs", t->failed_allocs);
	vt_json_kv_u64(j, "dtoh_calls", t->dtoh_calls);
	vt_json_kv_u64(j, "dtod_calls", t->dtod_calls);
	vt_json_kv_u64(j, "map_calls", t->map_calls);
	vt_json_kv_u64(j, "unmap_calls", t->unmap_calls);
	vt_json_kv_u64(j, "events", t->events);
	vt_json_end_object(j);
}

/* The shim's measure of its own time, or null (not measured). */
void vt_report_recording_cost_json(struct vt_json *j, const struct vt_proc *p)
{
	struct vt_self_cost_summary sc;
	uint64_t span = vt_proc_span_ns(p);
	vt_json_key(j, "recording_cost");
	if (vt_self_cost_summarize(&p->self_cost, span, &sc) != 0) {
		vt_json_null(j);
		return;
	}
	vt_json_begin_object(j);
	vt_json_kv_u64(j, "calls", sc.calls);
	vt_json_kv_u64(j, "timed_calls", sc.timed);
	vt_json_key(j, "ns_per_call"); /* null: too few calls to time one at random */
	if (sc.have_rate)
		vt_json_u64(j, (uint64_t)(sc.mean_ns + 0.5));
	else
		vt_json_null(j);
	vt_json_kv_u64(j, "median_low_ns", sc.median_lo_ns);
	vt_json_kv_u64(j, "median_high_ns", sc.median_hi_ns);
	vt_json_kv_u64(j, "first_calls", sc.first_calls);
	vt_json_kv_u64(j, "first_calls_ns", (uint64_t)(sc.first_ns + 0.5));
	vt_json_kv_u64(j, "total_ns", (uint64_t)(sc.total_ns + 0.5));
	vt_json_kv_u64(j, "recorded_ns", span);
	/* stacks taken and the stack memo's share (0 everywhere: not counted) */
	vt_json_kv_u64(j, "stacks", p->self_cost.stacks);
	vt_json_kv_u64(j, "stacks_from_memo", p->self_cost.memo_hits);
	vt_json_kv_u64(j, "stacks_verified", p->self_cost.memo_verified);
	vt_json_kv_u64(j, "stacks_differed", p->self_cost.memo_mismatches);
	vt_json_end_object(j);
}

static void processes(struct vt_json *j, const struct vt_model *m)
{
	vt_json_key(j, "processes");
	vt_json_begin_array(j);
	for (uint32_t i = 0; i < m->nprocs; i++) {
		const struct vt_proc *p = &m->procs[i];
		vt_json_begin_object(j);
		vt_json_kv_i64(j, "pid", p->pid);
		vt_json_kv_i64(j, "ppid", p->ppid);
		vt_json_kv_string(j, "host", p->hostname);
		if (p->rank_source) /* the launcher's rank (ranks.h has the job view) */
			vt_json_kv_i64(j, "rank", p->rank);
		vt_json_kv_string(j, "exe", p->exe);
		vt_json_kv_bool(j, "clean_exit", p->clean_exit);
		vt_json_kv_string(j, "state",
		                  p->clean_exit                                   ? "exited"
		                  : VT_STATE_OF(p->state_word) == VT_STATE_EXECED ? "exec"
		                  : p->running                                    ? "running"
		                                                                  : "died");
		vt_json_kv_u64(j, "last_t_ns", p->last_t_ns);
		vt_json_key(j, "exit_code");
		if (p->clean_exit || p->have_exit_rec)
			vt_json_i64(j, p->exit_code);
		else
			vt_json_null(j);
		vt_json_kv_string(j, "mode", p->pool_mode ? "pool" : "per-tensor");
		vt_json_kv_string(j, "framework", vt_framework_name(vt_framework_of(p)));
		vt_json_kv_u64(j, "steps", p->nsteps);
		vt_json_kv_bool(j, "trains", p->trains != 0);
		vt_json_kv_bool(j, "truncated", (p->header_flags & VT_FLAG_TRUNCATED) != 0);
		vt_json_kv_u64(j, "chunks_missing", p->running ? 0 : p->integrity.chunks_missing);
		vt_json_kv_u64(j, "chunks_damaged", p->integrity.damaged);
		vt_json_kv_u64(j, "damaged_events", p->integrity.damaged_events);
		vt_json_kv_u64(j, "damaged_records_lost", p->integrity.damaged_lost);
		vt_report_recording_cost_json(j, p);
		vt_json_end_object(j);
	}
	vt_json_end_array(j);
}

static void devices(struct vt_json *j, const struct vt_report *r)
{
	vt_json_key(j, "devices");
	vt_json_begin_array(j);
	for (int d = 0; d < VT_MAX_DEVICES; d++) {
		const struct vt_device *dv = &r->m->devices[d];
		if (!vt_model_device_used(r->m, d))
			continue;
		vt_json_begin_object(j);
		vt_json_kv_i64(j, "ordinal", d);
		vt_json_kv_string(j, "name", dv->name ? dv->name : "");
		vt_json_kv_u64(j, "total_bytes", dv->total_bytes);
		vt_json_kv_u64(j, "peak_bytes", dv->peak_bytes);
		vt_json_kv_u64(j, "peak_t_ns", dv->peak_t_ns);
		vt_json_kv_u64(j, "end_bytes", dv->end_bytes);
		categories(j, "categories_at_peak", r->dev_cats[d]);
		vt_json_end_object(j);
	}
	vt_json_end_array(j);
}

static void steps(struct vt_json *j, const struct vt_report *r)
{
	const struct vt_proc *p = r->m->nprocs ? &r->m->procs[r->main_proc] : NULL;
	vt_json_key(j, "steps");
	vt_json_begin_object(j);
	vt_json_kv_u64(j, "count", p ? p->nsteps : 0);
	vt_json_kv_string(j, "source", vt_step_source_name(p ? p->step_source : VT_STEPS_NONE));
	vt_json_kv_u64(j, "period_ns", p ? p->step_period_ns : 0);
	vt_json_kv_bool(j, "trains", p && p->trains);
	vt_json_end_object(j);
}

struct unsure_entry {
	int category, alternative;
	uint64_t bytes;
};

static int unsure_by_bytes(const void *pa, const void *pb)
{
	const struct unsure_entry *a = pa, *b = pb;
	return a->bytes < b->bytes ? 1 : a->bytes > b->bytes ? -1 : 0;
}

void vt_report_low_confidence_json(struct vt_json *j, const struct vt_report *r)
{
	struct unsure_entry v[VT_CAT_COUNT * (VT_CAT_COUNT + 1)];
	size_t n = 0;
	for (int c = 0; c < VT_CAT_COUNT; c++)
		for (int o = 0; o <= VT_CAT_COUNT; o++)
			if (r->unsure_at_peak[c][o])
				v[n++] = (struct unsure_entry){c, o, r->unsure_at_peak[c][o]};
	qsort(v, n, sizeof v[0], unsure_by_bytes);
	vt_json_key(j, "low_confidence_at_peak");
	vt_json_begin_array(j);
	for (size_t i = 0; i < n; i++) {
		vt_json_begin_object(j);
		vt_json_kv_string(j, "category", vt_category_name(v[i].category));
		vt_json_key(j, "alternative"); /* null: no other category fits better */
		if (v[i].alternative < VT_CAT_COUNT)
			vt_json_string(j, vt_category_name(v[i].alternative));
		else
			vt_json_null(j);
		vt_json_kv_u64(j, "bytes", v[i].bytes);
		vt_json_end_object(j);
	}
	vt_json_end_array(j);
}

void vt_report_oom_holders_json(struct vt_json *j, const struct vt_oom_finding *o)
{
	vt_json_key(j, "live_by_category");
	vt_json_begin_object(j);
	for (int c = 0; c < VT_CAT_COUNT; c++)
		vt_json_kv_u64(j, vt_category_name(c), o->cats[c]);
	vt_json_end_object(j);
	vt_json_key(j, "top_sites");
	vt_json_begin_array(j);
	for (uint32_t i = 0; i < o->nholders; i++) {
		vt_json_begin_object(j);
		vt_json_kv_string(j, "site", o->holders[i].site);
		vt_json_kv_string(j, "category", vt_category_name(o->holders[i].category));
		vt_json_kv_u64(j, "bytes", o->holders[i].bytes);
		vt_json_end_object(j);
	}
	vt_json_end_array(j);
}

void vt_report_growth_json(struct vt_json *j, const struct vt_growth *g)
{
	vt_json_kv_u64(j, "bytes_per_step", g->bytes_per_step);
	vt_json_kv_u64(j, "steps", g->steps_kept);
	vt_json_kv_u64(j, "steps_counted", g->steps_counted);
	vt_json_kv_u64(j, "first_step", (uint64_t)g->first_step + 1);
	vt_json_kv_u64(j, "kept_allocs", g->kept_allocs);
	vt_json_kv_u64(j, "at_ns", g->at_ns);
	vt_json_kv_bool(j, "out_of_memory", g->out_of_memory);
	vt_json_kv_u64(j, "live_bytes", g->live_bytes);
	vt_json_key(j, "capacity_bytes");
	if (g->capacity_bytes)
		vt_json_u64(j, g->capacity_bytes);
	else
		vt_json_null(j);
	vt_json_key(j, "steps_to_fill");
	if (g->steps_to_fill != UINT64_MAX)
		vt_json_u64(j, g->steps_to_fill);
	else
		vt_json_null(j);
	vt_json_key(j, "fill_t_ns");
	if (g->t_fill_ns != VT_T_NEVER)
		vt_json_u64(j, g->t_fill_ns);
	else
		vt_json_null(j);
}

/* The out-of-memory finding, first of the flags: the keys every flag has
 * (devices, bytes = the request, site, t_ns, advice...) and its own. */
static void oom_flag(struct vt_json *j, const struct vt_report *r)
{
	const struct vt_oom_finding *o = &r->oom;
	char cmd[4200], advice[8192], verdict[1024];
	vt_oom_finding_command(r->opt.title ? r->opt.title : "DIR", cmd, sizeof cmd);
	vt_report_verdict(r, verdict, sizeof verdict);
	snprintf(advice, sizeof advice, "The job ran %s. `%s` explains it in full.", verdict, cmd);
	vt_json_begin_object(j);
	vt_json_kv_string(j, "kind", "out_of_memory");
	vt_json_key(j, "devices");
	vt_json_begin_array(j);
	if (o->device >= 0)
		vt_json_u64(j, (uint64_t)o->device);
	vt_json_end_array(j);
	vt_json_key(j, "bytes");
	vt_json_begin_array(j);
	if (o->device >= 0)
		vt_json_u64(j, o->request_bytes);
	vt_json_end_array(j);
	vt_json_kv_u64(j, "copies", 0);
	vt_json_kv_string(j, "site", o->site);
	vt_json_kv_u64(j, "t_ns", o->t_ns);
	vt_json_kv_double(j, "confidence", 1.0);
	vt_json_kv_string(j, "advice", advice);
	vt_json_kv_i64(j, "pid", o->pid);
	vt_json_kv_string(j, "source", o->source == VT_OOM_DRIVER ? "driver" : "framework");
	vt_json_kv_string(j, "api", o->api);
	vt_json_kv_u64(j, "requested_bytes", o->request_bytes);
	vt_json_key(j, "free_bytes");
	if (o->have_free)
		vt_json_u64(j, o->free_bytes);
	else
		vt_json_null(j);
	vt_json_kv_bool(j, "free_bytes_estimated", o->free_estimated);
	vt_json_key(j, "total_bytes");
	if (o->have_free)
		vt_json_u64(j, o->total_bytes);
	else
		vt_json_null(j);
	vt_json_kv_u64(j, "live_bytes", o->live_bytes);
	vt_report_oom_holders_json(j, o);
	vt_json_kv_u64(j, "events", o->events);
	if (o->message[0])
		vt_json_kv_string(j, "message", o->message);
	vt_json_key(j, "likely_cause");
	if (o->likely_cause[0])
		vt_json_string(j, o->likely_cause);
	else
		vt_json_null(j);
	vt_json_kv_string(j, "command", cmd);
	vt_json_end_object(j);
}

static void flags(struct vt_json *j, const struct vt_report *r)
{
	vt_json_key(j, "flags");
	vt_json_begin_array(j);
	if (r->oom.present)
		oom_flag(j, r);
	for (uint32_t i = 0; i < r->findings.n; i++) {
		const struct vt_finding *f = &r->findings.v[i];
		char site[256];
		vt_name_site(r->m, f->proc, f->stack_id, site, sizeof site);
		vt_json_begin_object(j);
		vt_json_kv_string(j, "kind", vt_finding_kind_name(f->kind));
		vt_json_key(j, "devices");
		vt_json_begin_array(j);
		for (uint32_t d = 0; d < f->ndev; d++)
			vt_json_u64(j, f->devices[d]);
		vt_json_end_array(j);
		vt_json_key(j, "bytes");
		vt_json_begin_array(j);
		for (uint32_t d = 0; d < f->ndev; d++)
			vt_json_u64(j, f->bytes[d]);
		vt_json_end_array(j);
		vt_json_kv_u64(j, "copies", f->copies);
		vt_json_kv_string(j, "site", site);
		vt_json_kv_u64(j, "t_ns", f->t_ns);
		vt_json_kv_double(j, "confidence", f->confidence / 100.0);
		vt_json_kv_string(j, "advice", f->advice);
		vt_json_kv_i64(j, "pid", r->m->procs[f->proc].pid);
		vt_json_kv_string(j, "framework", vt_framework_name(f->framework));
		if (f->kind == VT_FINDING_PREFETCH_DEPTH) {
			vt_json_kv_u64(j, "depth", f->depth);
			vt_json_kv_u64(j, "batch_bytes", f->batch_bytes);
		}
		if (f->kind == VT_FINDING_GROWTH)
			vt_report_growth_json(j, &f->growth);
		vt_json_end_object(j);
	}
	vt_json_end_array(j);
}

/* NVML's bytes, null where NVML could not say (VT_NVML_UNKNOWN). */
static void nvml_bytes_json(struct vt_json *j, const char *key, uint64_t bytes)
{
	vt_json_key(j, key);
	if (bytes == VT_NVML_UNKNOWN)
		vt_json_null(j);
	else
		vt_json_u64(j, bytes);
}

/* NVML's view beside a reading: this process's bytes and the others'. */
static void nvml_json(struct vt_json *j, const struct vt_device_account *d)
{
	const struct vt_nvml_reading *n = d->nvml;
	vt_json_kv_u64(j, "other_processes_bytes", d->other_processes_bytes);
	vt_json_key(j, "nvml");
	vt_json_begin_object(j);
	nvml_bytes_json(j, "process_bytes", n->self_bytes);
	vt_json_kv_u64(j, "other_processes", n->others);
	vt_json_kv_u64(j, "other_processes_bytes", n->others_bytes);
	vt_json_end_object(j);
	vt_json_key(j, "other_processes");
	vt_json_begin_array(j);
	for (uint32_t i = 0; i < n->nlisted; i++) {
		vt_json_begin_object(j);
		vt_json_kv_i64(j, "pid", n->listed[i].pid);
		vt_json_kv_string(j, "name", n->listed[i].comm);
		nvml_bytes_json(j, "bytes", n->listed[i].used_bytes);
		vt_json_end_object(j);
	}
	vt_json_end_array(j);
}

static void device_accounts(struct vt_json *j, const char *key, const struct vt_device_account *v,
                            uint32_t n)
{
	vt_json_key(j, key);
	vt_json_begin_array(j);
	for (uint32_t i = 0; i < n; i++) {
		const struct vt_device_account *d = &v[i];
		vt_json_begin_object(j);
		vt_json_kv_i64(j, "device", d->device);
		vt_json_kv_u64(j, "t_ns", d->t_ns);
		vt_json_kv_string(j, "reading", vt_meminfo_reason_name(d->reason));
		vt_json_kv_u64(j, "total_bytes", d->total_bytes);
		vt_json_kv_u64(j, "used_bytes", d->used_bytes);
		vt_json_kv_u64(j, "framework_bytes", d->framework_bytes);
		vt_json_kv_u64(j, "pool_bytes", d->pool_bytes);
		vt_json_kv_u64(j, "vmm_bytes", d->vmm_bytes);
		vt_json_kv_u64(j, "library_bytes", d->library_bytes);
		vt_json_key(j, "libraries");
		vt_json_begin_array(j);
		for (uint32_t k = 0; k < d->nlibs; k++) {
			vt_json_begin_object(j);
			vt_json_kv_string(j, "module", d->libs[k].module);
			vt_json_kv_u64(j, "bytes", d->libs[k].bytes);
			vt_json_end_object(j);
		}
		vt_json_end_array(j);
		vt_json_kv_u64(j, "unexplained_bytes", d->unexplained_bytes);
		vt_json_kv_u64(j, "overcount_bytes", d->overcount_bytes);
		if (d->nvml)
			nvml_json(j, d);
		vt_json_end_object(j);
	}
	vt_json_end_array(j);
}

/* Used memory per device by holder (accounting.h): at the last reading, and
 * at the one with the most used bytes where that is another. */
void vt_report_accounting_json(struct vt_json *j, const struct vt_accounting *a)
{
	device_accounts(j, "accounting", a->dev, a->ndev);
	device_accounts(j, "accounting_at_peak", a->peak, a->npeak);
}

static void sites(struct vt_json *j, const struct vt_report *r)
{
	vt_json_key(j, "sites");
	vt_json_begin_array(j);
	for (uint32_t i = 0; i < r->nsites && i < (uint32_t)r->opt.top; i++) {
		const struct vt_site_stat *s = &r->sites[i];
		vt_json_begin_object(j);
		vt_json_kv_string(j, "site", s->name);
		vt_json_kv_string(j, "category", vt_category_name(s->category));
		vt_json_kv_u64(j, "bytes_at_peak", s->bytes_at_peak);
		vt_json_kv_u64(j, "allocs", s->allocs);
		vt_json_end_object(j);
	}
	vt_json_end_array(j);
}

static void at(struct vt_json *j, const struct vt_report *r)
{
	vt_json_key(j, "at");
	vt_json_begin_object(j);
	vt_json_kv_string(j, "label", r->at_label);
	vt_json_kv_u64(j, "t_ns", r->at.t_ns == VT_T_NEVER ? 0 : r->at.t_ns);
	uint64_t sum = 0;
	vt_json_key(j, "devices");
	vt_json_begin_array(j);
	for (int d = 0; d < VT_MAX_DEVICES; d++) {
		if (!vt_model_device_used(r->m, d))
			continue;
		vt_json_begin_object(j);
		vt_json_kv_i64(j, "ordinal", d);
		vt_json_kv_u64(j, "bytes", r->at_dev_bytes[d]);
		vt_json_end_object(j);
		sum += r->at_dev_bytes[d];
	}
	vt_json_end_array(j);
	vt_json_kv_u64(j, "bytes", sum);
	categories(j, "categories", r->at_cats);
	vt_json_end_object(j);
}

/* An allocation's "alternatives" (the other categories its evidence fits,
 * each with its share of the confidence) and "reasons" (the verdict's
 * reason, then the facts the rules read). */
static void alloc_evidence(struct vt_json *j, const struct vt_model *m, const struct vt_alloc *a)
{
	struct vt_alternative alt[2];
	uint32_t n = vt_alloc_alternatives(a, alt, 2);
	vt_json_key(j, "alternatives");
	vt_json_begin_array(j);
	for (uint32_t i = 0; i < n; i++) {
		vt_json_begin_object(j);
		vt_json_kv_string(j, "category", vt_category_name(alt[i].category));
		vt_json_kv_double(j, "confidence", alt[i].confidence / 100.0);
		vt_json_end_object(j);
	}
	vt_json_end_array(j);
	const struct vt_alloc_copies *c = vt_model_copies(m, a);
	char fact[128];
	vt_json_key(j, "reasons");
	vt_json_begin_array(j);
	vt_json_string(j, vt_alloc_reason(a));
	if (c->h2d_copies) {
		snprintf(fact, sizeof fact, "%" PRIu64 " bytes from the host in %u cop%s",
		         c->h2d_bytes, c->h2d_copies, c->h2d_copies == 1 ? "y" : "ies");
		vt_json_string(j, fact);
	}
	vt_json_string(j, a->t_free == VT_T_NEVER ? "live at the end" : "freed");
	vt_json_end_array(j);
}

static void allocations(struct vt_json *j, const struct vt_report *r)
{
	vt_json_key(j, "allocations");
	vt_json_begin_array(j);
	for (uint32_t i = 0; i < r->m->nallocs; i++) {
		const struct vt_alloc *a = &r->m->allocs[i];
		if (!(a->flags & VT_AF_CHARGED))
			continue;
		char addr[24], site[256];
		snprintf(addr, sizeof addr, "0x%" PRIx64, a->addr);
		vt_name_site(r->m, a->proc, a->stack_id, site, sizeof site);
		vt_json_begin_object(j);
		vt_json_kv_i64(j, "pid", r->m->procs[a->proc].pid);
		vt_json_kv_i64(j, "device", a->device == VT_DEVICE_UNKNOWN ? -1 : a->device);
		vt_json_kv_string(j, "addr", addr);
		uint64_t mapped_at = vt_model_copies(r->m, a)->mapped_at;
		if (mapped_at) { /* a VMM handle: where its bytes are */
			snprintf(addr, sizeof addr, "0x%" PRIx64, mapped_at);
			vt_json_kv_string(j, "mapped_at", addr);
		}
		vt_json_kv_u64(j, "bytes", a->bytes);
		vt_json_kv_u64(j, "t_alloc_ns", a->t_alloc);
		vt_json_key(j, "t_free_ns");
		if (a->t_free == VT_T_NEVER)
			vt_json_null(j);
		else
			vt_json_u64(j, a->t_free);
		vt_json_kv_u64(j, "htod_bytes", vt_model_copies(r->m, a)->h2d_bytes);
		vt_json_kv_string(j, "category", vt_category_name(a->category));
		vt_json_kv_double(j, "confidence", a->confidence / 100.0);
		vt_json_kv_string(j, "reason", vt_alloc_reason(a));
		alloc_evidence(j, r->m, a);
		vt_json_kv_string(j, "site", site);
		vt_json_kv_bool(j, "live_at_peak", vt_report_live_at_peak(r, a));
		vt_json_end_object(j);
	}
	vt_json_end_array(j);
}

/* The report as one JSON object: its keys are vt_report_json_fields's. */
int vt_report_write_json(const struct vt_report *r, FILE *out)
{
	struct vt_json j;
	vt_json_init(&j, out, 1);
	vt_json_begin_object(&j);
	vt_report_json_fields(r, &j);
	vt_json_end_object(&j);
	return vt_json_finish(&j);
}

void vt_report_json_fields(const struct vt_report *r, struct vt_json *j)
{
	vt_json_kv_string(j, "trace", r->opt.title ? r->opt.title : "");
	verdict(j, r);
	totals(j, &r->m->totals);
	processes(j, r->m);
	devices(j, r);
	categories(j, "categories_at_peak", r->cats_at_peak);
	vt_report_low_confidence_json(j, r);
	steps(j, r);
	flags(j, r);
	sites(j, r);
	at(j, r);
	vt_report_accounting_json(j, &r->accounting);
	if (r->opt.with_allocs)
		allocations(j, r);
}
