/* The folding model (see model_fold.h): the full model's consumer
 * (model_history.c) for every record it keeps, and the groups and
 * (size, device) counters of the allocations it folds. */
#include "model_fold.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "model_consumer.h"
#include "model_history.h"
#include "model_internal.h"

#define RECENT_STEPS 8
#define OLD_STEP (-2) /* before the recent steps, after the first */

/* One process's replay state. */
struct fold_proc {
	/* its step markers so far, the times of the first and of the last
	 * RECENT_STEPS (step k at recent[k % RECENT_STEPS]): a folded
	 * allocation is made and freed in the last two, and one made earlier
	 * is kept whole, so the steps before need no time of their own */
	uint32_t nsteps;
	uint64_t first_t, recent[RECENT_STEPS];
	uint64_t last_t;         /* latest allocation or free time seen */
	int last_born;           /* step of its latest allocation */
	int inexact;             /* a step marker came late: no more folding */
	uint64_t folded;         /* allocations folded */
	uint64_t seq_lo, seq_hi; /* the first and last made of them (seq) */
	/* per device, its latest failed allocation or cuMemGetInfo reading, +1:
	 * the OOM post-mortem and the used-memory accounting read what was
	 * live then */
	uint64_t pin_seq[VT_MAX_DEVICES];
	uint8_t charged[VT_MAX_DEVICES]; /* it charged the device */
	/* frees of allocations made from the era on and filled from the host:
	 * what the bound on how many were alive at once adds (fold_dev.up_high) */
	uint32_t up_frees;
	struct vt_fold_dev *devs[VT_MAX_DEVICES]; /* made on the first fold there */
};

struct size_entry {
	struct {
		uint64_t bytes;
		uint32_t proc, device;
	} key;
	struct vt_fold_size s;
	UT_hash_handle hh;
};

struct group_entry {
	/* stack_id, proc and api .. kind in the order of struct vt_alloc's:
	 * group_is compares each run of them in one load */
	struct {
		uint64_t bytes;
		uint32_t stack_id, proc, place, h2d_stack;
		uint8_t api, rt_api, device, kind, span, pad[3];
	} key;
	uint32_t index;           /* in vt_fold.groups */
	struct size_entry *sizes; /* its (size, device)'s counters: no second lookup */
	UT_hash_handle hh;
};

/* Slots of the groups' direct-mapped cache: with 256, one fold in eight
 * missed where a loop kept 32 groups busy (two that share a slot evict
 * each other step after step). */
#define GROUP_CACHE 4096

struct vt_fold {
	struct fold_proc **procs;
	uint32_t nprocs;
	struct fold_proc *last; /* procs[last_proc] */
	uint32_t last_proc;
	struct size_entry *sizes; /* uthash */
	struct size_entry *size_cache[256];
	struct group_entry *group_hash;
	struct group_entry *group_cache[GROUP_CACHE];
	struct vt_fold_group *groups;
	uint32_t ngroups, cap_groups;
	uint32_t *free_records; /* folded records to reuse */
	uint32_t nfree, cap_free;
	uint64_t *order;   /* per record: when it was made, to sort the kept ones back */
	uint32_t *place;   /* per record: its place in its step (VT_NO_INDEX: before the era) */
	uint32_t *up_mark; /* per record of the era: its process's up_frees when it was made */
	uint32_t cap_side;
	uint64_t made;
	uint32_t keep_steps;
	const char *why; /* inexact: why */
	uint32_t high;   /* records held at most */
};

static const struct vt_replay_consumer *full(void)
{
	return vt_model_history_consumer();
}

int vt_model_is_folding(const struct vt_model *m)
{
	return m->fold != NULL;
}

/* ---- per process -------------------------------------------------------- */

static __attribute__((noinline)) struct fold_proc *proc_of_slow(struct vt_fold *f, uint32_t proc)
{
	if (proc >= f->nprocs) {
		struct fold_proc **v = realloc(f->procs, (proc + 1) * sizeof *v);
		if (!v)
			vt_nomem();
		memset(v + f->nprocs, 0, (proc + 1 - f->nprocs) * sizeof *v);
		f->procs = v;
		f->nprocs = proc + 1;
	}
	if (!f->procs[proc]) {
		f->procs[proc] = calloc(1, sizeof *f->procs[proc]);
		if (!f->procs[proc])
			vt_nomem();
		f->procs[proc]->last_born = -1;
	}
	f->last_proc = proc;
	return f->last = f->procs[proc];
}

/* The replay asks for one process many times an event. */
static inline struct fold_proc *proc_of(struct vt_fold *f, uint32_t proc)
{
	return f->last && f->last_proc == proc ? f->last : proc_of_slow(f, proc);
}

static inline uint64_t step_time(const struct fold_proc *fp, uint32_t k)
{
	return fp->recent[k % RECENT_STEPS];
}

/* The step of time t, an earlier one than the last two: one of the recent
 * steps, else OLD_STEP. */
