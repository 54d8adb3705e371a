/* Memory that grows every step (see growth.h). */
#include "growth.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model_query.h"
#include "nomem.h"
#include "site_names.h"
#include "sorted_u64.h"
#include "steps.h"
#include "units.h"

#define CUDA_OOM 2 /* CUDA_ERROR_OUT_OF_MEMORY */
#define SITE_LEN 256

/* One allocation made in a closed step and live at the moment. */
struct kept {
	uint32_t site; /* index into the sites of one process and device */
	uint32_t step;
	uint32_t stack_id;
	uint8_t device;
	uint64_t bytes, t_alloc;
};

/* What one process is looked at: the moment, and its closed steps. */
struct horizon {
	struct vt_moment at;
	int out_of_memory;
	uint32_t closed; /* steps 0..closed-1 ended by the moment */
};

/* The process's first out-of-memory failure by at_ns, or the moment asked. */
static struct horizon horizon_of(const struct vt_model *m, uint32_t pi, uint64_t at_ns)
{
	struct horizon h = {at_ns == VT_T_NEVER ? vt_moment_end(m) : vt_moment_at_time(at_ns), 0,
	                    0};
	for (uint32_t i = 0; i < m->nfailed; i++) {
		const struct vt_failed_alloc *f = &m->failed[i];
		if (f->proc == pi && f->result == CUDA_OOM && f->t_ns <= h.at.t_ns) {
			h.at = vt_moment_at_seq(pi, f->seq, f->t_ns);
			h.out_of_memory = 1;
			break;
		}
	}
	const struct vt_proc *p = &m->procs[pi];
	while (h.closed + 1 < p->nsteps && p->step_t[h.closed + 1] <= h.at.t_ns)
		h.closed++;
	return h;
}

static int kept_cmp(const void *pa, const void *pb)
{
	const struct kept *a = pa, *b = pb;
	if (a->device != b->device)
		return a->device - b->device;
	if (a->stack_id != b->stack_id)
		return a->stack_id < b->stack_id ? -1 : 1;
	return a->step < b->step ? -1 : a->step > b->step;
}

static int site_cmp(const void *pa, const void *pb)
{
	const struct kept *a = pa, *b = pb;
	if (a->device != b->device)
		return a->device - b->device;
	if (a->site != b->site)
		return a->site < b->site ? -1 : 1;
	if (a->step != b->step)
		return a->step < b->step ? -1 : 1;
	return a->t_alloc < b->t_alloc ? -1 : a->t_alloc > b->t_alloc;
}

/* The allocations of process pi made in a closed step and live at the
 * moment, sorted by device and stack. */
static struct kept *collect_kept(const struct vt_model *m, uint32_t pi, const struct horizon *h,
                                 uint32_t *nout)
{
	const struct vt_proc *p = &m->procs[pi];
	uint32_t n = 0, cap = 0;
	struct kept *v = NULL;
	for (uint32_t i = p->alloc_begin; i < p->alloc_end; i++) {
		const struct vt_alloc *a = &m->allocs[i];
		if (!(a->flags & VT_AF_CHARGED) || a->device == VT_DEVICE_UNKNOWN ||
		    !vt_alloc_live_at(m, a, &h->at))
			continue;
		int step = vt_step_of(p, a->t_alloc);
		if (step < 0 || (uint32_t)step >= h->closed)
			continue;
		if (n == cap) {
			cap = cap ? cap * 2 : 64;
			v = realloc(v, cap * sizeof *v);
			if (!v)
				vt_nomem();
		}
		v[n++] =
		    (struct kept){0, (uint32_t)step, a->stack_id, a->device, a->bytes, a->t_alloc};
	}
	if (n)
		qsort(v, n, sizeof *v, kept_cmp);
	*nout = n;
	return v;
}

/* Give each entry its site: stacks of one device with the same site name
 * share one index. */
