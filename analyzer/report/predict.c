/* Fitting bytes at the peak against the batch size (see predict.h). */
#include "predict.h"

#include <stdlib.h>
#include <string.h>

#include "gcd.h"
#include "model_query.h"
#include "nomem.h"

/* Categories smaller than this in every run raise no doubt: a few KiB of
 * bookkeeping that wobble between runs change no answer. */
#define DOUBT_FLOOR (1ull << 20)
/* A pool whose allocations share a chunk at least this big grows in steps. */
#define MIN_POOL_CHUNK (1ull << 20)

static uint64_t round_up(uint64_t v, uint64_t unit)
{
	return unit > 1 ? (v + unit - 1) / unit * unit : v;
}

void vt_predict_init(struct vt_predict *p, uint64_t granularity)
{
	memset(p, 0, sizeof *p);
	p->granularity = granularity ? granularity : 1;
}

void vt_predict_free(struct vt_predict *p)
{
	free(p->runs);
	p->runs = NULL;
	p->nruns = p->cap_runs = 0;
}

/* ---- one run ------------------------------------------------------------------ */

/* Allocations the main process makes in a step, x10, over its middle steps
 * (the first creates lazy state, the last prefetches nothing). */
static uint64_t allocs_per_step_x10(const struct vt_model *m, uint32_t proc)
{
	if (proc >= m->nprocs)
		return 0;
	const struct vt_proc *pr = &m->procs[proc];
	if (pr->nsteps < 3)
		return 0;
	uint64_t from = pr->step_t[1], to = pr->step_t[pr->nsteps - 1], n = 0;
	for (uint32_t i = pr->alloc_begin; i < pr->alloc_end; i++) {
		const struct vt_alloc *a = &m->allocs[i];
		if ((a->flags & VT_AF_CHARGED) && a->t_alloc >= from && a->t_alloc < to)
			n++;
	}
	return n * 10 / (pr->nsteps - 2);
}

/* Count, rounding and chunk of what the report counted at each peak: the
 * same allocations (vt_report_live_at_peak) and the same categories. */
static void count_at_peak(struct vt_predict_run *run, const struct vt_report *r, uint64_t gran)
{
	const struct vt_model *m = r->m;
	for (uint32_t i = 0; i < m->nallocs; i++) {
		const struct vt_alloc *a = &m->allocs[i];
		if (!vt_report_live_at_peak(r, a))
			continue;
		int cat = a->category < VT_CAT_COUNT ? a->category : VT_CAT_UNKNOWN;
		struct vt_predict_dev *d = &run->dev[a->device];
		d->count[cat]++;
		d->slack[cat] += round_up(a->bytes, gran) - a->bytes;
		d->chunk[cat] = vt_gcd_u64(d->chunk[cat], a->bytes);
	}
}

void vt_predict_add_run(struct vt_predict *p, const struct vt_report *r, uint64_t batch,
                        const char *dir)
{
	size_t cap = (size_t)p->cap_runs;
	p->runs = vt_xgrow(p->runs, &cap, (size_t)p->nruns + 1, sizeof *p->runs);
	p->cap_runs = (int)cap;
	struct vt_predict_run *run = &p->runs[p->nruns++];
	memset(run, 0, sizeof *run);
	snprintf(run->dir, sizeof run->dir, "%s", dir);
	run->batch = batch;
	for (int dev = 0; dev < VT_MAX_DEVICES; dev++) {
		struct vt_predict_dev *d = &run->dev[dev];
		d->used = vt_model_device_used(r->m, dev);
		d->total = vt_model_device_total(r->m, dev);
		d->peak = r->m->devices[dev].peak_bytes;
		memcpy(d->cats, r->dev_cats[dev], sizeof d->cats);
	}
	count_at_peak(run, r, p->granularity);
	run->allocs_per_step_x10 = allocs_per_step_x10(r->m, r->main_proc);
}

uint64_t vt_predict_batch_mark(const struct vt_model *m)
{
	for (uint32_t i = 0; i < m->nprocs; i++) {
		for (uint32_t k = 0; k < m->procs[i].nmarks; k++) {
			const char *t = m->procs[i].marks[k].text;
			if (!t || strncmp(t, "batch_size", 10) || (t[10] != ' ' && t[10] != '='))
				continue;
			char *end;
			unsigned long long v = strtoull(t + 11, &end, 10);
			if (end != t + 11 && !*end && v > 0 && v <= VT_PREDICT_MAX_BATCH)
				return v;
		}
	}
	return 0;
}