static __attribute__((noinline)) int step_before(const struct fold_proc *fp, uint64_t t)
{
	uint32_t n = fp->nsteps, oldest = n > RECENT_STEPS ? n - RECENT_STEPS : 0;
	for (uint32_t k = n - 2; k-- > oldest;)
		if (t >= step_time(fp, k))
			return (int)k;
	return OLD_STEP;
}

/* The step of time t from the markers seen so far (vt_step_of's rule),
 * or OLD_STEP: before the recent steps (too early for a folded allocation
 * to be made in, and an allocation made now at such a time is time gone
 * back across a step: no more folding). */
static inline int step_at(const struct fold_proc *fp, uint64_t t)
{
	uint32_t n = fp->nsteps;
	if (!n || t < fp->first_t)
		return -1;
	/* nearly every event is of the latest step or the one before: the
	 * search per allocation and free was most of the folding's time */
	if (t >= step_time(fp, n - 1))
		return (int)n - 1;
	if (n >= 2 && t >= step_time(fp, n - 2))
		return (int)n - 2;
	return step_before(fp, t);
}

/* ---- per process and device: the steps of its folded allocations ---------- */

static struct vt_fold_dev *dev_of(struct fold_proc *fp, uint8_t device)
{
	struct vt_fold_dev *d = fp->devs[device];
	if (d)
		return d;
	if (!(d = calloc(1, sizeof *d)))
		vt_nomem();
	d->top = -1;
	for (int k = 0; k < VT_FOLD_OPEN_STEPS; k++)
		d->open[k].step = -1;
	return fp->devs[device] = d;
}

/* Open step s of d gets no more folded allocations: into its runs of steps
 * and its upload counts. Steps close in their order. */
static void close_dev_step(struct vt_fold_dev *d, int s)
{
	int k = s % VT_FOLD_OPEN_STEPS;
	if (s < 0 || d->open[k].step != s || !d->open[k].any)
		return;
	if (d->nruns && d->runs[d->nruns - 1].last + 1 == s)
		d->runs[d->nruns - 1].last = s;
	else if (d->nruns < VT_FOLD_RUNS) {
		d->runs[d->nruns].first = d->runs[d->nruns].last = s;
		d->nruns++;
	} else
		d->lost = 1;
	if (d->open[k].uploads)
		vt_uploads_count(&d->up, d->open[k].uploads, d->open[k].bytes);
}

/* A folded allocation made in step s (an upload of `bytes` or not).
 * Allocations are folded when freed, so a step stays open while the next
 * ones run: the last VT_FOLD_OPEN_STEPS steps are. */
static void fold_in_step(struct vt_fold_dev *d, int s, int upload, uint64_t bytes)
{
	if (s > d->top) {
		int last_closed = s - VT_FOLD_OPEN_STEPS < d->top ? s - VT_FOLD_OPEN_STEPS : d->top;
		for (int t = d->top - VT_FOLD_OPEN_STEPS + 1; t <= last_closed; t++)
			close_dev_step(d, t);
		int first_new = d->top + 1 > s - VT_FOLD_OPEN_STEPS + 1
		                    ? d->top + 1
		                    : s - VT_FOLD_OPEN_STEPS + 1;
		for (int t = first_new; t <= s; t++) {
			memset(&d->open[t % VT_FOLD_OPEN_STEPS], 0, sizeof d->open[0]);
			d->open[t % VT_FOLD_OPEN_STEPS].step = t;
		}
		d->top = s;
	}
	int k = s % VT_FOLD_OPEN_STEPS;
	if (d->open[k].step != s) { /* closed already */
		d->lost = 1;
		return;
	}
	d->open[k].any++;
	d->open[k].uploads += upload != 0;
	d->open[k].bytes += upload ? bytes : 0;
}

static void close_dev(struct vt_fold_dev *d)
{
	for (int t = d->top - VT_FOLD_OPEN_STEPS + 1; t <= d->top; t++)
		close_dev_step(d, t);
}

/* ---- (size, device) counters --------------------------------------------- */

static size_t size_cache_slot(uint32_t proc, uint64_t bytes, uint8_t device)
{
	uint64_t h =
	    (bytes ^ ((uint64_t)device << 56) ^ ((uint64_t)proc << 40)) * 0x9e3779b97f4a7c15ull;
	return (size_t)(h >> 56);
}

/* The hash behind the cache, out of line: the inline hit path stays free of
 * its stack frame and saved registers (a fifth of the folding's time). */
static __attribute__((noinline)) struct size_entry *
size_entry_slow(struct vt_fold *f, uint32_t proc, uint64_t bytes, uint8_t device)
{
	struct size_entry probe, *e;
	memset(&probe.key, 0, sizeof probe.key);
	probe.key.bytes = bytes;
	probe.key.proc = proc;
	probe.key.device = device;
	HASH_FIND(hh, f->sizes, &probe.key, sizeof probe.key, e);
	if (!e) {
		e = calloc(1, sizeof *e);
		if (!e)
			vt_nomem();
		e->key = probe.key;
		e->s = (struct vt_fold_size){.bytes = bytes,
		                             .proc = proc,
		                             .device = device,
		                             .last_step = -2,
		                             .era_step = -2};
		HASH_ADD(hh, f->sizes, key, sizeof e->key, e);
	}
	return f->size_cache[size_cache_slot(proc, bytes, device)] = e;
}

