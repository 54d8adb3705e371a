/* Computing a report from a model (see report.h). */
#include "report.h"

#include <stdlib.h>
#include <string.h>

#include "nomem.h" /* before <uthash.h>: its out-of-memory exit */
#include "model_hash.h"
#include <uthash.h>

#include "classify.h"
#include "units.h"
#include "site_names.h"
#include "model_fold.h"
#include "model_query.h"

struct vt_report_stack_site {
	struct {
		uint32_t proc, stack;
	} key;
	uint32_t site; /* index into r->sites */
	UT_hash_handle hh;
};

struct name_entry {
	/* the key, a copy: the hash keeps a pointer to it, and r->sites moves
	 * when it grows */
	char name[sizeof((struct vt_site_stat *)0)->name];
	uint32_t site;
	UT_hash_handle hh;
};

uint32_t vt_category_rgb(int cat)
{
	static const uint32_t rgb[VT_CAT_COUNT] = {
	    [VT_CAT_DATASET] = 0xd9534f,   [VT_CAT_PREFETCH] = 0xf0ad4e,
	    [VT_CAT_WEIGHTS] = 0x337ab7,   [VT_CAT_OPTIMIZER] = 0x8e6bbf,
	    [VT_CAT_GRADIENTS] = 0x5bc0de, [VT_CAT_ACTIVATIONS] = 0x5cb85c,
	    [VT_CAT_POOL] = 0x7f8c8d,      [VT_CAT_UNKNOWN] = 0xc8ccd4,
	};
	return cat >= 0 && cat < VT_CAT_COUNT ? rgb[cat] : rgb[VT_CAT_UNKNOWN];
}

int vt_report_main_category(const struct vt_report *r)
{
	int best = VT_CAT_UNKNOWN;
	for (int c = 0; c < VT_CAT_COUNT; c++)
		if (r->cats_at_peak[c] > r->cats_at_peak[best])
			best = c;
	return best;
}

const struct vt_finding *vt_report_main_finding(const struct vt_report *r)
{
	const struct vt_finding *best = NULL;
	for (uint32_t i = 0; i < r->findings.n; i++)
		if (!best || vt_finding_bytes_max(&r->findings.v[i]) > vt_finding_bytes_max(best))
			best = &r->findings.v[i];
	return best;
}

/* "still running (last event at 3.100 s), so far: " or "". */
static size_t verdict_running(const struct vt_report *r, char *buf, size_t len)
{
	uint64_t last = 0;
	int running = 0;
	for (uint32_t i = 0; i < r->m->nprocs; i++)
		if (r->m->procs[i].running) {
			running = 1;
			if (r->m->procs[i].last_t_ns > last)
				last = r->m->procs[i].last_t_ns;
		}
	if (!running)
		return 0;
	char when[32];
	vt_format_seconds(last, when, sizeof when);
	int n = snprintf(buf, len, "still running (last event at %s); so far: ", when);
	return n > 0 && (size_t)n < len ? (size_t)n : 0;
}

static void verdict_oom(const struct vt_report *r, char *buf, size_t len)
{
	const struct vt_oom_finding *o = &r->oom;
	char dev[16] = "the GPU", asked[32], freeb[32], held[32], live[32];
	if (o->device >= 0)
		snprintf(dev, sizeof dev, "GPU %d", o->device);
	vt_format_bytes(o->request_bytes, asked, sizeof asked);
	vt_format_bytes(o->free_bytes, freeb, sizeof freeb);
	int cat = vt_oom_finding_main_category(o);
	vt_format_bytes(o->cats[cat], held, sizeof held);
	vt_format_bytes(o->live_bytes, live, sizeof live);
	char when[32];
	vt_format_seconds(o->t_ns, when, sizeof when);
	size_t n = (size_t)snprintf(buf, len, "out of memory on %s at %s", dev, when);
	if (n < len && o->request_bytes)
		n += (size_t)snprintf(buf + n, len - n, ": %s asked", asked);
	if (n < len && o->have_free)
		n +=
		    (size_t)snprintf(buf + n, len - n, "%s %s%s free", o->request_bytes ? "," : ":",
		                     o->free_estimated ? "~" : "", freeb);
	if (n < len && o->live_bytes)
		snprintf(buf + n, len - n, "; %s held most of what was in use (%s of %s, %.0f%%)",
		         vt_category_name(cat), held, live,
		         100.0 * (double)o->cats[cat] / (double)o->live_bytes);
}