static void name_sites(const struct vt_model *m, uint32_t pi, struct kept *v, uint32_t n)
{
	char(*names)[SITE_LEN] = NULL;
	uint8_t *devs = NULL;
	uint32_t nsites = 0;
	for (uint32_t i = 0; i < n; i++) {
		if (i && v[i].device == v[i - 1].device && v[i].stack_id == v[i - 1].stack_id) {
			v[i].site = v[i - 1].site;
			continue;
		}
		char name[SITE_LEN];
		vt_name_site(m, pi, v[i].stack_id, name, sizeof name);
		uint32_t s = 0;
		while (s < nsites && (devs[s] != v[i].device || strcmp(names[s], name)))
			s++;
		if (s == nsites) {
			names = realloc(names, (nsites + 1) * sizeof *names);
			devs = realloc(devs, nsites + 1);
			if (!names || !devs)
				vt_nomem();
			memcpy(names[nsites], name, SITE_LEN);
			devs[nsites++] = v[i].device;
		}
		v[i].site = s;
	}
	free(names);
	free(devs);
}

/* Bytes each counted step kept, from one site's entries [b, e) sorted by
 * step; returns the steps that kept any. */
static uint32_t per_step_bytes(const struct kept *v, uint32_t b, uint32_t e, uint32_t closed,
                               uint64_t *bytes)
{
	uint32_t counted = closed - VT_GROWTH_WARMUP_STEPS, kept = 0;
	memset(bytes, 0, counted * sizeof *bytes);
	for (uint32_t i = b; i < e; i++)
		if (v[i].step >= VT_GROWTH_WARMUP_STEPS)
			bytes[v[i].step - VT_GROWTH_WARMUP_STEPS] += v[i].bytes;
	for (uint32_t s = 0; s < counted; s++)
		kept += bytes[s] != 0;
	return kept;
}

/* Kept in many counted steps, and still at the end of them. */
static int grows(const uint64_t *bytes, uint32_t counted, uint32_t kept)
{
	if (kept < VT_GROWTH_MIN_STEPS || kept * 2 < counted)
		return 0;
	uint32_t tail = counted / 4 > 2 ? counted / 4 : 2;
	for (uint32_t s = counted - tail; s < counted; s++)
		if (bytes[s])
			return 1;
	return 0;
}

/* When the device fills at g's rate, from what was live at the moment. */
static void time_to_fill(const struct vt_model *m, const struct vt_proc *p, const struct horizon *h,
                         struct vt_growth *g)
{
	g->live_bytes = vt_model_live_bytes(m, &h->at, g->device);
	g->capacity_bytes = vt_model_device_total(m, g->device);
	g->steps_to_fill = UINT64_MAX;
	g->t_fill_ns = VT_T_NEVER;
	if (g->out_of_memory) {
		g->steps_to_fill = 0;
		g->t_fill_ns = g->at_ns;
	} else if (g->capacity_bytes && g->bytes_per_step) {
		uint64_t left =
		    g->capacity_bytes > g->live_bytes ? g->capacity_bytes - g->live_bytes : 0;
		g->steps_to_fill = left / g->bytes_per_step;
		if (p->step_period_ns &&
		    g->steps_to_fill < (VT_T_NEVER - g->at_ns) / p->step_period_ns)
			g->t_fill_ns = g->at_ns + g->steps_to_fill * p->step_period_ns;
	}
}

static void add_growth(struct vt_growths *out, const struct vt_growth *g)
{
	struct vt_growth *v = realloc(out->v, (out->n + 1) * sizeof *v);
	if (!v)
		vt_nomem();
	out->v = v;
	out->v[out->n++] = *g;
}

/* Did stack_id keep bytes after the warm-up, among entries [b, e)? What the
 * site's other stacks kept before (optimizer state made in the first step
 * by the same helper) is not part of the growth. */
static int grows_after_warmup(const struct kept *v, uint32_t b, uint32_t e, uint32_t stack_id)
{
	for (uint32_t i = b; i < e; i++)
		if (v[i].stack_id == stack_id && v[i].step >= VT_GROWTH_WARMUP_STEPS)
			return 1;
	return 0;
}

/* What the growing stacks of entries [b, e) kept: bytes, count, the first. */
static void sum_growth(const struct kept *v, uint32_t b, uint32_t e, struct vt_growth *g)
{
	int first = 1;
	for (uint32_t i = b; i < e; i++) {
		if (v[i].step < VT_GROWTH_WARMUP_STEPS &&
		    !grows_after_warmup(v, b, e, v[i].stack_id))
			continue;
		if (first) {
			g->stack_id = v[i].stack_id;
			g->first_step = v[i].step;
			g->t_first_ns = v[i].t_alloc;
			first = 0;
		}
		g->kept_bytes += v[i].bytes;
		g->kept_allocs++;
	}
}

