/* Whole-dataset uploads (see findings_dataset.h). */
#include "findings_dataset.h"

#include <stdlib.h>
#include <string.h>

#include "call_path.h"
#include "classify.h"
#include "model_fold.h"
#include "model_query.h"
#include "nomem.h" /* before <uthash.h>: its out-of-memory exit */
#include "upload_sites.h"
#include <uthash.h>

/* The flag already made for the same dataset on another device: same proc,
 * same size and site. */
static struct vt_finding *same_dataset(struct vt_findings *out, uint32_t first, uint32_t proc,
                                       uint32_t stack_id, uint64_t bytes, uint8_t dev)
{
	for (uint32_t i = first; i < out->n; i++) {
		struct vt_finding *f = &out->v[i];
		if (f->kind != VT_FINDING_WHOLE_DATASET || f->proc != proc ||
		    f->stack_id != stack_id || f->bytes[0] != bytes)
			continue;
		if (!vt_finding_on_device(f, dev))
			return f;
	}
	return NULL;
}

/* -> the index of the finding made or grown */
static uint32_t note_dataset(const struct vt_model *m, struct vt_findings *out, uint32_t first,
                             uint32_t proc, uint32_t stack, uint8_t dev, uint64_t bytes,
                             uint64_t copies, uint64_t t, int confidence)
{
	struct vt_finding *f = same_dataset(out, first, proc, stack, bytes, dev);
	if (!f) {
		f = vt_findings_new(out, VT_FINDING_WHOLE_DATASET, proc);
		f->stack_id = stack;
		f->t_ns = t;
		f->confidence = confidence;
		f->framework = vt_framework_of(&m->procs[proc]);
	}
	vt_finding_add_device(f, dev, bytes);
	f->copies += copies;
	if (t < f->t_ns)
		f->t_ns = t;
	return (uint32_t)(f - out->v);
}

/* The whole-dataset finding of this process and device uploaded through
 * call path `stack` (and first at time t; VT_T_NEVER: any time), or NULL. */
static struct vt_finding *finding_of_stack(struct vt_findings *out, uint32_t first, uint32_t proc,
                                           uint8_t dev, uint32_t stack, uint64_t t)
{
	for (uint32_t i = first; i < out->n; i++) {
		struct vt_finding *f = &out->v[i];
		if (f->kind == VT_FINDING_WHOLE_DATASET && f->proc == proc &&
		    vt_finding_on_device(f, dev) && f->stack_id == stack &&
		    (t == VT_T_NEVER || f->t_ns == t))
			return f;
	}
	return NULL;
}

/* The finding that big dataset array b opened: the one of its call path
 * first uploaded when b was (a job that uploads a new array each epoch
 * through one path has a finding for each); else the path's. */
static struct vt_finding *finding_of_array(const struct vt_model *m, struct vt_findings *out,
                                           uint32_t first, const struct vt_alloc *b)
{
	uint32_t stack = vt_alloc_fill_stack(m, b);
	struct vt_finding *f = finding_of_stack(out, first, b->proc, b->device, stack,
	                                        vt_model_copies(m, b)->t_first_h2d);
	return f ? f : finding_of_stack(out, first, b->proc, b->device, stack, VT_T_NEVER);
}

/* The finding of the big array allocated right before or after allocation
 * idx of its process, on its device: `device_put(x); device_put(y)`, one
 * conversion after the other, before training or between its steps (a
 * continual trainer's next day of data). A big array's upload can take
 * longer than half a step, so time alone would miss the label array that
 * follows it. */