/* The device with the highest peak, -1 when none allocated. */
static int highest_device(const struct vt_model *m)
{
	int best = -1;
	for (int d = 0; d < VT_MAX_DEVICES; d++)
		if (vt_model_device_used(m, d) &&
		    (best < 0 || m->devices[d].peak_bytes > m->devices[best].peak_bytes))
			best = d;
	return best;
}

static void verdict_peak(const struct vt_report *r, char *buf, size_t len)
{
	uint64_t total = 0;
	for (int c = 0; c < VT_CAT_COUNT; c++)
		total += r->cats_at_peak[c];
	int dev = highest_device(r->m);
	if (!total || dev < 0) {
		snprintf(buf, len, "no device memory was live at any peak");
		return;
	}
	int cat = vt_report_main_category(r);
	char part[32], all[32], site[256];
	vt_format_bytes(r->cats_at_peak[cat], part, sizeof part);
	vt_format_bytes(total, all, sizeof all);
	size_t n = (size_t)snprintf(
	    buf, len, "%s fills the GPU: %s of the %s live at the peak (%.0f%%)",
	    vt_category_name(cat), part, all, 100.0 * (double)r->cats_at_peak[cat] / (double)total);
	const struct vt_device *d = &r->m->devices[dev];
	if (n < len && d->total_bytes)
		n += (size_t)snprintf(buf + n, len - n, ", peak %.0f%% of GPU %d",
		                      100.0 * (double)d->peak_bytes / (double)d->total_bytes, dev);
	const struct vt_finding *f = vt_report_main_finding(r);
	if (n >= len)
		return;
	if (!f) {
		snprintf(buf + n, len - n, "; nothing flagged");
		return;
	}
	vt_format_bytes(vt_finding_bytes_max(f), part, sizeof part);
	vt_name_site(r->m, f->proc, f->stack_id, site, sizeof site);
	snprintf(buf + n, len - n, "; the finding that matters: %s (%s from %s)",
	         vt_finding_kind_name(f->kind), part, site);
}

void vt_report_verdict(const struct vt_report *r, char *buf, size_t len)
{
	size_t n = verdict_running(r, buf, len);
	if (r->oom.present)
		verdict_oom(r, buf + n, len - n);
	else if (r->m->totals.alloc_calls == 0 && r->m->totals.failed_allocs == 0)
		snprintf(buf + n, len - n, "no device memory was allocated");
	else
		verdict_peak(r, buf + n, len - n);
}

int vt_report_live_at_peak(const struct vt_report *r, const struct vt_alloc *a)
{
	if (!(a->flags & VT_AF_CHARGED) || a->device == VT_DEVICE_UNKNOWN)
		return 0;
	struct vt_moment peak = vt_moment_peak(r->m, a->device);
	return vt_alloc_live_at(r->m, a, &peak);
}

static uint32_t site_index(struct vt_report *r, struct vt_report_stack_site **by_stack,
                           struct name_entry **by_name, uint32_t *cap, const struct vt_alloc *a)
{
	struct vt_report_stack_site probe, *e;
	memset(&probe, 0, sizeof probe);
	probe.key.proc = a->proc;
	probe.key.stack = a->stack_id;
	HASH_FIND(hh, *by_stack, &probe.key, sizeof probe.key, e);
	if (e)
		return e->site;
	char name[256];
	vt_name_site(r->m, a->proc, a->stack_id, name, sizeof name);
	/* the same site in several processes is one site */
	struct name_entry *ne;
	HASH_FIND_STR(*by_name, name, ne);
	uint32_t idx;
	if (ne) {
		idx = ne->site;
	} else {
		if (r->nsites == *cap) {
			*cap = *cap ? *cap * 2 : 64;
			struct vt_site_stat *s = realloc(r->sites, *cap * sizeof *s);
			if (!s)
				vt_nomem();
			r->sites = s;
		}
		idx = r->nsites++;
		memset(&r->sites[idx], 0, sizeof r->sites[idx]);
		snprintf(r->sites[idx].name, sizeof r->sites[idx].name, "%s", name);
		ne = calloc(1, sizeof *ne);
		if (!ne)
			vt_nomem();
		memcpy(ne->name, r->sites[idx].name, sizeof ne->name);
		ne->site = idx;
		HASH_ADD_KEYPTR(hh, *by_name, ne->name, strlen(ne->name), ne);
	}
	e = calloc(1, sizeof *e);
	if (!e)
		vt_nomem();
	e->key = probe.key;
	e->site = idx;
	HASH_ADD(hh, *by_stack, key, sizeof e->key, e);
	return idx;
}