static inline struct size_entry *size_entry(struct vt_fold *f, uint32_t proc, uint64_t bytes,
                                            uint8_t device)
{
	struct size_entry *e = f->size_cache[size_cache_slot(proc, bytes, device)];
	if (e && e->key.bytes == bytes && e->key.proc == proc && e->key.device == device)
		return e;
	return size_entry_slow(f, proc, bytes, device);
}

/* The era's step just left made in_step of this size: count it, as the
 * classifier's close_step does (the first VT_FOLD_HIST values). */
static void close_era_step(struct vt_fold_size *s)
{
	if (!s->in_step)
		return;
	uint32_t i = 0;
	while (i < s->nhist && s->hist[i].count != s->in_step)
		i++;
	if (i == s->nhist && s->nhist < VT_FOLD_HIST)
		s->hist[s->nhist++].count = s->in_step;
	if (i < s->nhist)
		s->hist[i].steps++;
	s->in_step = 0;
}

static void grow_side(struct vt_fold *f, uint32_t idx)
{
	if (idx < f->cap_side)
		return;
	uint32_t cap = f->cap_side ? f->cap_side : 1024;
	while (cap <= idx)
		cap *= 2;
	uint64_t *o = realloc(f->order, cap * sizeof *o);
	if (o)
		f->order = o;
	uint32_t *p = realloc(f->place, cap * sizeof *p);
	if (p)
		f->place = p;
	uint32_t *u = realloc(f->up_mark, cap * sizeof *u);
	if (!o || !p || !u)
		vt_nomem();
	f->up_mark = u;
	f->cap_side = cap;
}

/* Record idx, just made whole by process fp: count it as count_keys would. */
static void count_record(struct vt_model *m, struct fold_proc *fp, uint32_t idx)
{
	struct vt_fold *f = m->fold;
	const struct vt_alloc *a = &m->allocs[idx];
	grow_side(f, idx);
	f->order[idx] = f->made++;
	f->place[idx] = VT_NO_INDEX;
	int born = step_at(fp, a->t_alloc);
	if (born < fp->last_born)
		fp->inexact = 1; /* time went back across a step: the cursor's case */
	fp->last_born = born;
	if (a->t_alloc > fp->last_t)
		fp->last_t = a->t_alloc;
	struct vt_fold_size *s = &size_entry(f, a->proc, a->bytes, a->device)->s;
	s->count++;
	if (born >= 0 && born != s->last_step) {
		s->steps_seen++;
		s->last_step = born;
	}
	if (born < (int)f->keep_steps)
		return;
	if (born != s->era_step) {
		close_era_step(s);
		s->era_step = born;
	}
	f->place[idx] = s->in_step++;
	f->up_mark[idx] = fp->up_frees;
	s->era_allocs++;
}

/* ---- folding -------------------------------------------------------------- */

/* Is e the group of allocation a at this place and span? Field by field:
 * the probe key a hash lookup needs is built only on a miss. */
_Static_assert(offsetof(struct vt_alloc, proc) == offsetof(struct vt_alloc, stack_id) + 4 &&
                   offsetof(struct vt_alloc, rt_api) == offsetof(struct vt_alloc, api) + 1 &&
                   offsetof(struct vt_alloc, device) == offsetof(struct vt_alloc, api) + 2 &&
                   offsetof(struct vt_alloc, kind) == offsetof(struct vt_alloc, api) + 3,
               "group_is loads the record's stack_id..proc and api..kind whole");

static inline int group_is(const struct group_entry *e, const struct vt_alloc *a, uint32_t place,
                           int span, uint32_t h2d_stack)
{
	uint64_t key_ids, ids;
	uint32_t key_call, call;
	memcpy(&key_ids, &e->key.stack_id, sizeof key_ids);
	memcpy(&ids, &a->stack_id, sizeof ids);
	memcpy(&key_call, &e->key.api, sizeof key_call);
	memcpy(&call, &a->api, sizeof call);
	return e->key.bytes == a->bytes && key_ids == ids && key_call == call &&
	       e->key.place == place && e->key.span == span && e->key.h2d_stack == h2d_stack;
}

/* The group from the hash, made when new: out of line, as the cache
 * before it answers nearly every time. */