/* ---- the fit ------------------------------------------------------------------ */

static int run_cmp(const void *x, const void *y)
{
	const struct vt_predict_run *a = x, *b = y;
	return (a->batch > b->batch) - (a->batch < b->batch);
}

/* The line's bytes at batch x, rounded up (whole bytes, no float error). */
static __int128 line_at(const struct vt_predict_cat *c, uint64_t x)
{
	__int128 num = (__int128)c->dy * ((__int128)x - (__int128)c->x0);
	__int128 step = num / (__int128)c->dx;
	if (num % (__int128)c->dx > 0)
		step++; /* ceiling for growth; truncation toward zero is the ceiling below zero */
	return (__int128)c->y0 + step;
}

/* The doubts the runs between the ends raise, and the worst miss. */
static void check_runs(const struct vt_predict *p, int dev, int cat, struct vt_predict_cat *c)
{
	uint64_t prev = 0;
	for (int i = 0; i < p->nruns; i++) {
		const struct vt_predict_dev *d = &p->runs[i].dev[dev];
		uint64_t y = d->cats[cat];
		if (i > 0 && y < prev)
			c->uncertain |= VT_DOUBT_SHRINKS;
		if (i > 0 && d->count[cat] != p->runs[i - 1].dev[dev].count[cat])
			c->uncertain |= VT_DOUBT_COUNT;
		prev = y;
		if (i == 0 || i == p->nruns - 1)
			continue;
		__int128 want = line_at(c, p->runs[i].batch);
		double miss =
		    (double)(want > (__int128)y ? want - (__int128)y : (__int128)y - want);
		miss /= (double)(y > DOUBT_FLOOR ? y : DOUBT_FLOOR);
		if (miss > c->worst_miss)
			c->worst_miss = miss;
		if (miss > VT_PREDICT_MISS)
			c->uncertain |= VT_DOUBT_OFF_LINE;
	}
	if (c->most < DOUBT_FLOOR)
		c->uncertain = 0;
}

/* A pool category whose allocations all share a large chunk grows by it. */
static uint64_t pool_chunk(const struct vt_predict *p, int dev, int cat)
{
	if (cat != VT_CAT_POOL)
		return 0;
	uint64_t g = 0;
	for (int i = 0; i < p->nruns; i++)
		g = vt_gcd_u64(g, p->runs[i].dev[dev].chunk[cat]);
	return g >= MIN_POOL_CHUNK ? g : 0;
}

static void fit_cat(struct vt_predict *p, int dev, int cat)
{
	const struct vt_predict_run *lo = &p->runs[0], *hi = &p->runs[p->nruns - 1];
	struct vt_predict_cat *c = &p->cat[dev][cat];
	memset(c, 0, sizeof *c);
	int same = 1;
	for (int i = 0; i < p->nruns; i++) {
		uint64_t y = p->runs[i].dev[dev].cats[cat];
		c->most = y > c->most ? y : c->most;
		same &= y == lo->dev[dev].cats[cat];
	}
	if (!c->most)
		return;
	c->shape = same ? VT_SHAPE_CONSTANT : VT_SHAPE_LINEAR;
	c->y0 = lo->dev[dev].cats[cat];
	c->x0 = lo->batch;
	c->dx = hi->batch - lo->batch;
	c->dy = (int64_t)hi->dev[dev].cats[cat] - (int64_t)c->y0;
	c->b = (double)c->dy / (double)c->dx;
	c->a = (double)c->y0 - c->b * (double)c->x0;
	c->count = hi->dev[dev].count[cat];
	c->slack = hi->dev[dev].slack[cat];
	check_runs(p, dev, cat, c);
	if (c->shape == VT_SHAPE_LINEAR && (c->chunk = pool_chunk(p, dev, cat)))
		c->uncertain |= VT_DOUBT_POOL_CHUNKS;
}

static int check_batches(const struct vt_predict *p, char *err, size_t errlen)
{
	if (p->nruns < 2) {
		snprintf(err, errlen, "need traces at two or more batch sizes");
		return -1;
	}
	for (int i = 1; i < p->nruns; i++) {
		if (p->runs[i].batch == p->runs[i - 1].batch) {
			snprintf(err, errlen,
			         "%s and %s are both at batch %llu: need different sizes",
			         p->runs[i - 1].dir, p->runs[i].dir,
			         (unsigned long long)p->runs[i].batch);
			return -1;
		}
	}
	return 0;
}

