/* The full model: the replay's consumer that keeps the whole history (see
 * model_consumer.h). Every free in the order it happened, each offset of an
 * allocation filled from the host as a copy range, every marker and
 * cuMemGetInfo record; at the end, each device's peak swept from those. */
#include "model_history.h"

#include <stdlib.h>
#include <string.h>

#include "model_consumer.h"
#include "model_hash.h"
#include "model_internal.h"
#include "nomem.h"
#include "model_query.h"

static uint32_t append_record(struct vt_model *m, uint32_t proc, uint32_t stack_id)
{
	(void)m, (void)proc, (void)stack_id;
	return VT_NO_INDEX;
}

/* Live bytes and peak per device as the replay goes: for a one-process
 * trace this is the peak (the allocations and frees come in seq order, a
 * free before the alloc that closed it), and the sweep at the end need not
 * read every record again. */
static void charge(struct vt_model *m, const struct vt_alloc *a, int is_free, uint64_t t,
                   uint64_t seq)
{
	if (!m->replay_peaks &&
	    !(m->replay_peaks = calloc(VT_MAX_DEVICES, sizeof *m->replay_peaks))) {
		vt_nomem();
	}
	vt_replay_peak_charge(&m->replay_peaks[a->device], a->bytes, is_free, t, seq);
}

static void freed(struct vt_model *m, struct vt_proc *p, uint32_t idx)
{
	GROW(m->free_order, m->cap_free_order, m->nfree_order);
	m->free_order[m->nfree_order++] = idx;
	p->free_end = m->nfree_order;
}

static void failed(struct vt_model *m, uint32_t proc, uint8_t dev, uint64_t t, uint64_t seq)
{
	(void)m, (void)proc, (void)dev, (void)t, (void)seq; /* vt_model.failed has it */
}

static void note_partial_copy(struct vt_model *m, uint32_t idx, uint64_t off,
                              const struct vt_event *ev, uint64_t t)
{
	struct vt_range_key key = {.alloc = idx, .offset = off};
	struct vt_range_entry *e;
	HASH_FIND(hh, m->range_index, &key, sizeof key, e);
	if (!e) {
		e = calloc(1, sizeof *e);
		if (!e)
			vt_nomem();
		e->key = key;
		GROW(m->ranges, m->cap_ranges, m->nranges);
		e->range = m->nranges++;
		m->ranges[e->range] = (struct vt_copy_range){
		    .alloc = idx,
		    .stack_id = ev->stack_id,
		    .offset = off,
		    .t_first = t,
		};
		HASH_ADD(hh, m->range_index, key, sizeof key, e);
		m->allocs[idx].flags |= VT_AF_PARTIAL_COPIES;
	}
	struct vt_copy_range *r = &m->ranges[e->range];
	r->copies++;
	r->total_bytes += ev->bytes;
	if (ev->bytes > r->bytes)
		r->bytes = ev->bytes;
	r->t_last = t;
}

static void uploaded(struct vt_model *m, uint32_t idx, uint64_t off, const struct vt_event *ev,
                     uint64_t t, int first, int partial)
{
	(void)first;
	if (partial)
		note_partial_copy(m, idx, off, ev, t);
}

static void mark(struct vt_model *m, struct vt_proc *p, const struct vt_mark_rec *r, uint64_t t)
{
	(void)m;
	vt_model_keep_mark(p, r, t);
}

static void meminfo(struct vt_model *m, struct vt_proc *p, const struct vt_meminfo_rec *r,
                    uint64_t t)
{
	(void)m;
	GROW(p->meminfo, p->cap_meminfo, p->nmeminfo);
	p->meminfo[p->nmeminfo++] = (struct vt_meminfo){
	    .t_ns = t,
	    .seq = r->seq,
	    .free_bytes = r->free_bytes,
	    .total_bytes = r->total_bytes,
	    .device = r->device,
	    .reason = r->reason,
	};
}

static void end_process(struct vt_model *m, uint32_t proc)
{
	(void)m, (void)proc; /* its live allocations stay live (t_free = NEVER) */
}

/* ---- finish: the peak sweep ------------------------------------------- */

/* One process's alloc/free events in seq order: allocations are stored in
 * the order they happened and frees in free_order, so this is a merge. */
struct proc_cursor {
	uint32_t ai, fi;
};

/* Next event of process p: returns 1 and sets *idx, *is_free, *when. */
static int next_event(const struct vt_model *m, const struct vt_proc *p,
                      const struct proc_cursor *c, uint32_t *idx, int *is_free,
                      struct vt_moment *when, uint32_t pi)
{
	int have_a = c->ai < p->alloc_end, have_f = c->fi < p->free_end;
	if (!have_a && !have_f)
		return 0;
	const struct vt_alloc *a = have_a ? &m->allocs[c->ai] : NULL;
	const struct vt_alloc *f = have_f ? &m->allocs[m->free_order[c->fi]] : NULL;
	/* a free and the alloc that closed it implicitly share a seq: free first */
	if (f && (!a || f->seq_free <= a->seq_alloc)) {
		*idx = m->free_order[c->fi];
		*is_free = 1;
		*when = (struct vt_moment){f->t_free, pi, f->seq_free};
	} else {
		*idx = c->ai;
		*is_free = 0;
		*when = (struct vt_moment){a->t_alloc, pi, a->seq_alloc};
	}
	return 1;
}

