/* The out-of-memory post-mortem (see oom.h). Everything here reads the
 * model through its query API (moments, live allocations, categories,
 * flags): no second replay of the events. */
#include "oom.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nomem.h" /* before <uthash.h>: its out-of-memory exit */
#include <uthash.h>

#include "classify.h"
#include "oom_context.h"
#include "site_names.h"
#include "model_query.h"

#define CUDA_OOM 2 /* CUDA_ERROR_OUT_OF_MEMORY */

static int proc_is_launcher(const struct vt_proc *p)
{
	for (uint32_t i = 0; i < p->nmarks; i++)
		if (p->marks[i].kind == VT_MARK_LAUNCHER)
			return 1;
	return 0;
}

/* ---- the events, in trace time order ------------------------------------- */

struct event_ref {
	uint64_t t_ns, seq;
	uint32_t proc, idx; /* failed[idx], or procs[proc].marks[idx] */
};

static int event_cmp(const void *x, const void *y)
{
	const struct event_ref *a = x, *b = y;
	if (a->t_ns != b->t_ns)
		return a->t_ns < b->t_ns ? -1 : 1;
	if (a->proc != b->proc)
		return a->proc < b->proc ? -1 : 1;
	return a->seq < b->seq ? -1 : a->seq > b->seq;
}

static struct event_ref *driver_ooms(const struct vt_model *m, uint32_t *n)
{
	struct event_ref *v = vt_xcalloc(m->nfailed, sizeof *v);
	*n = 0;
	for (uint32_t i = 0; i < m->nfailed; i++)
		if (m->failed[i].result == CUDA_OOM)
			v[(*n)++] = (struct event_ref){m->failed[i].t_ns, m->failed[i].seq,
			                               m->failed[i].proc, i};
	qsort(v, *n, sizeof *v, event_cmp);
	return v;
}

static struct event_ref *framework_ooms(const struct vt_model *m, uint32_t *n)
{
	uint32_t total = 0;
	for (uint32_t p = 0; p < m->nprocs; p++)
		total += m->procs[p].nmarks;
	struct event_ref *v = vt_xcalloc(total, sizeof *v);
	*n = 0;
	for (uint32_t p = 0; p < m->nprocs; p++)
		for (uint32_t i = 0; i < m->procs[p].nmarks; i++) {
			const struct vt_mark *mk = &m->procs[p].marks[i];
			if (mk->kind == VT_MARK_FRAMEWORK_OOM)
				v[(*n)++] = (struct event_ref){mk->t_ns, mk->seq, p, i};
		}
	qsort(v, *n, sizeof *v, event_cmp);
	return v;
}

/* A device every allocation went to, -1 when several (or none). */
static int only_device(const struct vt_model *m)
{
	int found = -1;
	for (int d = 0; d < VT_MAX_DEVICES; d++) {
		if (!vt_model_device_used(m, d))
			continue;
		if (found >= 0)
			return -1;
		found = d;
	}
	return found;
}

static void pick_driver(struct vt_oom_report *r, const struct event_ref *e)
{
	const struct vt_failed_alloc *f = &r->m->failed[e->idx];
	r->source = VT_OOM_DRIVER;
	r->failed = f;
	r->t_ns = f->t_ns;
	r->device = f->device == VT_DEVICE_UNKNOWN ? -1 : f->device;
	r->request_bytes = f->bytes;
	r->at = vt_moment_at_seq(f->proc, f->seq, f->t_ns);
	vt_name_site(r->m, f->proc, f->stack_id, r->site, sizeof r->site);
}

static void pick_framework(struct vt_oom_report *r, const struct event_ref *e)
{
	const struct vt_mark *mk = &r->m->procs[e->proc].marks[e->idx];
	r->source = VT_OOM_FRAMEWORK;
	r->fw_mark = mk;
	r->fw_proc = e->proc;
	r->t_ns = mk->t_ns;
	r->at = vt_moment_at_time(mk->t_ns);
	r->request_bytes = mk->value;
	r->fw_parsed = vt_oom_match_line(mk->text, strlen(mk->text), &r->fw);
	if (r->fw_parsed && r->fw.host)
		r->device = -1; /* host memory: no GPU to describe, all are shown */
	else
		r->device = r->fw_parsed && r->fw.device >= 0 ? r->fw.device : only_device(r->m);
}

/* ---- capacity and free memory then ----------------------------------------- */

