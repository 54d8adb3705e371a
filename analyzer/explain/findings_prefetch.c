/* Prefetch depth (see findings_prefetch.h). */
#include "findings_prefetch.h"

#include <stdlib.h>

#include "classify.h"
#include "model_fold.h"
#include "model_query.h"
#include "nomem.h"
#include "steps.h"

/* A birth or a death of a prefetch buffer; which of the two, its array
 * says. With a buffer a step, these were a fifth of a long trace's peak
 * memory while each said which and named its allocation too. */
struct edge {
	uint64_t t, seq;
};

static int edge_cmp(const void *x, const void *y)
{
	const struct edge *a = x, *b = y;
	if (a->t != b->t)
		return a->t < b->t ? -1 : 1;
	if (a->seq != b->seq)
		return a->seq < b->seq ? -1 : 1;
	return 0;
}

/* Births come in allocation order and deaths nearly always in time order:
 * sort only when they are not (threads racing for the clock). */
static void sort_if_needed(struct edge *e, uint32_t n)
{
	for (uint32_t i = 1; i < n; i++)
		if (edge_cmp(&e[i - 1], &e[i]) > 0) {
			qsort(e, n, sizeof *e, edge_cmp);
			return;
		}
}

static int is_prefetch_of(const struct vt_alloc *a, uint32_t proc, uint8_t dev)
{
	return a->category == VT_CAT_PREFETCH && a->proc == proc && a->device == dev;
}

/* A folding model's prefetch buffers of one process and device: its groups
 * of that category (model_fold.h). */
struct folded {
	uint64_t n, copies, bytes; /* allocations, their copies, the largest */
	int other_uploads;         /* folded uploads of another category there */
	const struct vt_fold_dev *fd;
	struct edge first; /* the first folded upload's birth */
};

static struct folded folded_of(const struct vt_model *m, uint32_t proc, uint8_t dev)
{
	struct folded fo = {.fd = vt_fold_dev_of(m, proc, dev)};
	if (fo.fd)
		fo.first = (struct edge){fo.fd->first_up_t, fo.fd->first_up_seq};
	uint32_t ng;
	const struct vt_fold_group *g = vt_fold_groups(m, &ng);
	for (uint32_t i = 0; i < ng; i++) {
		if (g[i].proc != proc || g[i].device != dev || !g[i].h2d_copies)
			continue;
		if (g[i].category != VT_CAT_PREFETCH) {
			fo.other_uploads = 1;
			continue;
		}
		fo.n += g[i].count;
		fo.copies += g[i].h2d_copies;
		if (g[i].bytes > fo.bytes)
			fo.bytes = g[i].bytes;
	}
	return fo;
}

/* What one batch is: the prefetch buffers a step makes (x and y, inputs
 * and masks), as most steps make them, and their bytes. One array each
 * when the process has no steps or its steps disagree. */
struct batch_shape {
	uint32_t arrays;
	uint64_t bytes;
};

struct step_bytes {
	int32_t step;
	uint64_t bytes;
};

static int by_step(const void *x, const void *y)
{
	int32_t a = ((const struct step_bytes *)x)->step, b = ((const struct step_bytes *)y)->step;
	return a < b ? -1 : a > b;
}

/* The kept buffers of proc on dev counted per step: their steps, sorted
 * (nearly always already), then runs of one step. Memory follows the
 * buffers, not the steps. */
static void kept_per_step(const struct vt_model *m, const struct vt_findings_scan *ds,
                          uint32_t proc, uint8_t dev, struct vt_uploads_per_step *ps)
{
	const struct vt_proc *p = &m->procs[proc];
	struct step_bytes *v = NULL;
	uint32_t n = 0, cap = 0, sorted = 1;
	for (uint32_t k = 0; k < ds->n; k++) {
		const struct vt_alloc *a = &m->allocs[ds->idx[k]];
		int s = is_prefetch_of(a, proc, dev) ? vt_step_of(p, a->t_alloc) : -1;
		if (s < 0)
			continue;
		if (n == cap && !(v = realloc(v, (cap = cap ? 2 * cap : 64) * sizeof *v)))
			vt_nomem();
		sorted &= !n || v[n - 1].step <= s;
		v[n++] = (struct step_bytes){s, a->bytes};
	}
	if (!sorted)
		qsort(v, n, sizeof *v, by_step);
	for (uint32_t i = 0; i < n;) {
		uint32_t j = i;
		uint64_t bytes = 0;
		for (; j < n && v[j].step == v[i].step; j++)
			bytes += v[j].bytes;
		vt_uploads_count(ps, j - i, bytes);
		i = j;
	}
	free(v);
}