static const struct vt_site_stat *sort_sites_by; /* qsort has no context argument */

static int site_cmp(const void *x, const void *y)
{
	const struct vt_site_stat *a = &sort_sites_by[*(const uint32_t *)x];
	const struct vt_site_stat *b = &sort_sites_by[*(const uint32_t *)y];
	if (a->bytes_at_peak != b->bytes_at_peak)
		return a->bytes_at_peak > b->bytes_at_peak ? -1 : 1;
	if (a->allocs != b->allocs)
		return a->allocs > b->allocs ? -1 : 1;
	return strcmp(a->name, b->name);
}

/* Sites biggest first, and the stack map pointed at their new places. */
static void sort_sites(struct vt_report *r)
{
	uint32_t n = r->nsites;
	uint32_t *order = malloc(n * sizeof *order), *place = malloc(n * sizeof *place);
	struct vt_site_stat *sorted = malloc(n * sizeof *sorted);
	if (!order || !place || !sorted)
		vt_nomem();
	for (uint32_t i = 0; i < n; i++)
		order[i] = i;
	sort_sites_by = r->sites;
	qsort(order, n, sizeof *order, site_cmp);
	for (uint32_t i = 0; i < n; i++) {
		sorted[i] = r->sites[order[i]];
		place[order[i]] = i;
	}
	struct vt_report_stack_site *e, *tmp;
	HASH_ITER(hh, r->stack_sites, e, tmp) e->site = place[e->site];
	free(r->sites);
	r->sites = sorted;
	free(order);
	free(place);
}

uint32_t vt_report_site_of(const struct vt_report *r, uint32_t proc, uint32_t stack_id)
{
	struct vt_report_stack_site probe, *e;
	memset(&probe, 0, sizeof probe);
	probe.key.proc = proc;
	probe.key.stack = stack_id;
	HASH_FIND(hh, r->stack_sites, &probe.key, sizeof probe.key, e);
	return e ? e->site : VT_NO_INDEX;
}

/* A folding model's groups (model_fold.h): allocations of their sites,
 * never live at a peak nor at --at (which a folding model is not asked). A
 * site with nothing live at a peak takes its category from the trace's
 * allocations, these too. */
static void fold_sites(struct vt_report *r, struct name_entry **by_name, uint32_t *cap)
{
	uint32_t ng;
	const struct vt_fold_group *g = vt_fold_groups(r->m, &ng);
	for (uint32_t i = 0; i < ng; i++) {
		struct vt_alloc a = {.bytes = g[i].bytes,
		                     .stack_id = g[i].stack_id,
		                     .proc = g[i].proc,
		                     .device = g[i].device,
		                     .flags = VT_AF_CHARGED};
		struct vt_site_stat *st =
		    &r->sites[site_index(r, &r->stack_sites, by_name, cap, &a)];
		st->allocs += g[i].count;
		if (st->bytes_at_peak == 0)
			st->bytes_by_cat[g[i].category] += g[i].count;
	}
}