/* For a driver OOM: the MEMINFO the shim took right after it (same process,
 * later seq, reason oom). Otherwise, and as a fallback: the last one of the
 * device at or before the moment, from any process. */
static void find_meminfo(struct vt_oom_report *r)
{
	const struct vt_meminfo *best = NULL;
	uint32_t best_proc = 0;
	if (r->device < 0)
		return;
	if (r->failed) {
		const struct vt_proc *p = &r->m->procs[r->failed->proc];
		for (uint32_t i = 0; i < p->nmeminfo && !best; i++) {
			const struct vt_meminfo *mi = &p->meminfo[i];
			if (mi->device == r->device && mi->reason == VT_MEMINFO_OOM &&
			    mi->seq > r->failed->seq)
				best = mi;
		}
		best_proc = r->failed->proc;
	}
	int exact = best != NULL;
	for (uint32_t pi = 0; pi < r->m->nprocs && !exact; pi++) {
		const struct vt_proc *p = &r->m->procs[pi];
		for (uint32_t i = 0; i < p->nmeminfo; i++) {
			const struct vt_meminfo *mi = &p->meminfo[i];
			if (mi->device == r->device && mi->t_ns <= r->t_ns &&
			    (!best || mi->t_ns >= best->t_ns)) {
				best = mi;
				best_proc = pi;
			}
		}
	}
	if (!best) {
		r->total_bytes = vt_model_device_total(r->m, r->device);
		return;
	}
	r->have_meminfo = 1;
	r->free_bytes = best->free_bytes;
	r->total_bytes = best->total_bytes;
	if (!exact) { /* an earlier reading: derive_gaps moves it by what was tracked since */
		r->free_estimated = 1;
		struct vt_moment then = vt_moment_at_seq(best_proc, best->seq, best->t_ns);
		r->tracked_at_meminfo = vt_model_live_bytes(r->m, &then, r->device);
	}
}

/* ---- what was live then --------------------------------------------------------- */

struct site_acc {
	char *name;
	uint32_t site; /* index into r->sites */
	UT_hash_handle hh;
};

struct live_scan {
	struct vt_oom_report *r;
	struct site_acc *by_name;
	uint32_t cap_sites;
};

static int cat_of(const struct vt_alloc *a)
{
	return a->category < VT_CAT_COUNT ? a->category : VT_CAT_UNKNOWN;
}

static struct vt_oom_site *site_slot(struct live_scan *s, const char *name)
{
	struct vt_oom_report *r = s->r;
	struct site_acc *e;
	HASH_FIND_STR(s->by_name, name, e);
	if (e)
		return &r->sites[e->site];
	if (r->nsites == s->cap_sites) {
		s->cap_sites = s->cap_sites ? 2 * s->cap_sites : 32;
		r->sites = realloc(r->sites, s->cap_sites * sizeof *r->sites);
		if (!r->sites)
			vt_nomem();
	}
	struct vt_oom_site *site = &r->sites[r->nsites];
	memset(site, 0, sizeof *site);
	snprintf(site->name, sizeof site->name, "%s", name);
	e = vt_xcalloc(1, sizeof *e);
	e->name = strdup(name);
	if (!e->name)
		vt_nomem();
	e->site = r->nsites++;
	HASH_ADD_KEYPTR(hh, s->by_name, e->name, strlen(e->name), e);
	return site;
}

/* Keep the VT_OOM_TOP largest, biggest first. */
static void keep_largest(struct vt_oom_report *r, const struct vt_alloc *a, const char *site)
{
	uint32_t pos = r->nlargest;
	while (pos > 0 && r->largest[pos - 1].bytes < a->bytes)
		pos--;
	if (pos >= VT_OOM_TOP)
		return;
	uint32_t last = r->nlargest < VT_OOM_TOP ? r->nlargest : VT_OOM_TOP - 1;
	memmove(&r->largest[pos + 1], &r->largest[pos], (last - pos) * sizeof r->largest[0]);
	struct vt_oom_alloc *o = &r->largest[pos];
	o->bytes = a->bytes;
	o->t_alloc = a->t_alloc;
	o->addr = a->addr;
	o->category = cat_of(a);
	o->device = a->device;
	snprintf(o->site, sizeof o->site, "%s", site);
	if (r->nlargest < VT_OOM_TOP)
		r->nlargest++;
}