static struct vt_finding *next_to(const struct vt_model *m, const struct vt_findings_scan *ds,
                                  struct vt_findings *out, uint32_t first, uint32_t idx)
{
	const struct vt_alloc *a = &m->allocs[idx];
	const struct vt_proc *p = &m->procs[a->proc];
	/* with a step begun after it: a batch made right after the data, in a
	 * step the job did not finish (an out-of-memory death), is no label
	 * array */
	if (p->nsteps < 3 || a->t_alloc >= p->step_t[p->nsteps - 1])
		return NULL;
	for (int d = -1; d <= 1; d += 2) {
		uint32_t j = idx + (uint32_t)d;
		if ((d < 0 && idx == p->alloc_begin) || j >= p->alloc_end)
			continue;
		const struct vt_alloc *b = &m->allocs[j];
		if (b->category != VT_CAT_DATASET || b->confidence < VT_CONFIDENT ||
		    b->device != a->device || !vt_findings_big_enough(m, ds, b->device, b->bytes))
			continue;
		struct vt_finding *f = finding_of_array(m, out, first, b);
		if (f && vt_fold_made_between(m, a->proc, a->seq_alloc, b->seq_alloc))
			vt_fold_set_inexact(m, "a dataset's neighbour may be a folded allocation");
		if (f)
			return f;
	}
	return NULL;
}

/* The finding a small dataset array a joins, or NULL: the one on its
 * device uploaded through the same call path (the conversion that made x
 * made y), the very stack first. Its caller then tries next_to. Time alone
 * ties nothing: what a job uploads right after its data may be a model it
 * loads to score it. */
static struct vt_finding *companion_of(const struct vt_model *m, struct vt_findings *out,
                                       uint32_t first, const struct vt_alloc *a)
{
	uint32_t stack = vt_alloc_fill_stack(m, a);
	struct vt_finding *f = finding_of_stack(out, first, a->proc, a->device, stack, VT_T_NEVER);
	for (uint32_t i = first; !f && i < out->n; i++) {
		struct vt_finding *g = &out->v[i];
		if (g->kind == VT_FINDING_WHOLE_DATASET && g->proc == a->proc &&
		    vt_finding_on_device(g, a->device) &&
		    vt_same_call_path(m, a->proc, g->stack_id, stack, vt_finding_bytes_max(g),
		                      a->bytes))
			f = g;
	}
	return f;
}

/* An upload that opened or joined a whole-dataset finding (a tensor, or a
 * run of a pool region's ranges): the companion pass takes the next upload
 * on its device after it. */
struct noted_run {
	uint32_t alloc;   /* the tensor or the region */
	uint64_t lo, hi;  /* offsets in it */
	uint64_t t_last;  /* the last copy's time */
	uint32_t finding; /* index in out->v */
};

struct noted_runs {
	struct noted_run *v;
	uint32_t n, cap;
};

static void note_run(struct noted_runs *runs, uint32_t alloc, uint64_t lo, uint64_t hi,
                     uint64_t t_last, uint32_t finding)
{
	if (runs->n == runs->cap) {
		runs->cap = runs->cap ? runs->cap * 2 : 16;
		struct noted_run *v = realloc(runs->v, runs->cap * sizeof *v);
		if (!v)
			vt_nomem();
		runs->v = v;
	}
	runs->v[runs->n++] = (struct noted_run){alloc, lo, hi, t_last, finding};
}

/* Whether pool range r was filled whole twice, in a process with no steps
 * or at least four steps for each fill: the same array converted again by
 * a second call (Keras `evaluate` then `predict`, cuML `fit` then
 * `kneighbors`, each converting the numpy array it is given), its new
 * tensor placed where the first one was freed. A batch slot is refilled
 * every step; a staging buffer of a job with no steps more than twice. */
static int converted_again(const struct vt_proc *p, const struct vt_copy_range *r)
{
	return r->copies == 2 && r->total_bytes == 2 * r->bytes &&
	       (p->nsteps == 0 || p->nsteps >= 8);
}

/* a's host copies, when they all landed on one range that was converted
 * again (converted_again): that range, else NULL. */
static const struct vt_copy_range *converted_again_whole(const struct vt_model *m,
                                                         const struct vt_alloc *a)
{
	const struct vt_copy_range *r = vt_alloc_only_range(m, a);
	return r && converted_again(&m->procs[a->proc], r) ? r : NULL;
}

/* The small confident dataset arrays of one call path on one device: a
 * table uploaded column by column (cuDF's from_pandas), each column too
 * small to be flagged alone, the table as large as any dataset. */