static struct batch_shape batch_shape(const struct vt_model *m, const struct vt_findings_scan *ds,
                                      uint32_t proc, uint8_t dev, const struct folded *fo)
{
	struct batch_shape one = {1, 0};
	if (m->procs[proc].nsteps < 3)
		return one;
	struct vt_uploads_per_step ps = {0};
	kept_per_step(m, ds, proc, dev, &ps);
	if (fo->n && (fo->other_uploads || fo->fd->lost))
		vt_fold_set_inexact(m, "folded uploads of a step are not all batch buffers");
	if (fo->n) /* the folded steps came after the kept ones */
		vt_uploads_merge(&ps, &fo->fd->up);
	/* the count most steps that made any share: the batch's arrays (not
	 * the open-ended last count) */
	uint32_t steps = 0, mode = 1;
	for (uint32_t c = 1; c <= VT_UPLOADS_CAP; c++)
		steps += ps.steps[c];
	for (uint32_t c = 1; c < VT_UPLOADS_CAP; c++)
		if (ps.steps[c] > ps.steps[mode])
			mode = c;
	struct batch_shape shape = one;
	if (mode > 1 && ps.steps[mode] * 2 > steps) {
		shape.arrays = mode;
		shape.bytes = ps.bytes[mode];
	}
	return shape;
}

#define MAX_PREFETCH_DEPTH 8
#define MIN_BATCH_BYTES 1024
#define MAX_BATCH_ARRAYS 8 /* x, y, masks, weights of a batch */

/* The prefetch buffers' births in (t, seq) order: read from the scan when
 * it holds them in that order (nearly always: records are kept in the
 * order they were made), else from a sorted copy. A copy of every birth
 * was 7 % of a long trace's peak memory, with a buffer a step. */
struct births {
	const struct vt_model *m;
	const struct vt_findings_scan *ds;
	uint32_t proc, at; /* at: the scan's next entry */
	uint8_t dev;
	struct edge *sorted; /* NULL: from the scan */
	uint32_t i, n;
};

/* The next birth into *out; 0 when none is left. */
static int next_birth(struct births *b, struct edge *out)
{
	if (b->i == b->n)
		return 0;
	if (b->sorted) {
		*out = b->sorted[b->i++];
		return 1;
	}
	const struct vt_alloc *a;
	do
		a = &b->m->allocs[b->ds->idx[b->at++]];
	while (!is_prefetch_of(a, b->proc, b->dev));
	*out = (struct edge){a->t_alloc, a->seq_alloc};
	b->i++;
	return 1;
}

/* The most buffers live at once (births and deaths merged in (t, seq,
 * frees first) order) and when that was first reached. */
static int most_live(struct births *b, const struct edge *deaths, uint32_t nd, uint64_t *when)
{
	int live = 0, best = 0;
	struct edge birth;
	int more = next_birth(b, &birth);
	for (uint32_t j = 0; more || j < nd;) {
		int death = j < nd && (!more || edge_cmp(&deaths[j], &birth) <= 0);
		uint64_t t = death ? deaths[j++].t : birth.t;
		if (!death)
			more = next_birth(b, &birth);
		live += death ? -1 : 1;
		if (live > best) {
			best = live;
			*when = t;
		}
	}
	return best;
}

/* Whether the folded buffers leave the kept records' depth (best alive at
 * once, first reached at `when`) the full model's: none kept was made
 * after the first folded one, the kept ones alive then and the bound on
 * the uploads of the era alive at once (vt_fold_dev.up_high) are not more
 * than best, and best was reached before. */
static int folded_depth_same(const struct vt_model *m, const struct vt_findings_scan *ds,
                             uint32_t proc, uint8_t dev, const struct folded *fo, int best,
                             uint64_t when)
{
	uint32_t alive = 0;
	for (uint32_t k = 0; k < ds->n; k++) {
		const struct vt_alloc *a = &m->allocs[ds->idx[k]];
		if (!is_prefetch_of(a, proc, dev))
			continue;
		struct edge born = {a->t_alloc, a->seq_alloc}, died = {a->t_free, a->seq_free};
		if (edge_cmp(&born, &fo->first) >= 0)
			return 0;
		alive += edge_cmp(&died, &fo->first) > 0; /* deaths first on a tie */
	}
	return when < fo->first.t && alive + fo->fd->up_high <= (uint32_t)best;
}