static __attribute__((noinline)) struct group_entry *group_slow(struct vt_fold *f,
                                                                const struct vt_alloc *a,
                                                                uint32_t place, int span,
                                                                uint32_t h2d_stack)
{
	struct group_entry probe, *e;
	memset(&probe.key, 0, sizeof probe.key);
	probe.key.bytes = a->bytes;
	probe.key.proc = a->proc;
	probe.key.stack_id = a->stack_id;
	probe.key.place = place;
	probe.key.device = a->device;
	probe.key.span = (uint8_t)span;
	probe.key.api = a->api;
	probe.key.rt_api = a->rt_api;
	probe.key.kind = a->kind;
	probe.key.h2d_stack = h2d_stack;
	HASH_FIND(hh, f->group_hash, &probe.key, sizeof probe.key, e);
	if (e)
		return e;
	e = calloc(1, sizeof *e);
	if (!e)
		vt_nomem();
	e->key = probe.key;
	e->sizes = size_entry(f, a->proc, a->bytes, a->device);
	f->groups = vt_model_grow(f->groups, &f->cap_groups, f->ngroups, sizeof *f->groups);
	e->index = f->ngroups++;
	f->groups[e->index] = (struct vt_fold_group){
	    .bytes = a->bytes,
	    .proc = a->proc,
	    .stack_id = a->stack_id,
	    .place = place,
	    .device = a->device,
	    .span = (uint8_t)span,
	    .api = a->api,
	    .rt_api = a->rt_api,
	    .kind = a->kind,
	    .category = VT_CAT_UNKNOWN,
	    .h2d_stack_id = h2d_stack,
	    .t_first_h2d = VT_T_NEVER,
	};
	HASH_ADD(hh, f->group_hash, key, sizeof e->key, e);
	return e;
}

/* Allocation a into its group; cp: an upload's copies (NULL: none). */
static struct group_entry *add_to_group(struct vt_fold *f, const struct vt_alloc *a, uint32_t place,
                                        int span, const struct vt_alloc_copies *cp)
{
	uint32_t h2d_stack = cp ? cp->h2d_stack_id : 0;
	/* a direct-mapped cache before the hash: a loop folds the same few
	 * groups over and over */
	uint64_t h = (a->bytes ^ ((uint64_t)a->stack_id << 32) ^ ((uint64_t)place << 48) ^
	              ((uint64_t)span << 62) ^ a->proc ^ ((uint64_t)h2d_stack << 20)) *
	             0x9e3779b97f4a7c15ull;
	struct group_entry **slot = &f->group_cache[h >> 52];
	struct group_entry *e = *slot;
	if (!e || !group_is(e, a, place, span, h2d_stack))
		e = *slot = group_slow(f, a, place, span, h2d_stack);
	struct vt_fold_group *g = &f->groups[e->index];
	g->count++;
	if (cp) {
		g->h2d_bytes += cp->h2d_bytes;
		g->h2d_copies += cp->h2d_copies;
		if (cp->t_first_h2d < g->t_first_h2d)
			g->t_first_h2d = cp->t_first_h2d;
	}
	return e;
}

/* The copies of allocation a when they make it an upload that folds: only
 * host-to-device copies, each of all of it (none partial: the flags say),
 * made after it; NULL otherwise. */
static const struct vt_alloc_copies *upload_of(const struct vt_model *m, const struct vt_alloc *a)
{
	const struct vt_alloc_copies *c = vt_model_copies(m, a);
	if (c->d2d_in_copies || c->d2d_out_copies || c->d2h_copies || c->maps || c->mapped_at ||
	    !c->h2d_copies || c->t_first_h2d < a->t_alloc)
		return NULL;
	return c;
}

/* Can freed allocation idx be folded (model_fold.h says when)? Its step,
 * span and, for an upload, copies (*cp, else NULL). */
static int foldable(const struct vt_model *m, const struct fold_proc *fp, uint32_t idx,
                    uint32_t keep, int *born, int *span, const struct vt_alloc_copies **cp)
{
	const struct vt_alloc *a = &m->allocs[idx];
	*cp = NULL;
	if (fp->inexact || !fp->nsteps || a->device == VT_DEVICE_UNKNOWN ||
	    m->fold->place[idx] == VT_NO_INDEX)
		return 0;
	if (a->flags != VT_AF_CHARGED &&
	    (a->flags != (VT_AF_CHARGED | VT_AF_COPIES) || !(*cp = upload_of(m, a))))
		return 0;
	*born = step_at(fp, a->t_alloc);
	int died = step_at(fp, a->t_free);
	if (*born < (int)keep || died < *born || died - *born > 1)
		return 0;
	/* live at the peak so far, at a failed allocation or at a reading of
	 * the device's memory: the report, the OOM post-mortem and the
	 * accounting read it */
	const struct vt_replay_peak *r = &m->replay_peaks[a->device];
	if (a->seq_alloc <= r->seq || a->seq_alloc < fp->pin_seq[a->device])
		return 0;
	*span = died - *born;
	return 1;
}

/* An allocation of the era filled from the host (counted alive from its
 * first copy, up_high) is freed. */
static void upload_freed(struct vt_model *m, struct fold_proc *fp, uint32_t idx)
{
	const struct vt_alloc *a = &m->allocs[idx];
	if (!(a->flags & VT_AF_COPIES) || a->device == VT_DEVICE_UNKNOWN ||
	    m->fold->place[idx] == VT_NO_INDEX || !vt_model_copies(m, a)->h2d_copies)
		return;
	dev_of(fp, a->device)->up_live--;
	fp->up_frees++;
}

/* Folded allocation idx (made in step born) counted where the rules read
 * it, and its record (and an upload's copies) given back for reuse. */