/* One site's entries [b, e): a finding when it grew. */
static void judge_site(const struct vt_model *m, uint32_t pi, const struct horizon *h,
                       const struct kept *v, uint32_t b, uint32_t e, uint64_t *bytes,
                       struct vt_growths *out)
{
	uint32_t counted = h->closed - VT_GROWTH_WARMUP_STEPS;
	uint32_t kept = per_step_bytes(v, b, e, h->closed, bytes);
	if (!grows(bytes, counted, kept))
		return;
	struct vt_growth g = {.proc = pi,
	                      .device = v[b].device,
	                      .steps_kept = kept,
	                      .steps_counted = counted,
	                      .at_ns = h->at.t_ns,
	                      .out_of_memory = h->out_of_memory,
	                      .confidence = (int)(60 + 35 * (2 * kept - counted) / counted)};
	sum_growth(v, b, e, &g);
	qsort(bytes, counted, sizeof *bytes, vt_cmp_u64);
	/* at most half are 0 (grows()), so the median is a step that kept */
	g.bytes_per_step = bytes[counted / 2];
	time_to_fill(m, &m->procs[pi], h, &g);
	add_growth(out, &g);
}

static void find_in_proc(const struct vt_model *m, uint32_t pi, uint64_t at_ns,
                         struct vt_growths *out)
{
	struct horizon h = horizon_of(m, pi, at_ns);
	if (h.closed < VT_GROWTH_WARMUP_STEPS + VT_GROWTH_MIN_STEPS)
		return;
	uint32_t n;
	struct kept *v = collect_kept(m, pi, &h, &n);
	if (!n) /* nothing kept: no array a step (a tenth of a long trace's peak) */
		return;
	name_sites(m, pi, v, n);
	if (n)
		qsort(v, n, sizeof *v, site_cmp);
	uint64_t *bytes = malloc(h.closed * sizeof *bytes);
	if (!bytes)
		vt_nomem();
	for (uint32_t b = 0, e; b < n; b = e) {
		for (e = b + 1; e < n && v[e].device == v[b].device && v[e].site == v[b].site; e++)
			;
		judge_site(m, pi, &h, v, b, e, bytes, out);
	}
	free(bytes);
	free(v);
}

static int growth_cmp(const void *pa, const void *pb)
{
	const struct vt_growth *a = pa, *b = pb;
	if (a->proc != b->proc)
		return a->proc < b->proc ? -1 : 1;
	if (a->device != b->device)
		return a->device - b->device;
	return a->kept_bytes > b->kept_bytes ? -1 : a->kept_bytes < b->kept_bytes;
}

void vt_growth_find(const struct vt_model *m, uint64_t at_ns, struct vt_growths *out)
{
	memset(out, 0, sizeof *out);
	for (uint32_t pi = 0; pi < m->nprocs; pi++)
		find_in_proc(m, pi, at_ns, out);
	if (out->n)
		qsort(out->v, out->n, sizeof *out->v, growth_cmp);
}

void vt_growths_free(struct vt_growths *g)
{
	free(g->v);
	memset(g, 0, sizeof *g);
}

void vt_growth_text(const struct vt_growth *g, char *buf, size_t len)
{
	char rate[32], all[32], when[32], steps[48];
	vt_format_bytes(g->bytes_per_step, rate, sizeof rate);
	vt_format_bytes(g->kept_bytes, all, sizeof all);
	vt_format_seconds(g->t_fill_ns, when, sizeof when);
	int n = snprintf(buf, len, "%s a step since step %u (%u of %u steps, %s live)", rate,
	                 g->first_step + 1, g->steps_kept, g->steps_counted, all);
	if (n < 0 || (size_t)n >= len)
		return;
	if (g->out_of_memory)
		snprintf(buf + n, len - n, "; GPU %u filled: out of memory at t=%s", g->device,
		         when);
	else if (g->steps_to_fill == UINT64_MAX)
		snprintf(buf + n, len - n, "; GPU %u's capacity is unknown", g->device);
	else if (g->t_fill_ns == VT_T_NEVER)
		snprintf(buf + n, len - n, "; at that rate GPU %u fills in %s", g->device,
		         vt_count(g->steps_to_fill, "step", "steps", steps, sizeof steps));
	else
		snprintf(buf + n, len - n, "; at that rate GPU %u fills in %s, at about t=%s",
		         g->device,
		         vt_count(g->steps_to_fill, "step", "steps", steps, sizeof steps), when);
}