/* The kept buffers of one process and device: their count, their copies,
 * the largest one's bytes and the stack that filled the first of that
 * size; each birth into b when b->sorted, each death into deaths. */
struct kept {
	uint32_t n, nd;
	uint64_t copies, batch;
	uint32_t stack;
};

static void kept_edges(const struct vt_model *m, const struct vt_findings_scan *ds,
                       struct births *b, struct edge *deaths, struct kept *k)
{
	uint32_t nb = 0;
	for (uint32_t x = 0; x < ds->n; x++) {
		const struct vt_alloc *a = &m->allocs[ds->idx[x]];
		if (!is_prefetch_of(a, b->proc, b->dev))
			continue;
		if (b->sorted)
			b->sorted[nb++] = (struct edge){a->t_alloc, a->seq_alloc};
		if (a->t_free != VT_T_NEVER)
			deaths[k->nd++] = (struct edge){a->t_free, a->seq_free};
		k->copies += vt_model_copies(m, a)->h2d_copies;
		if (a->bytes > k->batch) {
			k->batch = a->bytes;
			k->stack = vt_alloc_fill_stack(m, a);
		}
	}
	if (b->sorted)
		sort_if_needed(b->sorted, nb);
	sort_if_needed(deaths, k->nd);
}

/* What a prefetch_depth finding says: batches alive at once, one batch's
 * bytes, the uploads, when the depth was reached, the stack that filled
 * the largest array. */
struct depth_seen {
	uint32_t depth;
	uint64_t batch, copies, t_ns;
	uint32_t stack;
	uint8_t confidence;
};

static void raise_depth(const struct vt_model *m, uint32_t proc, uint8_t dev,
                        const struct depth_seen *seen, struct vt_findings *out)
{
	struct vt_finding *f = vt_findings_new(out, VT_FINDING_PREFETCH_DEPTH, proc);
	vt_finding_add_device(f, dev, seen->batch * seen->depth);
	f->depth = seen->depth;
	f->batch_bytes = seen->batch;
	f->copies = seen->copies;
	f->stack_id = seen->stack;
	f->t_ns = seen->t_ns;
	f->confidence = seen->confidence;
	f->framework = vt_framework_of(&m->procs[proc]);
}

/* The prefetch buffers of one process on one device, from the scan, and a
 * folding model's groups of them. */
static void prefetch_on(const struct vt_model *m, const struct vt_findings_scan *ds, uint32_t proc,
                        uint8_t dev, struct vt_findings *out)
{
	struct births b = {.m = m, .ds = ds, .proc = proc, .dev = dev};
	int in_order = 1;
	struct edge last = {0, 0};
	for (uint32_t k = 0; k < ds->n; k++) {
		const struct vt_alloc *a = &m->allocs[ds->idx[k]];
		if (!is_prefetch_of(a, proc, dev))
			continue;
		struct edge e = {a->t_alloc, a->seq_alloc};
		in_order &= !b.n++ || edge_cmp(&last, &e) <= 0;
		last = e;
	}
	struct folded fo = folded_of(m, proc, dev);
	if (b.n + fo.n < 3)
		return;
	struct edge *deaths = malloc((in_order ? 1 : 2) * (b.n ? b.n : 1) * sizeof *deaths);
	if (!deaths)
		vt_nomem();
	b.sorted = in_order ? NULL : deaths + b.n;
	struct kept k = {0};
	kept_edges(m, ds, &b, deaths, &k);
	uint64_t when = 0;
	int best = most_live(&b, deaths, k.nd, &when);
	free(deaths);
	if (fo.n && (fo.bytes > k.batch || !folded_depth_same(m, ds, proc, dev, &fo, best, when)))
		vt_fold_set_inexact(m, "folded batch buffers change the prefetch depth");
	uint64_t batch = k.batch;
	struct batch_shape shape = batch_shape(m, ds, proc, dev, &fo);
	if (shape.arrays > 1) { /* x and y of one batch are one batch */
		best = (best + (int)shape.arrays - 1) / (int)shape.arrays;
		batch = shape.bytes;
	}
	/* A device prefetcher holds a few batches (DataLoader's prefetch_factor,
	 * tf.data's prefetch(2), a DALI ring): more "batches" live at once are
	 * tensors filled from the host mistaken for batches (a model's segments
	 * loaded during inference), no evidence for advice. */
	if (best > MAX_PREFETCH_DEPTH)
		return;
	/* Several "batches" of a few bytes each are constants uploaded per
	 * call (a normalisation's mean and std), not a prefetcher's buffer:
	 * advice to drop one would free nothing. One is still reported, as
	 * what the step's input is. */
	if (best > 1 && batch < MIN_BATCH_BYTES)
		return;
	struct depth_seen seen = {(uint32_t)best, batch, k.copies + fo.copies, when, k.stack, 80};
	raise_depth(m, proc, dev, &seen, out);
}