static void fold(struct vt_model *m, struct fold_proc *fp, uint32_t idx, int born, int span,
                 const struct vt_alloc_copies *cp)
{
	struct vt_fold *f = m->fold;
	const struct vt_alloc *a = &m->allocs[idx];
	struct vt_fold_size *s = &add_to_group(f, a, f->place[idx], span, cp)->sizes->s;
	s->folded++;
	s->uploads += cp != NULL;
	struct vt_fold_dev *d = dev_of(fp, a->device);
	if (s->torn_mark != d->allocs)
		s->torn = 0, s->torn_mark = d->allocs;
	s->torn += a->t_free > d->last_made_t;
	if (a->seq_alloc >= d->last_seq) {
		d->last_seq = a->seq_alloc;
		d->last_t_alloc = a->t_alloc;
	}
	if (a->t_free > d->last_t_free)
		d->last_t_free = a->t_free;
	if (cp && (!d->first_up_seq || a->seq_alloc < d->first_up_seq)) {
		d->first_up_seq = a->seq_alloc;
		d->first_up_t = a->t_alloc;
	}
	fold_in_step(d, born, cp != NULL, a->bytes);
	if (cp)
		vt_model_forget_copies(m, idx);
	if (!fp->folded++ || a->seq_alloc < fp->seq_lo)
		fp->seq_lo = a->seq_alloc;
	if (a->seq_alloc > fp->seq_hi)
		fp->seq_hi = a->seq_alloc;
	f->free_records = vt_model_grow(f->free_records, &f->cap_free, f->nfree, sizeof(uint32_t));
	f->free_records[f->nfree++] = idx;
}

static void freed(struct vt_model *m, struct vt_proc *p, uint32_t idx)
{
	struct vt_fold *f = m->fold;
	struct fold_proc *fp = proc_of(f, (uint32_t)(p - m->procs));
	const struct vt_alloc *a = &m->allocs[idx];
	if (vt_alloc_charges_device(a))
		vt_replay_peak_charge(&m->replay_peaks[a->device], a->bytes, 1, 0, 0);
	if (a->t_free > fp->last_t)
		fp->last_t = a->t_free;
	upload_freed(m, fp, idx);
	int born, span;
	const struct vt_alloc_copies *cp;
	if (!foldable(m, fp, idx, f->keep_steps, &born, &span, &cp)) {
		full()->freed(m, p, idx);
		return;
	}
	fold(m, fp, idx, born, span, cp);
}

/* ---- the replay's consumer ------------------------------------------------ */

/* The replay's allocation, in a folded one's record where there is one
 * (add_record): counted as it is made, and charged as the full model's
 * charge does, without its call (replay_peaks is made with the model). A
 * free's charge is freed()'s (freed_charges). */
static uint32_t add_record(struct vt_model *m, uint32_t proc, const struct vt_event *ev, uint64_t t,
                           uint8_t flags)
{
	struct vt_fold *f = m->fold;
	uint32_t idx = f->nfree ? f->free_records[--f->nfree] : vt_model_append_record(m);
	struct vt_alloc *a = &m->allocs[idx];
	vt_model_new_record(a, proc, ev, t, flags);
	struct fold_proc *fp = proc_of(f, proc);
	count_record(m, fp, idx);
	if (a->device != VT_DEVICE_UNKNOWN) { /* what a folded free's teardown is after */
		struct vt_fold_dev *d = dev_of(fp, a->device);
		d->allocs++;
		d->last_made_t = t;
		d->skew |= d->last_t_free > t;
	}
	if (vt_alloc_charges_device(a)) {
		fp->charged[a->device] = 1;
		vt_replay_peak_charge(&m->replay_peaks[a->device], a->bytes, 0, t, ev->seq);
	}
	return idx;
}

static void failed(struct vt_model *m, uint32_t proc, uint8_t dev, uint64_t t, uint64_t seq)
{
	proc_of(m->fold, proc)->pin_seq[dev] = seq + 1;
	full()->failed(m, proc, dev, t, seq);
}

/* An allocation made from the era on and filled from the host counts as
 * alive from its first copy; those freed since it was made are added, as
 * they may have been alive with it then: the bound the prefetch rule reads
 * (vt_fold_dev.up_high). */
static void uploaded(struct vt_model *m, uint32_t idx, uint64_t off, const struct vt_event *ev,
                     uint64_t t, int first, int partial)
{
	struct vt_fold *f = m->fold;
	const struct vt_alloc *a = &m->allocs[idx];
	if (first && a->device != VT_DEVICE_UNKNOWN && f->place[idx] != VT_NO_INDEX) {
		struct fold_proc *fp = proc_of(f, a->proc);
		struct vt_fold_dev *d = dev_of(fp, a->device);
		uint32_t bound = ++d->up_live + (fp->up_frees - f->up_mark[idx]);
		if (bound > d->up_high)
			d->up_high = bound;
	}
	full()->uploaded(m, idx, off, ev, t, first, partial);
}

/* A step marker earlier than an allocation or free already counted would
 * move that one's step: the counts are then not the classifier's. */