static void sweep_many(struct vt_model *m);

static void sweep_peaks(struct vt_model *m)
{
	if (m->nprocs == 1) { /* the replay kept the score */
		for (int dv = 0; dv < VT_MAX_DEVICES && m->replay_peaks; dv++) {
			const struct vt_replay_peak *r = &m->replay_peaks[dv];
			struct vt_device *d = &m->devices[dv];
			d->end_bytes = r->live;
			if (r->peak > d->peak_bytes) {
				d->peak_bytes = r->peak;
				d->peak_t_ns = r->t_ns;
				d->peak_proc = 0;
				d->peak_seq = r->seq;
			}
		}
		return;
	}
	sweep_many(m);
}

static void sweep_many(struct vt_model *m)
{
	uint64_t live[VT_MAX_DEVICES] = {0};
	struct proc_cursor *cur = calloc(m->nprocs ? m->nprocs : 1, sizeof *cur);
	if (!cur)
		vt_nomem();
	for (uint32_t i = 0; i < m->nprocs; i++)
		cur[i] = (struct proc_cursor){m->procs[i].alloc_begin, m->procs[i].free_begin};
	for (;;) {
		/* the process whose next event is earliest (k-way merge by time) */
		int best = -1;
		uint32_t bidx = 0;
		int bfree = 0;
		struct vt_moment bwhen = {0};
		for (uint32_t i = 0; i < m->nprocs; i++) {
			uint32_t idx;
			int is_free;
			struct vt_moment when;
			if (!next_event(m, &m->procs[i], &cur[i], &idx, &is_free, &when, i))
				continue;
			if (best < 0 || vt_moment_cmp(&when, &bwhen) < 0) {
				best = (int)i;
				bidx = idx;
				bfree = is_free;
				bwhen = when;
			}
		}
		if (best < 0)
			break;
		if (bfree)
			cur[best].fi++;
		else
			cur[best].ai++;
		const struct vt_alloc *a = &m->allocs[bidx];
		if (!(a->flags & VT_AF_CHARGED) || a->device == VT_DEVICE_UNKNOWN)
			continue;
		struct vt_device *d = &m->devices[a->device];
		if (bfree) {
			live[a->device] -= a->bytes;
			continue;
		}
		live[a->device] += a->bytes;
		if (live[a->device] > d->peak_bytes) {
			d->peak_bytes = live[a->device];
			d->peak_t_ns = bwhen.t_ns;
			d->peak_proc = bwhen.proc;
			d->peak_seq = bwhen.seq;
		}
	}
	for (int dv = 0; dv < VT_MAX_DEVICES; dv++)
		m->devices[dv].end_bytes = live[dv];
	free(cur);
}

/* How many allocations and first uploads each stack made (a streaming
 * model counted them as it replayed: its records are not the trace's). */
static void count_stack_uses(struct vt_model *m)
{
	struct vt_stack_cache sc = {.proc = UINT32_MAX};
	for (uint32_t i = 0; i < m->nallocs; i++) {
		const struct vt_alloc *a = &m->allocs[i];
		struct vt_stack_entry *e = vt_model_cached_stack(m, &sc, a->proc, a->stack_id);
		if (e)
			e->s.alloc_uses++;
	}
	/* only the side table's allocations had a first host-to-device copy */
	for (uint32_t k = 0; k < m->ncopies; k++) {
		const struct vt_alloc_copies *c = &m->copies[k];
		struct vt_stack_entry *e =
		    vt_model_cached_stack(m, &sc, m->allocs[c->alloc].proc, c->h2d_stack_id);
		if (e)
			e->s.copy_uses++;
	}
	for (uint32_t r = 0; r < m->nranges; r++) {
		struct vt_stack_entry *e;
		uint32_t id = m->ranges[r].stack_id;
		HASH_FIND(hh, m->procs[m->allocs[m->ranges[r].alloc].proc].stacks, &id, sizeof id,
		          e);
		if (e)
			e->s.copy_uses++;
	}
}

static void finish(struct vt_model *m)
{
	sweep_peaks(m);
	count_stack_uses(m);
}

static void destroy(struct vt_model *m)
{
	(void)m; /* its history is the model's own arrays */
}

static const struct vt_replay_consumer history = {
    .take_record = append_record,
    .charge = charge,
    .freed = freed,
    .failed = failed,
    .uploaded = uploaded,
    .mark = mark,
    .meminfo = meminfo,
    .end_process = end_process,
    .finish = finish,
    .destroy = destroy,
};

const struct vt_replay_consumer *vt_model_history_consumer(void)
{
	return &history;
}

struct vt_model *vt_model_new(void)
{
	return vt_model_create(&history);
}