/* ---- batches uploaded into a pool -------------------------------------
 * A caching allocator or an arena gives each batch a block of a segment the
 * driver saw allocated once, so no allocation is a prefetch buffer; the
 * uploads are still seen, with the offset each lands at (vt_copy_range).
 * A batch array uploaded once a step lands in a few places the allocator
 * reuses: one place when each batch is freed before the next one is made,
 * D places taken in turn when D batches are alive at once (a ring, or a
 * caching allocator's blocks alternating under a prefetcher). So the
 * places that receive uploads of one size, D of them sharing about one
 * upload a step, each used all through the run, are one array of a batch
 * held D deep. */

/* One place a size of upload lands at, repeatedly. */
struct landing {
	uint64_t bytes, t_first, t_last;
	uint32_t copies, stack;
	uint8_t device;
};

static int by_device_bytes(const void *x, const void *y)
{
	const struct landing *a = x, *b = y;
	if (a->device != b->device)
		return a->device < b->device ? -1 : 1;
	return a->bytes < b->bytes ? -1 : a->bytes > b->bytes;
}

/* Categories whose uploads are the model's, not batches: a flat weight
 * buffer refreshed every step at one offset is no prefetcher. */
static int holds_model(uint8_t cat)
{
	return cat == VT_CAT_WEIGHTS || cat == VT_CAT_OPTIMIZER || cat == VT_CAT_GRADIENTS ||
	       cat == VT_CAT_DATASET;
}

/* The places uploads of process p land at again and again (2 copies or
 * more, within the steps), in allocations the model's state is not in,
 * sorted by device and size: one pass over the process's own allocations
 * and their ranges serves all its devices. */
static struct landing *landings(const struct vt_model *m, const struct vt_proc *p, uint32_t *n)
{
	struct landing *v = NULL;
	uint32_t cap = 0;
	*n = 0;
	for (uint32_t i = p->alloc_begin; i < p->alloc_end; i++) {
		const struct vt_alloc *a = &m->allocs[i];
		if (!(a->flags & VT_AF_PARTIAL_COPIES) || holds_model(a->category))
			continue;
		uint32_t nr;
		const struct vt_copy_range *r = vt_model_ranges(m, i, &nr);
		for (uint32_t k = 0; k < nr; k++) {
			if (r[k].copies < 2 || vt_step_of(p, r[k].t_first) < 0)
				continue;
			if (*n == cap && !(v = realloc(v, (cap = cap ? 2 * cap : 16) * sizeof *v)))
				vt_nomem();
			v[(*n)++] = (struct landing){r[k].bytes,  r[k].t_first,  r[k].t_last,
			                             r[k].copies, r[k].stack_id, a->device};
		}
	}
	if (*n)
		qsort(v, *n, sizeof *v, by_device_bytes);
	return v;
}

/* One size's places l[0..d) as batch arrays: about `arrays` uploads a step
 * over the steps they span (at least half the run's), each array's d /
 * arrays places taken in turn, each place its share. 0 when they are not. */
struct array_use {
	uint32_t arrays, depth;
};