static void mark(struct vt_model *m, struct vt_proc *p, const struct vt_mark_rec *r, uint64_t t)
{
	if (vt_mark_is_step(r->kind, r->text, strnlen(r->text, r->text_len))) {
		struct fold_proc *fp = proc_of(m->fold, (uint32_t)(p - m->procs));
		if (t < fp->last_t || (fp->nsteps && t < step_time(fp, fp->nsteps - 1)))
			fp->inexact = 1;
		if (!fp->nsteps)
			fp->first_t = t;
		fp->recent[fp->nsteps++ % RECENT_STEPS] = t;
	}
	/* a marker per step, kept with its text, was most of what a long loop
	 * of folded steps still grew by: only the steps read a step marker */
	if (r->kind == VT_MARK_STEP) {
		GROW(p->step_marks, p->cap_step_marks, p->nstep_marks);
		p->step_marks[p->nstep_marks++] = t;
		return;
	}
	full()->mark(m, p, r, t);
}

static void meminfo(struct vt_model *m, struct vt_proc *p, const struct vt_meminfo_rec *r,
                    uint64_t t)
{
	proc_of(m->fold, (uint32_t)(p - m->procs))->pin_seq[r->device] = r->seq + 1;
	full()->meminfo(m, p, r, t);
}

static void end_process(struct vt_model *m, uint32_t proc)
{
	full()->end_process(m, proc);
}

/* ---- finish: the kept records back in the order they were made ---------- */

struct kept_record {
	uint64_t order;
	uint32_t idx;
};

/* Sort v[0..n) by order (each record's is its own): a radix sort, a byte
 * a pass, as many passes as the largest order has bytes. Why not qsort:
 * its comparisons through a pointer were 1 % of a long trace's report. */
static void sort_by_order(struct kept_record *v, uint32_t n)
{
	uint64_t max = 0;
	for (uint32_t i = 0; i < n; i++)
		max |= v[i].order;
	if (n < 2 || !max)
		return;
	struct kept_record *tmp = malloc(n * sizeof *tmp), *src = v, *dst = tmp;
	if (!tmp)
		vt_nomem();
	for (unsigned shift = 0; shift < 64 && (max >> shift); shift += 8) {
		uint32_t at[256] = {0};
		for (uint32_t i = 0; i < n; i++)
			at[(src[i].order >> shift) & 0xff]++;
		for (uint32_t b = 0, sum = 0; b < 256; b++) {
			uint32_t c = at[b];
			at[b] = sum;
			sum += c;
		}
		for (uint32_t i = 0; i < n; i++) /* stable: the lower bytes' order stays */
			dst[at[(src[i].order >> shift) & 0xff]++] = src[i];
		struct kept_record *t = src;
		src = dst;
		dst = t;
	}
	if (src != v)
		memcpy(v, src, n * sizeof *v);
	free(tmp);
}

/* The records of m->allocs moved in place to where to[] says (VT_NO_INDEX:
 * a hole), a chain at a time: the record a move displaces moves on, until
 * a move lands on a hole or on a place already emptied. to[] is used up.
 * In place: a second array of the kept records was a fifth of a long
 * trace's peak memory. */
static void move_records(struct vt_alloc *v, uint32_t *to, uint32_t nallocs)
{
	for (uint32_t j = 0; j < nallocs; j++) {
		if (to[j] == VT_NO_INDEX || to[j] == j)
			continue; /* a hole, moved already, or in its place */
		struct vt_alloc carry = v[j];
		uint32_t d = to[j];
		to[j] = VT_NO_INDEX;
		for (;;) {
			uint32_t next = to[d]; /* where d's own record goes */
			struct vt_alloc displaced = v[d];
			v[d] = carry;
			if (next == VT_NO_INDEX)
				break;
			to[d] = VT_NO_INDEX;
			carry = displaced;
			d = next;
		}
	}
}

/* The kept records (not in the free list), each with when it was made. */
static struct kept_record *kept_records(const struct vt_model *m, uint32_t *n)
{
	const struct vt_fold *f = m->fold;
	uint8_t *hole = calloc(m->nallocs ? m->nallocs : 1, 1);
	struct kept_record *kept = malloc((m->nallocs ? m->nallocs : 1) * sizeof *kept);
	if (!hole || !kept)
		vt_nomem();
	for (uint32_t i = 0; i < f->nfree; i++)
		hole[f->free_records[i]] = 1;
	*n = 0;
	for (uint32_t i = 0; i < m->nallocs; i++)
		if (!hole[i])
			kept[(*n)++] = (struct kept_record){f->order[i], i};
	free(hole);
	return kept;
}

/* Folded records are holes in m->allocs: the kept ones move down, in the
 * order they were made, and every index of them is renumbered. */