static void build_sites(struct vt_report *r)
{
	struct name_entry *by_name = NULL, *n, *ntmp;
	uint32_t cap = 0;
	struct vt_moment peak[VT_MAX_DEVICES];
	for (int d = 0; d < VT_MAX_DEVICES; d++)
		peak[d] = vt_moment_peak(r->m, d);
	/* the site of recent (process, stack) pairs, direct-mapped by stack: a
	 * job allocates through a few stacks over and over, and the hash lookup
	 * per allocation was most of this pass (site indices do not move until
	 * the sort after it) */
	struct {
		uint32_t proc, stack, site;
	} recent[64];
	memset(recent, 0xff, sizeof recent);
	/* one pass: sites, bytes by category at each device's peak and at --at */
	for (uint32_t i = 0; i < r->m->nallocs; i++) {
		const struct vt_alloc *a = &r->m->allocs[i];
		if (!(a->flags & VT_AF_CHARGED))
			continue;
		int cat = a->category < VT_CAT_COUNT ? a->category : VT_CAT_UNKNOWN;
		if (vt_alloc_live_at(r->m, a, &r->at)) {
			r->at_cats[cat] += a->bytes;
			if (a->device != VT_DEVICE_UNKNOWN)
				r->at_dev_bytes[a->device] += a->bytes;
		}
		int at_peak =
		    a->device != VT_DEVICE_UNKNOWN && vt_alloc_live_at(r->m, a, &peak[a->device]);
		if (at_peak) {
			r->dev_cats[a->device][cat] += a->bytes;
			r->cats_at_peak[cat] += a->bytes;
			if (a->confidence < VT_CONFIDENT) {
				struct vt_alternative alt;
				int other =
				    vt_alloc_alternatives(a, &alt, 1) ? alt.category : VT_CAT_COUNT;
				r->unsure_at_peak[cat][other] += a->bytes;
			}
		}
		uint32_t slot = a->stack_id % 64, s = recent[slot].site;
		if (recent[slot].proc != a->proc || recent[slot].stack != a->stack_id) {
			s = site_index(r, &r->stack_sites, &by_name, &cap, a);
			recent[slot].proc = a->proc;
			recent[slot].stack = a->stack_id;
			recent[slot].site = s;
		}
		struct vt_site_stat *st = &r->sites[s];
		st->allocs++;
		if (at_peak) {
			st->bytes_at_peak += a->bytes;
			st->bytes_by_cat[a->category] += a->bytes;
		} else if (st->bytes_at_peak == 0) {
			/* nothing live at peak yet: let the trace's bytes pick a category */
			st->bytes_by_cat[a->category] += 1;
		}
	}
	fold_sites(r, &by_name, &cap);
	for (uint32_t s = 0; s < r->nsites; s++) {
		int best = VT_CAT_UNKNOWN;
		for (int c = 0; c < VT_CAT_COUNT; c++)
			if (r->sites[s].bytes_by_cat[c] > r->sites[s].bytes_by_cat[best])
				best = c;
		r->sites[s].category = best;
	}
	if (r->nsites)
		sort_sites(r);
	HASH_ITER(hh, by_name, n, ntmp)
	{
		HASH_DEL(by_name, n);
		free(n);
	}
}

/* Its allocations: the records, and those a folding model folded. */
static uint64_t proc_allocs(const struct vt_model *m, uint32_t i)
{
	return m->procs[i].alloc_end - m->procs[i].alloc_begin + vt_fold_folded(m, i);
}

static uint32_t busiest_proc(const struct vt_model *m)
{
	uint32_t best = 0;
	for (uint32_t i = 1; i < m->nprocs; i++)
		if (proc_allocs(m, i) > proc_allocs(m, best))
			best = i;
	return best;
}

int vt_report_build(struct vt_report *r, struct vt_model *m, const struct vt_report_options *opt,
                    char *err, size_t errlen)
{
	memset(r, 0, sizeof *r);
	r->m = m;
	r->opt = *opt;
	if (m->stream) { /* its records are not the trace's: report_stream.c */
		snprintf(err, errlen, "a streaming model has no categories (report --stream)");
		return -1;
	}
	if (r->opt.top <= 0)
		r->opt.top = 10;
	vt_model_finish(m);
	if (vt_model_parse_at(m, opt->at, &r->at, r->at_label, sizeof r->at_label) != 0) {
		snprintf(err, errlen,
		         "--at wants peak, end or seconds from the trace start, not '%s'", opt->at);
		return -1;
	}
	vt_classify(m);
	vt_findings_find(m, &r->findings);
	vt_oom_finding_find(m, &r->findings, &r->oom);
	vt_accounting_build(m, &r->accounting);
	build_sites(r);
	r->main_proc = busiest_proc(m);
	return 0;
}

void vt_report_free(struct vt_report *r)
{
	vt_findings_free(&r->findings);
	struct vt_report_stack_site *e, *tmp;
	HASH_ITER(hh, r->stack_sites, e, tmp)
	{
		HASH_DEL(r->stack_sites, e);
		free(e);
	}
	free(r->sites);
	memset(r, 0, sizeof *r);
}