struct column_site {
	uint64_t key; /* proc << 40 | device << 32 | stack */
	uint64_t bytes;
	uint64_t last_upload, first_free; /* alive together: first_free > last_upload */
	uint32_t opener;                  /* the first column's allocation */
	UT_hash_handle hh;
};

static int small_data(const struct vt_model *m, const struct vt_findings_scan *ds,
                      const struct vt_alloc *a)
{
	return a->category == VT_CAT_DATASET && a->confidence >= VT_CONFIDENT &&
	       !vt_findings_big_enough(m, ds, a->device, a->bytes) &&
	       !vt_findings_not_data(ds, a->proc, vt_alloc_fill_stack(m, a));
}

/* Open a finding with the first column of each call path whose columns,
 * alive together, are as large as a dataset and joined no finding yet;
 * the companion pass adds the other columns (same call path). -> the
 * allocations that opened one (their caller skips them), or NULL. */
static uint8_t *tables_by_column(const struct vt_model *m, const struct vt_findings_scan *ds,
                                 struct vt_findings *out, uint32_t first)
{
	struct column_site *sites = NULL, *s, *tmp;
	for (uint32_t k = 0; k < ds->n; k++) {
		const struct vt_alloc *a = &m->allocs[ds->idx[k]];
		if (!small_data(m, ds, a))
			continue;
		uint64_t key =
		    (uint64_t)a->proc << 40 | (uint64_t)a->device << 32 | vt_alloc_fill_stack(m, a);
		HASH_FIND(hh, sites, &key, sizeof key, s);
		if (!s) {
			s = calloc(1, sizeof *s);
			if (!s)
				vt_nomem();
			*s = (struct column_site){
			    .key = key, .first_free = VT_T_NEVER, .opener = ds->idx[k]};
			HASH_ADD(hh, sites, key, sizeof s->key, s);
		}
		uint64_t t = vt_model_copies(m, a)->t_first_h2d;
		s->bytes += a->bytes;
		s->last_upload = t > s->last_upload ? t : s->last_upload;
		s->first_free = a->t_free < s->first_free ? a->t_free : s->first_free;
	}
	uint8_t *opened = NULL;
	HASH_ITER(hh, sites, s, tmp)
	{
		const struct vt_alloc *a = &m->allocs[s->opener];
		uint32_t stack = (uint32_t)s->key;
		if (s->first_free > s->last_upload &&
		    vt_findings_big_enough(m, ds, a->device, s->bytes) &&
		    !finding_of_stack(out, first, a->proc, a->device, stack, VT_T_NEVER)) {
			const struct vt_alloc_copies *c = vt_model_copies(m, a);
			note_dataset(m, out, first, a->proc, stack, a->device, a->bytes,
			             c->h2d_copies, c->t_first_h2d, a->confidence);
			if (!opened && !(opened = calloc(m->nallocs, 1)))
				vt_nomem();
			opened[s->opener] = 1;
		}
		HASH_DEL(sites, s);
		free(s);
	}
	return opened;
}