int vt_predict_fit(struct vt_predict *p, char *err, size_t errlen)
{
	if (p->nruns)
		qsort(p->runs, (size_t)p->nruns, sizeof *p->runs, run_cmp);
	if (check_batches(p, err, errlen))
		return -1;
	p->allocs_per_step_differ = 0;
	uint64_t known = 0; /* the first run's count that is known (0: no steps) */
	for (int i = 0; i < p->nruns; i++) {
		uint64_t n = p->runs[i].allocs_per_step_x10;
		if (n && known && n != known)
			p->allocs_per_step_differ = 1;
		known = known ? known : n;
	}
	for (int dev = 0; dev < VT_MAX_DEVICES; dev++) {
		p->dev_used[dev] = 0;
		for (int i = 0; i < p->nruns; i++)
			p->dev_used[dev] |= p->runs[i].dev[dev].used;
		for (int cat = 0; cat < VT_CAT_COUNT; cat++)
			fit_cat(p, dev, cat);
	}
	return 0;
}

/* ---- questions ------------------------------------------------------------------ */

uint64_t vt_predict_cat_bytes(const struct vt_predict *p, int dev, int cat, uint64_t batch)
{
	const struct vt_predict_cat *c = &p->cat[dev][cat];
	if (c->shape == VT_SHAPE_ABSENT)
		return 0;
	if (c->shape == VT_SHAPE_CONSTANT)
		return c->most + c->slack;
	__int128 v = line_at(c, batch);
	if ((c->uncertain & VT_DOUBT_SHRINKS) && v < (__int128)c->most)
		v = c->most; /* not extrapolated down */
	if (v <= 0)
		return 0;
	if (v > (__int128)VT_MODEL_MAX_BYTES)
		return VT_MODEL_MAX_BYTES;
	uint64_t bytes = (uint64_t)v;
	if (c->count) /* each allocation rounded, their number held */
		bytes = c->count * round_up((bytes + c->count - 1) / c->count, p->granularity);
	return round_up(bytes, c->chunk);
}

uint64_t vt_predict_peak(const struct vt_predict *p, int dev, uint64_t batch)
{
	uint64_t sum = 0;
	for (int cat = 0; cat < VT_CAT_COUNT; cat++)
		sum += vt_predict_cat_bytes(p, dev, cat, batch);
	return sum;
}

int vt_predict_peak_grows(const struct vt_predict *p)
{
	for (int dev = 0; dev < VT_MAX_DEVICES; dev++)
		for (int cat = 0; cat < VT_CAT_COUNT; cat++)
			if (p->dev_used[dev] && p->cat[dev][cat].shape == VT_SHAPE_LINEAR &&
			    p->cat[dev][cat].dy > 0)
				return 1;
	return 0;
}

static int fits(const struct vt_predict *p, const uint64_t *usable, uint64_t batch)
{
	for (int dev = 0; dev < VT_MAX_DEVICES; dev++)
		if (p->dev_used[dev] && vt_predict_peak(p, dev, batch) > usable[dev])
			return 0;
	return 1;
}

uint64_t vt_predict_largest_fit(const struct vt_predict *p, const uint64_t *usable)
{
	/* every prediction grows with the batch or stays (a shrinking category
	 * is held at its most), so the answer is a bisection */
	if (!fits(p, usable, 1))
		return 0;
	if (fits(p, usable, VT_PREDICT_MAX_BATCH))
		return vt_predict_peak_grows(p) ? VT_PREDICT_MAX_BATCH : VT_PREDICT_NO_LIMIT;
	uint64_t ok = 1, over = VT_PREDICT_MAX_BATCH;
	while (over - ok > 1) {
		uint64_t mid = ok + (over - ok) / 2;
		if (fits(p, usable, mid))
			ok = mid;
		else
			over = mid;
	}
	return ok;
}

int vt_predict_uncertain(const struct vt_predict *p, int ignore_chunks)
{
	if (p->allocs_per_step_differ)
		return 1;
	unsigned mask = ignore_chunks ? ~(unsigned)VT_DOUBT_POOL_CHUNKS : ~0u;
	for (int dev = 0; dev < VT_MAX_DEVICES; dev++)
		for (int cat = 0; cat < VT_CAT_COUNT; cat++)
			if (p->cat[dev][cat].uncertain & mask)
				return 1;
	return 0;
}