static void compact(struct vt_model *m)
{
	struct vt_fold *f = m->fold;
	uint32_t n;
	struct kept_record *kept = kept_records(m, &n);
	/* the replay's side arrays are done with: gone before the sort's */
	free(f->order);
	free(f->place);
	free(f->up_mark);
	f->order = NULL;
	f->place = NULL;
	f->up_mark = NULL;
	f->cap_side = 0;
	sort_by_order(kept, n);
	uint32_t *to = malloc((m->nallocs ? m->nallocs : 1) * sizeof *to);
	if (!to)
		vt_nomem();
	memset(to, 0xff, (m->nallocs ? m->nallocs : 1) * sizeof *to); /* VT_NO_INDEX: a hole */
	for (uint32_t i = 0; i < n; i++)
		to[kept[i].idx] = i;
	free(kept);
	for (uint32_t i = 0; i < m->ncopies; i++) {
		m->copies[i].alloc = to[m->copies[i].alloc];
		if (m->copies[i].d2d_src != VT_NO_INDEX)
			m->copies[i].d2d_src = to[m->copies[i].d2d_src];
	}
	for (uint32_t i = 0; i < m->nranges; i++)
		m->ranges[i].alloc = to[m->ranges[i].alloc];
	for (uint32_t i = 0; i < m->nfree_order; i++)
		m->free_order[i] = to[m->free_order[i]];
	move_records(m->allocs, to, m->nallocs);
	free(to);
	vt_model_reindex_copies(m);
	struct vt_alloc *v = m->allocs;
	for (uint32_t i = 0; i < m->nprocs; i++)
		m->procs[i].alloc_begin = m->procs[i].alloc_end = 0;
	for (uint32_t i = n; i-- > 0;) /* each process's records are one run */
		m->procs[v[i].proc].alloc_begin = i;
	for (uint32_t i = 0; i < n; i++)
		m->procs[v[i].proc].alloc_end = i + 1;
	v = realloc(m->allocs, (n ? n : 1) * sizeof *v); /* shrinking: keeps the records */
	if (v)
		m->allocs = v;
	m->nallocs = m->cap_allocs = n;
	f->nfree = 0;
}

/* The peaks of a device several processes charged are merged in time from
 * every allocation: the folded ones are missing there. */
static void check_shared_devices(struct vt_model *m)
{
	struct vt_fold *f = m->fold;
	uint32_t users[VT_MAX_DEVICES] = {0};
	uint64_t folded = 0;
	for (uint32_t i = 0; i < f->nprocs; i++) {
		for (int d = 0; f->procs[i] && d < VT_MAX_DEVICES; d++)
			users[d] += f->procs[i]->charged[d];
		folded += f->procs[i] ? f->procs[i]->folded : 0;
	}
	for (int d = 0; folded && d < VT_MAX_DEVICES; d++)
		if (users[d] > 1)
			vt_fold_set_inexact(m, "processes share a device");
	for (uint32_t i = 0; i < f->nprocs; i++)
		if (f->procs[i] && f->procs[i]->inexact && f->procs[i]->folded)
			vt_fold_set_inexact(m, "step markers out of time order");
}

/* The groups' allocations and first uploads, counted to their stacks as
 * the full model counts its records' (vt_model_stack.*_uses). */
static void count_group_stacks(struct vt_model *m)
{
	const struct vt_fold *f = m->fold;
	for (uint32_t i = 0; i < f->ngroups; i++) {
		const struct vt_fold_group *g = &f->groups[i];
		struct vt_stack_entry *s;
		HASH_FIND(hh, m->procs[g->proc].stacks, &g->stack_id, sizeof g->stack_id, s);
		if (s)
			s->s.alloc_uses += (uint32_t)g->count;
		if (!g->h2d_copies)
			continue;
		HASH_FIND(hh, m->procs[g->proc].stacks, &g->h2d_stack_id, sizeof g->h2d_stack_id,
		          s);
		if (s)
			s->s.copy_uses += (uint32_t)g->count;
	}
}

static void finish(struct vt_model *m)
{
	struct vt_fold *f = m->fold;
	struct size_entry *e, *tmp;
	HASH_ITER(hh, f->sizes, e, tmp) close_era_step(&e->s);
	for (uint32_t i = 0; i < f->nprocs; i++)
		for (int d = 0; f->procs[i] && d < VT_MAX_DEVICES; d++)
			if (f->procs[i]->devs[d])
				close_dev(f->procs[i]->devs[d]);
	check_shared_devices(m);
	f->high = m->nallocs;
	compact(m);
	full()->finish(m); /* peaks, end bytes, stack uses of the kept records */
	count_group_stacks(m);
}

static void destroy(struct vt_model *m)
{
	struct vt_fold *f = m->fold;
	if (!f)
		return;
	for (uint32_t i = 0; i < f->nprocs; i++) {
		for (int d = 0; f->procs[i] && d < VT_MAX_DEVICES; d++)
			free(f->procs[i]->devs[d]);
		free(f->procs[i]);
	}
	struct size_entry *e, *etmp;
	HASH_ITER(hh, f->sizes, e, etmp)
	{
		HASH_DEL(f->sizes, e);
		free(e);
	}
	struct group_entry *g, *gtmp;
	HASH_ITER(hh, f->group_hash, g, gtmp)
	{
		HASH_DEL(f->group_hash, g);
		free(g);
	}
	free(f->procs);
	free(f->groups);
	free(f->free_records);
	free(f->order);
	free(f->place);
	free(f->up_mark);
	free(f);
	m->fold = NULL;
}