static void datasets_per_tensor(const struct vt_model *m, const struct vt_findings_scan *ds,
                                struct vt_findings *out, uint32_t first, struct noted_runs *runs)
{
	for (uint32_t k = 0; k < ds->n; k++) {
		const struct vt_alloc *a = &m->allocs[ds->idx[k]];
		if (a->category != VT_CAT_DATASET || a->confidence < VT_CONFIDENT ||
		    !vt_findings_big_enough(m, ds, a->device, a->bytes))
			continue;
		const struct vt_alloc_copies *c = vt_model_copies(m, a);
		uint32_t stack = vt_alloc_fill_stack(m, a);
		if (vt_findings_not_data(ds, a->proc, stack))
			continue;
		/* the data's bytes: an allocator's region holding it may be larger */
		uint64_t bytes = vt_alloc_data_bytes(m, a);
		const struct vt_copy_range *again = converted_again_whole(m, a);
		uint32_t f = note_dataset(m, out, first, a->proc, stack, a->device, bytes,
		                          again ? 1 : c->h2d_copies, c->t_first_h2d, a->confidence);
		note_run(runs, ds->idx[k], 0, a->bytes, again ? c->t_first_h2d : c->t_last_h2d, f);
		if (again) { /* the same mistake made twice: two uploads to move off */
			f = note_dataset(m, out, first, a->proc, stack, a->device, bytes, 1,
			                 again->t_last, a->confidence);
			note_run(runs, ds->idx[k], 0, a->bytes, again->t_last, f);
		}
	}
	/* The arrays that come with a big one (its labels y beside x, a
	 * validation pair) are the same mistake, however small: one finding
	 * with all of them, so that its bytes are what moving the data off the
	 * device frees. Only confident dataset verdicts uploaded through the
	 * same call path (the conversion that made x made y), never alone: a
	 * batch buffer of a step cut short is no companion. */
	uint8_t *opened = tables_by_column(m, ds, out, first);
	for (uint32_t k = 0; k < ds->n; k++) {
		const struct vt_alloc *a = &m->allocs[ds->idx[k]];
		if (a->category != VT_CAT_DATASET || a->confidence < VT_CONFIDENT ||
		    vt_findings_big_enough(m, ds, a->device, a->bytes) ||
		    (opened && opened[ds->idx[k]]))
			continue;
		const struct vt_alloc_copies *c = vt_model_copies(m, a);
		struct vt_finding *f = companion_of(m, out, first, a);
		if (!f)
			f = next_to(m, ds, out, first, ds->idx[k]);
		if (!f)
			continue;
		vt_finding_add_device(f, a->device, a->bytes);
		f->copies += c->h2d_copies;
	}
	free(opened);
}

/* In a pool: contiguous ranges copied once each, from one site, close in
 * time, are one upload; a big one is a dataset, unless its site made
 * VT_LOADER_TENSORS uploads or more (a model loaded tensor by tensor, a
 * batch feeder): then each range alone, never a run (a loop loading a
 * model's tensors side by side), and only one that is most of what its site
 * filled (upload_sites.h). */
/* Whether a pool region of a's process and device has a range of `bytes`
 * refilled from the host three times or more: a batch slot. A range of
 * that size filled once is a batch too (the first one, placed before the
 * loop settles into its slots), not an array far larger than a batch. */
static int batch_slot_size(const struct vt_model *m, const struct vt_alloc *a, uint64_t bytes)
{
	const struct vt_proc *p = &m->procs[a->proc];
	for (uint32_t i = p->alloc_begin; i < p->alloc_end; i++) {
		const struct vt_alloc *b = &m->allocs[i];
		if (b->device != a->device || !vt_alloc_is_pool(b) ||
		    !(b->flags & VT_AF_PARTIAL_COPIES))
			continue;
		uint32_t n;
		const struct vt_copy_range *r = vt_model_ranges(m, i, &n);
		for (uint32_t k = 0; k < n; k++)
			if (r[k].bytes == bytes && r[k].copies >= 3)
				return 1;
	}
	return 0;
}