static struct array_use size_use(const struct vt_proc *p, const struct landing *l, uint32_t d)
{
	struct array_use none = {0, 0};
	uint64_t t0 = l[0].t_first, t1 = l[0].t_last, copies = 0;
	for (uint32_t i = 0; i < d; i++) {
		t0 = l[i].t_first < t0 ? l[i].t_first : t0;
		t1 = l[i].t_last > t1 ? l[i].t_last : t1;
		copies += l[i].copies;
	}
	uint64_t span = (uint64_t)(vt_step_of(p, t1) - vt_step_of(p, t0) + 1);
	if (span < 3 || span * 2 < p->nsteps)
		return none;
	uint64_t arrays = (copies + span / 2) / span; /* uploads a step, rounded */
	if (!arrays || d % arrays || copies * 4 < arrays * span * 3 ||
	    copies * 4 > arrays * span * 5)
		return none;
	uint32_t depth = d / (uint32_t)arrays;
	if (depth > MAX_PREFETCH_DEPTH)
		return none;
	for (uint32_t i = 0; i < d; i++) /* each place in turn: its share of the steps */
		if (l[i].copies * depth * 2 < span)
			return none;
	return (struct array_use){(uint32_t)arrays, depth};
}

/* A batch uploaded into a pool on dev (one array or a few, each held as
 * deep): a finding at lower confidence than one from buffers of its own,
 * since the depth is read from where the uploads land. */
static void pool_batches_on(const struct vt_model *m, uint32_t proc, uint8_t dev,
                            const struct landing *l, uint32_t n, struct vt_findings *out)
{
	const struct vt_proc *p = &m->procs[proc];
	uint32_t arrays = 0, depth = 0;
	uint64_t batch = 0, largest = 0, copies = 0, first = VT_T_NEVER;
	uint32_t stack = 0;
	for (uint32_t i = 0, j; i < n; i = j) {
		for (j = i; j < n && l[j].bytes == l[i].bytes; j++)
			;
		struct array_use u = size_use(p, &l[i], j - i);
		if (!u.arrays)
			continue;
		arrays += u.arrays;
		batch += l[i].bytes * u.arrays;
		for (uint32_t k = i; k < j; k++) {
			copies += l[k].copies;
			first = l[k].t_first < first ? l[k].t_first : first;
		}
		if (l[i].bytes > largest) { /* the batch's depth: its largest array's */
			largest = l[i].bytes;
			depth = u.depth;
			stack = l[i].stack;
		}
	}
	/* more arrays a step than a batch has are the model's own uploads */
	if (!arrays || arrays > MAX_BATCH_ARRAYS || (depth > 1 && batch < MIN_BATCH_BYTES))
		return;
	struct depth_seen seen = {depth, batch, copies, first, stack, 60};
	raise_depth(m, proc, dev, &seen, out);
}

/* The devices of process pi with prefetch buffers: kept, or folded. */
static void devices_with_buffers(const struct vt_model *m, const struct vt_findings_scan *ds,
                                 uint32_t pi, uint8_t *has)
{
	for (uint32_t k = 0; k < ds->n; k++) {
		const struct vt_alloc *a = &m->allocs[ds->idx[k]];
		if (a->category == VT_CAT_PREFETCH && a->proc == pi &&
		    a->device != VT_DEVICE_UNKNOWN)
			has[a->device] = 1;
	}
	uint32_t ng;
	const struct vt_fold_group *g = vt_fold_groups(m, &ng);
	for (uint32_t i = 0; i < ng; i++)
		if (g[i].proc == pi && g[i].category == VT_CAT_PREFETCH)
			has[g[i].device] = 1;
}

void vt_findings_prefetch(const struct vt_model *m, const struct vt_findings_scan *ds,
                          struct vt_findings *out)
{
	for (uint32_t pi = 0; pi < m->nprocs; pi++) {
		uint8_t has[VT_MAX_DEVICES] = {0};
		devices_with_buffers(m, ds, pi, has);
		uint32_t n = 0, at = 0;
		struct landing *l =
		    m->procs[pi].nsteps >= 3 ? landings(m, &m->procs[pi], &n) : NULL;
		for (int d = 0; d < VT_MAX_DEVICES; d++) {
			uint32_t end = at;
			while (end < n && l[end].device == d)
				end++;
			if (has[d])
				prefetch_on(m, ds, pi, (uint8_t)d, out);
			else if (end > at)
				pool_batches_on(m, pi, (uint8_t)d, l + at, end - at, out);
			at = end;
		}
		free(l);
	}
}