static int on_live(const struct vt_model *m, uint32_t idx, const struct vt_alloc *a, void *ctx)
{
	(void)idx;
	struct live_scan *s = ctx;
	struct vt_oom_report *r = s->r;
	int cat = cat_of(a);
	char name[VT_OOM_SITE_LEN];
	vt_name_site(m, a->proc, a->stack_id, name, sizeof name);
	r->tracked_bytes += a->bytes;
	r->live_allocs++;
	r->cats[cat] += a->bytes;
	struct vt_oom_site *site = site_slot(s, name);
	site->bytes += a->bytes;
	site->by_cat[cat] += a->bytes;
	site->allocs++;
	keep_largest(r, a, name);
	return 0;
}

static int site_cmp(const void *x, const void *y)
{
	const struct vt_oom_site *a = x, *b = y;
	if (a->bytes != b->bytes)
		return a->bytes > b->bytes ? -1 : 1;
	return strcmp(a->name, b->name);
}

static void scan_live(struct vt_oom_report *r)
{
	struct live_scan s = {.r = r};
	vt_model_for_each_live(r->m, &r->at, r->device, on_live, &s);
	for (uint32_t i = 0; i < r->nsites; i++) {
		struct vt_oom_site *site = &r->sites[i];
		site->category = VT_CAT_UNKNOWN;
		for (int c = 0; c < VT_CAT_COUNT; c++)
			if (site->by_cat[c] > site->by_cat[site->category])
				site->category = c;
	}
	if (r->nsites)
		qsort(r->sites, r->nsites, sizeof *r->sites, site_cmp);
	struct site_acc *e, *tmp;
	HASH_ITER(hh, s.by_name, e, tmp)
	{
		HASH_DEL(s.by_name, e);
		free(e->name);
		free(e);
	}
}

/* used - tracked, and request - free. */
static void derive_gaps(struct vt_oom_report *r)
{
	if (r->have_meminfo && r->free_estimated) {
		/* what the job allocated (or freed) since the reading, the rest unchanged */
		int64_t moved = (int64_t)(r->tracked_bytes - r->tracked_at_meminfo);
		int64_t est = (int64_t)r->free_bytes - moved;
		r->free_bytes = est < 0                          ? 0
		                : (uint64_t)est > r->total_bytes ? r->total_bytes
		                                                 : (uint64_t)est;
	}
	if (r->have_meminfo && r->total_bytes >= r->free_bytes) {
		uint64_t used = r->total_bytes - r->free_bytes;
		r->have_untracked = 1;
		r->untracked_bytes = used > r->tracked_bytes ? used - r->tracked_bytes : 0;
	}
	if (r->have_meminfo && r->request_bytes) {
		r->have_need = 1;
		r->need_to_free =
		    r->request_bytes > r->free_bytes ? r->request_bytes - r->free_bytes : 0;
	}
}

/* Flags that held memory on the device at that moment. */
static void pick_advice(struct vt_oom_report *r)
{
	for (uint32_t i = 0; i < r->findings.n && r->nadvice < 64; i++) {
		const struct vt_finding *f = &r->findings.v[i];
		int on_device = r->device < 0;
		for (uint32_t d = 0; d < f->ndev && !on_device; d++)
			on_device = f->devices[d] == r->device;
		if (on_device && f->t_ns <= r->t_ns)
			r->advice[r->nadvice++] = i;
	}
}

/* Memory that grew every step on the failed device: the likely cause. The
 * most bytes kept when several sites grew. */
static void find_likely_cause(struct vt_oom_report *r)
{
	const struct vt_finding *best = NULL;
	for (uint32_t i = 0; i < r->nadvice; i++) {
		const struct vt_finding *f = &r->findings.v[r->advice[i]];
		if (f->kind == VT_FINDING_GROWTH &&
		    (!best || f->growth.kept_bytes > best->growth.kept_bytes))
			best = f;
	}
	if (!best)
		return;
	char site[VT_OOM_SITE_LEN], rate[512];
	vt_name_site(r->m, best->proc, best->stack_id, site, sizeof site);
	vt_growth_text(&best->growth, rate, sizeof rate);
	snprintf(r->likely_cause, sizeof r->likely_cause, "growth_per_step: %s keeps %s", site,
	         rate);
}

/* ---- the processes ------------------------------------------------------------ */

struct proc_scan {
	struct vt_oom_proc *out;
};