static void datasets_in_pool(const struct vt_model *m, const struct vt_findings_scan *ds,
                             struct vt_findings *out, uint32_t first, uint32_t idx,
                             const struct vt_upload_sites *sites, struct noted_runs *runs)
{
	const struct vt_alloc *a = &m->allocs[idx];
	const struct vt_proc *p = &m->procs[a->proc];
	uint32_t n;
	const struct vt_copy_range *r = vt_model_ranges(m, idx, &n);
	uint64_t window = p->step_period_ns ? p->step_period_ns / 2 : UINT64_MAX;
	for (uint32_t i = 0; i < n;) {
		uint32_t j = i + 1;
		uint64_t bytes = r[i].bytes;
		int many = vt_upload_site_tensors(sites, r[i].stack_id) >= VT_LOADER_TENSORS;
		if (r[i].copies == 1 && !batch_slot_size(m, a, r[i].bytes) &&
		    (!many || !vt_upload_site_is_loader(sites, r[i].stack_id, r[i].bytes))) {
			while (!many && j < n && r[j].copies == 1 &&
			       r[j].stack_id == r[i].stack_id &&
			       r[j].offset == r[j - 1].offset + r[j - 1].bytes &&
			       r[j].t_first - r[i].t_first < window) {
				bytes += r[j].bytes;
				j++;
			}
			if (vt_findings_big_enough(m, ds, a->device, bytes) &&
			    !vt_findings_not_data(ds, a->proc, r[i].stack_id)) {
				uint32_t f =
				    note_dataset(m, out, first, a->proc, r[i].stack_id, a->device,
				                 bytes, j - i, r[i].t_first, 70);
				note_run(runs, idx, r[i].offset, r[j - 1].offset + r[j - 1].bytes,
				         r[j - 1].t_first, f);
			}
		} else if (converted_again(p, &r[i]) && !many &&
		           vt_findings_big_enough(m, ds, a->device, bytes) &&
		           !vt_findings_not_data(ds, a->proc, r[i].stack_id)) {
			uint32_t f = note_dataset(m, out, first, a->proc, r[i].stack_id, a->device,
			                          bytes, 1, r[i].t_first, 70);
			note_run(runs, idx, r[i].offset, r[i].offset + r[i].bytes, r[i].t_first, f);
			f = note_dataset(m, out, first, a->proc, r[i].stack_id, a->device, bytes, 1,
			                 r[i].t_last, 70);
			note_run(runs, idx, r[i].offset, r[i].offset + r[i].bytes, r[i].t_last, f);
		}
		i = j;
	}
}

static int in_noted_run(const struct noted_runs *runs, uint32_t alloc, uint64_t offset)
{
	for (uint32_t k = 0; k < runs->n; k++)
		if (runs->v[k].alloc == alloc && offset >= runs->v[k].lo && offset < runs->v[k].hi)
			return 1;
	return 0;
}

/* The first copies of a process's uploads (a tensor's, or a pool range's),
 * in time order: what "nothing else uploaded between" reads, built once a
 * process, not walked again for each candidate. */
struct upload_at {
	uint64_t t, offset;
	uint32_t alloc;
	uint8_t device;
};

struct uploads {
	struct upload_at *v;
	uint32_t n, cap;
};

static void add_upload(struct uploads *u, uint64_t t, uint32_t alloc, uint64_t offset,
                       uint8_t device)
{
	if (u->n == u->cap) {
		u->cap = u->cap ? u->cap * 2 : 64;
		struct upload_at *v = realloc(u->v, u->cap * sizeof *v);
		if (!v)
			vt_nomem();
		u->v = v;
	}
	u->v[u->n++] = (struct upload_at){t, offset, alloc, device};
}

static int by_time(const void *x, const void *y)
{
	uint64_t a = ((const struct upload_at *)x)->t, b = ((const struct upload_at *)y)->t;
	return a < b ? -1 : a > b;
}

static struct uploads uploads_of(const struct vt_model *m, uint32_t proc)
{
	struct uploads u = {0};
	const struct vt_proc *p = &m->procs[proc];
	for (uint32_t i = p->alloc_begin; i < p->alloc_end; i++) {
		const struct vt_alloc *a = &m->allocs[i];
		if (!(a->flags & VT_AF_PARTIAL_COPIES)) {
			uint64_t t = vt_model_copies(m, a)->t_first_h2d;
			if (t != VT_T_NEVER)
				add_upload(&u, t, i, 0, a->device);
			continue;
		}
		uint32_t n;
		const struct vt_copy_range *r = vt_model_ranges(m, i, &n);
		for (uint32_t k = 0; k < n; k++)
			add_upload(&u, r[k].t_first, i, r[k].offset, a->device);
	}
	if (u.n > 1)
		qsort(u.v, u.n, sizeof *u.v, by_time);
	return u;
}

/* Whether an upload to device dev, other than one of the noted runs, was
 * first copied at a time in (t0, t1). */