static const struct vt_replay_consumer folding = {
    .add_record = add_record, /* take_record and charge: never called */
    .freed = freed,
    .freed_charges = 1,
    .failed = failed,
    .uploaded = uploaded,
    .mark = mark,
    .meminfo = meminfo,
    .end_process = end_process,
    .finish = finish,
    .destroy = destroy,
};

/* VT_FOLD_KEEP_STEPS, or VRAMTRACE_FOLD_KEEP_STEPS (at least 1): the tests
 * fold the corpus's short jobs to compare with the full model. */
static uint32_t keep_steps(void)
{
	const char *env = getenv("VRAMTRACE_FOLD_KEEP_STEPS");
	long v = env ? strtol(env, NULL, 10) : 0;
	return v >= 1 && v < 1000000 ? (uint32_t)v : VT_FOLD_KEEP_STEPS;
}

struct vt_model *vt_model_new_folding(void)
{
	struct vt_model *m = vt_model_create(&folding);
	if (!m)
		return NULL;
	if (!(m->fold = calloc(1, sizeof *m->fold)) ||
	    !(m->replay_peaks = calloc(VT_MAX_DEVICES, sizeof *m->replay_peaks))) {
		vt_model_free(m);
		return NULL;
	}
	m->fold->keep_steps = keep_steps();
	return m;
}

/* ---- queries ---------------------------------------------------------------- */

uint32_t vt_fold_keep_steps(const struct vt_model *m)
{
	return m->fold ? m->fold->keep_steps : 0;
}

struct vt_fold_group *vt_fold_groups(const struct vt_model *m, uint32_t *n)
{
	*n = m->fold ? m->fold->ngroups : 0;
	return m->fold ? m->fold->groups : NULL;
}

const struct vt_fold_size *vt_fold_size_of(const struct vt_model *m, uint32_t proc, uint64_t bytes,
                                           uint8_t device)
{
	if (!m->fold)
		return NULL;
	struct size_entry probe, *e;
	memset(&probe.key, 0, sizeof probe.key);
	probe.key.bytes = bytes;
	probe.key.proc = proc;
	probe.key.device = device;
	HASH_FIND(hh, m->fold->sizes, &probe.key, sizeof probe.key, e);
	return e && e->s.folded ? &e->s : NULL;
}

const struct vt_fold_dev *vt_fold_dev_of(const struct vt_model *m, uint32_t proc, uint8_t device)
{
	const struct vt_fold *f = m->fold;
	return f && proc < f->nprocs && f->procs[proc] ? f->procs[proc]->devs[device] : NULL;
}

int vt_fold_dev_made_in(const struct vt_fold_dev *d, int s)
{
	if (d->lost)
		return -1;
	for (uint32_t i = 0; i < d->nruns; i++)
		if (s >= d->runs[i].first && s <= d->runs[i].last)
			return 1;
	return 0;
}

uint64_t vt_fold_folded(const struct vt_model *m, uint32_t proc)
{
	const struct vt_fold *f = m->fold;
	return f && proc < f->nprocs && f->procs[proc] ? f->procs[proc]->folded : 0;
}

int vt_fold_made_between(const struct vt_model *m, uint32_t proc, uint64_t seq_a, uint64_t seq_b)
{
	const struct vt_fold *f = m->fold;
	const struct fold_proc *fp = f && proc < f->nprocs ? f->procs[proc] : NULL;
	uint64_t lo = seq_a < seq_b ? seq_a : seq_b, hi = seq_a < seq_b ? seq_b : seq_a;
	return fp && fp->folded && fp->seq_lo < hi && fp->seq_hi > lo;
}

uint64_t vt_fold_uploads(const struct vt_model *m, uint32_t proc)
{
	uint32_t ng;
	const struct vt_fold_group *g = vt_fold_groups(m, &ng);
	uint64_t n = 0;
	for (uint32_t i = 0; i < ng; i++)
		n += g[i].proc == proc && g[i].h2d_copies ? g[i].count : 0;
	return n;
}

int vt_fold_exact(const struct vt_model *m, const char **why)
{
	if (why)
		*why = m->fold ? m->fold->why : NULL;
	return !m->fold || !m->fold->why;
}

void vt_fold_set_inexact(const struct vt_model *m, const char *why)
{
	if (m->fold && !m->fold->why)
		m->fold->why = why;
}

uint32_t vt_fold_records_high(const struct vt_model *m)
{
	return m->fold ? m->fold->high : 0;
}

void vt_uploads_count(struct vt_uploads_per_step *u, uint32_t n, uint64_t bytes)
{
	uint32_t k = n < VT_UPLOADS_CAP ? n : VT_UPLOADS_CAP;
	u->steps[k]++;
	if (bytes > u->bytes[k])
		u->bytes[k] = bytes;
}

void vt_uploads_merge(struct vt_uploads_per_step *into, const struct vt_uploads_per_step *from)
{
	for (int k = 1; k <= VT_UPLOADS_CAP; k++) {
		into->steps[k] += from->steps[k];
		if (from->bytes[k] > into->bytes[k])
			into->bytes[k] = from->bytes[k];
	}
}