static int on_proc_live(const struct vt_model *m, uint32_t idx, const struct vt_alloc *a, void *ctx)
{
	(void)m;
	(void)idx;
	struct vt_oom_proc *o = ((struct proc_scan *)ctx)->out;
	if (a->proc != o->proc)
		return 0;
	o->live_bytes += a->bytes;
	o->live_allocs++;
	o->cats[cat_of(a)] += a->bytes;
	return 0;
}

static const char *last_mark_text(const struct vt_proc *p)
{
	for (uint32_t i = p->nmarks; i-- > 0;)
		if (p->marks[i].kind == VT_MARK_STEP || p->marks[i].kind == VT_MARK_USER)
			return p->marks[i].text;
	return NULL;
}

static void describe_procs(struct vt_oom_report *r)
{
	const struct vt_model *m = r->m;
	r->procs = vt_xcalloc(m->nprocs, sizeof *r->procs);
	r->clean_exit = 1;
	for (uint32_t pi = 0; pi < m->nprocs; pi++) {
		const struct vt_proc *p = &m->procs[pi];
		struct vt_oom_proc *o = &r->procs[r->nprocs++];
		o->proc = pi;
		o->clean = p->clean_exit;
		o->execed = VT_STATE_OF(p->state_word) == VT_STATE_EXECED;
		o->launcher = proc_is_launcher(p);
		o->last_t_ns = p->last_t_ns;
		o->last_mark = last_mark_text(p);
		o->running = p->running;
		r->running |= o->running && !o->launcher;
		if (!o->launcher && !o->clean && !o->execed)
			r->clean_exit = 0;
		if (o->clean || o->execed)
			continue;
		struct vt_moment last = vt_moment_at_seq(pi, p->last_seq, p->last_t_ns);
		struct proc_scan s = {o};
		vt_model_for_each_live(m, &last, -1, on_proc_live, &s);
	}
}

/* ---- public ------------------------------------------------------------------- */

int vt_oom_build(struct vt_oom_report *r, struct vt_model *m, uint32_t index, char *err,
                 size_t errlen)
{
	vt_model_finish(m);
	vt_classify(m);
	return vt_oom_build_classified(r, m, index, err, errlen);
}

int vt_oom_build_classified(struct vt_oom_report *r, struct vt_model *m, uint32_t index, char *err,
                            size_t errlen)
{
	memset(r, 0, sizeof *r);
	r->m = m;
	r->device = -1;
	struct event_ref *drv = driver_ooms(m, &r->driver_count);
	struct event_ref *fw = framework_ooms(m, &r->framework_count);
	uint32_t have = r->driver_count ? r->driver_count : r->framework_count;
	int rc = 0;
	if (index == 0 || (have && index > have) || (!have && index > 1)) {
		snprintf(err, errlen, "--index %u: the trace has %u %s out-of-memory event%s",
		         index, have,
		         r->driver_count || !r->framework_count ? "driver" : "framework",
		         have == 1 ? "" : "s");
		rc = -1;
	} else if (r->driver_count) {
		pick_driver(r, &drv[index - 1]);
	} else if (r->framework_count) {
		pick_framework(r, &fw[index - 1]);
	} else {
		r->at = vt_moment_end(m);
		r->t_ns = m->end_t_ns;
	}
	/* with a driver OOM, the first framework message is still reported */
	if (!rc && r->source == VT_OOM_DRIVER && r->framework_count) {
		r->fw_mark = &m->procs[fw[0].proc].marks[fw[0].idx];
		r->fw_proc = fw[0].proc;
		r->fw_parsed =
		    vt_oom_match_line(r->fw_mark->text, strlen(r->fw_mark->text), &r->fw);
	}
	r->index = index;
	free(drv);
	free(fw);
	if (rc)
		return rc;
	/* the findings are read only as advice at an out-of-memory moment: a
	 * report of a trace without one does not find them twice */
	if (r->source != VT_OOM_NONE) {
		vt_findings_find(m, &r->findings);
		/* advice that fits what the job had reached */
		vt_findings_before_oom(m, r->failed ? r->failed->proc : r->fw_proc, r->t_ns,
		                       &r->findings);
	}
	find_meminfo(r);
	scan_live(r);
	derive_gaps(r);
	if (r->source != VT_OOM_NONE) {
		pick_advice(r);
		find_likely_cause(r);
	}
	describe_procs(r);
	return 0;
}

void vt_oom_free(struct vt_oom_report *r)
{
	vt_findings_free(&r->findings);
	free(r->sites);
	free(r->procs);
	memset(r, 0, sizeof *r);
}