static int upload_between(const struct uploads *u, const struct noted_runs *runs, uint8_t dev,
                          uint64_t t0, uint64_t t1)
{
	uint32_t lo = 0, hi = u->n; /* the first upload after t0 */
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		if (u->v[mid].t <= t0)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (uint32_t i = lo; i < u->n && u->v[i].t < t1; i++)
		if (u->v[i].device == dev && !in_noted_run(runs, u->v[i].alloc, u->v[i].offset))
			return 1;
	return 0;
}

/* The finding uploaded through range r's call path whose upload r
 * directly follows on its device (nothing else uploaded between), or -1:
 * x and y converted one after the other by one conversion, y placed
 * wherever the allocator had room. The call path is what ties them: the
 * next upload alone may be anything (a model loaded right after the data
 * it will score lands right after it). */
static int64_t pool_companion_of(const struct vt_model *m, const struct uploads *u,
                                 const struct vt_findings *out, const struct noted_runs *runs,
                                 const struct vt_alloc *a, const struct vt_copy_range *r)
{
	int64_t best = -1;
	uint64_t best_t = 0;
	for (uint32_t k = 0; k < runs->n; k++) {
		const struct noted_run *run = &runs->v[k];
		const struct vt_finding *f = &out->v[run->finding];
		if (f->proc != a->proc || !vt_finding_on_device(f, a->device) ||
		    run->t_last >= r->t_first ||
		    !vt_same_call_path(m, a->proc, f->stack_id, r->stack_id,
		                       vt_finding_bytes_max(f), r->bytes))
			continue;
		if (best < 0 || run->t_last > best_t) {
			best = run->finding;
			best_t = run->t_last;
		}
	}
	if (best >= 0 && upload_between(u, runs, a->device, best_t, r->t_first))
		return -1;
	return best;
}

/* A pool range that may be a dataset's companion, for the time order. */
struct candidate {
	uint32_t region;
	const struct vt_copy_range *r;
};

static int by_first_copy(const void *x, const void *y)
{
	uint64_t a = ((const struct candidate *)x)->r->t_first;
	uint64_t b = ((const struct candidate *)y)->r->t_first;
	return a < b ? -1 : a > b;
}

/* The pool ranges of process proc that may join a finding: copied once
 * (a batch slot is refilled: under XLA or a helper that makes every copy,
 * batches come through the data's call path too), from a site that never
 * had VT_MODEL_TENSORS alive at once (a model loader), not a finding's
 * own (one as large as a dataset, from a site that filled several, is not
 * flagged alone); in the order of their first copy. */
static struct candidate *companion_candidates(const struct vt_model *m,
                                              const struct vt_findings_scan *ds, uint32_t proc,
                                              const struct vt_upload_sites *sites,
                                              const struct noted_runs *runs, uint32_t *count)
{
	struct candidate *v = NULL;
	uint32_t n = 0, cap = 0;
	for (uint32_t k = 0; k < ds->n; k++) {
		uint32_t region = ds->idx[k], nr;
		const struct vt_alloc *a = &m->allocs[region];
		if (!vt_alloc_is_pool(a) || a->proc != proc)
			continue;
		const struct vt_copy_range *r = vt_model_ranges(m, region, &nr);
		for (uint32_t i = 0; i < nr; i++) {
			if (!r[i].stack_id ||   /* no call path: nothing ties it */
			    r[i].copies != 1 || /* refilled: a batch slot */
			    vt_upload_site_most_alive(sites, r[i].stack_id) >= VT_MODEL_TENSORS ||
			    in_noted_run(runs, region, r[i].offset))
				continue;
			if (n == cap) {
				cap = cap ? cap * 2 : 16;
				struct candidate *w = realloc(v, cap * sizeof *w);
				if (!w)
					vt_nomem();
				v = w;
			}
			v[n++] = (struct candidate){region, &r[i]};
		}
	}
	if (n > 1)
		qsort(v, n, sizeof *v, by_first_copy);
	*count = n;
	return v;
}

/* The arrays uploaded with a dataset into a pool (its labels, converted
 * right after it by the same call; x, y and a teacher's logits one after
 * the other): one finding with them, as datasets_per_tensor does for
 * tensors. Each the next upload on the device after the dataset's or
 * after a companion's, through the dataset's call path, from a site that
 * is no model loader. A label array may land in any region of the
 * process, a caching segment too. */
static void pool_companions(const struct vt_model *m, const struct vt_findings_scan *ds,
                            struct vt_findings *out, uint32_t proc,
                            const struct vt_upload_sites *sites, struct noted_runs *runs)
{
	uint32_t n;
	struct candidate *v = companion_candidates(m, ds, proc, sites, runs, &n);
	struct uploads u = n ? uploads_of(m, proc) : (struct uploads){0};
	for (uint32_t i = 0; i < n; i++) {
		const struct vt_alloc *a = &m->allocs[v[i].region];
		const struct vt_copy_range *r = v[i].r;
		int64_t f = pool_companion_of(m, &u, out, runs, a, r);
		if (f < 0)
			continue;
		vt_finding_add_device(&out->v[f], a->device, r->bytes);
		out->v[f].copies++;
		note_run(runs, v[i].region, r->offset, r->offset + r->bytes, r->t_first,
		         (uint32_t)f);
	}
	free(u.v);
	free(v);
}

static int pool_region(const struct vt_model *m, uint32_t i, void *arg)
{
	(void)arg;
	return m->allocs[i].category == VT_CAT_POOL;
}

/* What the upload sites count here: every allocation filled from the host
 * outside a pool (weights, datasets, batches alike: a site that filled
 * several is no one-off upload), and every copy into a pool region. */
static int uploaded_tensor(const struct vt_model *m, uint32_t i, void *arg)
{
	(void)arg;
	return m->allocs[i].category != VT_CAT_POOL && vt_model_copies(m, &m->allocs[i])->h2d_bytes;
}

/* The sites of process pi. A folding model's folded uploads are tensors
 * of their sites too, alive with others in ways the groups do not keep:
 * the full model answers. */
static struct vt_upload_sites *sites_of(const struct vt_model *m, uint32_t pi)
{
	if (vt_fold_uploads(m, pi))
		vt_fold_set_inexact(m, "upload sites of a pool's process count folded uploads");
	return vt_upload_sites_count(m, pi, uploaded_tensor, pool_region, NULL);
}

static int has_pool(const struct vt_model *m, const struct vt_findings_scan *ds, uint32_t pi)
{
	for (uint32_t k = 0; k < ds->n; k++)
		if (vt_alloc_is_pool(&m->allocs[ds->idx[k]]) && m->allocs[ds->idx[k]].proc == pi)
			return 1;
	return 0;
}

void vt_findings_datasets(const struct vt_model *m, const struct vt_findings_scan *ds,
                          struct vt_findings *out)
{
	uint32_t first = out->n;
	struct noted_runs runs = {0};
	datasets_per_tensor(m, ds, out, first, &runs);
	for (uint32_t pi = 0; pi < m->nprocs; pi++) {
		struct vt_upload_sites *sites = NULL;
		for (uint32_t k = 0; k < ds->n; k++) {
			const struct vt_alloc *a = &m->allocs[ds->idx[k]];
			/* a caching segment holds tensors of up to 10 MiB, each as
			 * the allocator packed it: an upload into it is one tensor
			 * (a model's buffer), and an array larger than that has a
			 * segment of its own, which the per-tensor rules read */
			if (!vt_alloc_is_pool(a) || a->proc != pi || vt_alloc_is_caching_segment(a))
				continue;
			if (!sites)
				sites = sites_of(m, pi);
			datasets_in_pool(m, ds, out, first, ds->idx[k], sites, &runs);
		}
		if (runs.n && has_pool(m, ds, pi)) { /* else no range to join a finding */
			if (!sites)
				sites = sites_of(m, pi);
			pool_companions(m, ds, out, pi, sites, &runs);
		}
		vt_upload_sites_free(sites);
	}
	free(runs.v);
}
