/* Replay of process logs into the memory model (see model.h). */
#include "model.h"

#include <stdlib.h>
#include <string.h>

#include "nomem.h" /* before <uthash.h>: its out-of-memory exit */
#include "model_hash.h"
#include <uthash.h>

#include "model_consumer.h"
#include "model_internal.h"
#include "model_intervals.h"

static const char *const category_names[VT_CAT_COUNT] = {
    "dataset", "prefetch", "weights", "optimizer", "gradients", "activations", "pool", "unknown",
};

const char *vt_category_name(int cat)
{
	return cat >= 0 && cat < VT_CAT_COUNT ? category_names[cat] : "unknown";
}

int vt_category_from_name(const char *name)
{
	for (int i = 0; i < VT_CAT_COUNT; i++)
		if (!strcmp(name, category_names[i]))
			return i;
	return -1;
}

void *vt_model_grow(void *arr, uint32_t *cap, uint32_t n, size_t elem)
{
	if (n < *cap)
		return arr;
	uint32_t c = *cap ? *cap : 16;
	while (c <= n)
		c = c > UINT32_MAX / 2 ? UINT32_MAX : c * 2;
	void *p = realloc(arr, (size_t)c * elem);
	if (!p) {
		vt_nomem();
	}
	*cap = c;
	return p;
}
static char *dup_n(const char *s, size_t n)
{
	char *d = malloc(n + 1);
	if (!d) {
		vt_nomem();
	}
	memcpy(d, s, n);
	d[n] = 0;
	return d;
}

/* ---- lifecycle ------------------------------------------------------ */

struct vt_model *vt_model_create(const struct vt_replay_consumer *consumer)
{
	struct vt_model *m = calloc(1, sizeof *m);
	if (m)
		m->consumer = consumer;
	return m;
}

struct vt_thread_time {
	uint32_t tid;
	uint64_t last_t_ns;
	UT_hash_handle hh;
};

static void free_thread_times(struct vt_proc *p)
{
	struct vt_thread_time *e, *tmp;
	HASH_ITER(hh, p->thread_times, e, tmp)
	{
		HASH_DEL(p->thread_times, e);
		free(e);
	}
	p->last_thread = NULL;
}

/* thread_last_t for a thread other than the last one asked for: out of
 * line, as the replay asks for the same thread event after event. */
static __attribute__((noinline)) uint64_t *thread_last_t_slow(struct vt_proc *p, uint32_t tid)
{
	struct vt_thread_time *e;
	HASH_FIND(hh, p->thread_times, &tid, sizeof tid, e);
	if (!e) {
		e = vt_xcalloc(1, sizeof *e);
		e->tid = tid;
		HASH_ADD(hh, p->thread_times, tid, sizeof e->tid, e);
	}
	p->last_thread = e;
	return &e->last_t_ns;
}

/* Where thread `tid` of p keeps its last event time (0 before its first). */
static inline uint64_t *thread_last_t(struct vt_proc *p, uint32_t tid)
{
	struct vt_thread_time *e = p->last_thread;
	if (e && e->tid == tid)
		return &e->last_t_ns;
	return thread_last_t_slow(p, tid);
}

static void free_proc(struct vt_proc *p)
{
	free_thread_times(p);
	for (uint32_t i = 0; i < p->nmarks; i++)
		free(p->marks[i].text);
	free(p->step_marks);
	for (uint32_t i = 0; i < p->nmodules; i++)
		free(p->modules[i].path);
	free(p->marks);
	free(p->modules);
	free(p->meminfo);
	free(p->nvml);
	struct vt_stack_entry *s, *stmp;
	HASH_ITER(hh, p->stacks, s, stmp)
	{
		HASH_DEL(p->stacks, s);
		free(s->s.frames);
		free(s);
	}
	struct vt_handle_entry *h, *htmp;
	HASH_ITER(hh, p->handles, h, htmp)
	{
		HASH_DEL(p->handles, h);
		free(h);
	}
	struct vt_frame_fanin *fi, *ftmp;
	HASH_ITER(hh, p->fanin, fi, ftmp)
	{
		HASH_DEL(p->fanin, fi);
		free(fi);
	}
	if (p->live) {
		vt_ival_destroy(p->live);
		free(p->live);
	}
	free(p->exe);
	free(p->cmdline);
	free(p->hostname);
	free(p->step_t);
}

void vt_model_drop_range_index(struct vt_model *m)
{
	struct vt_range_entry *r, *rtmp;
	HASH_ITER(hh, m->range_index, r, rtmp)
	{
		HASH_DEL(m->range_index, r);
		free(r);
	}
}

void vt_model_free(struct vt_model *m)
{
	if (!m)
		return;
	for (uint32_t i = 0; i < m->nprocs; i++)
		free_proc(&m->procs[i]);
	vt_model_drop_range_index(m);
	struct vt_site_name *sn, *sntmp;
	HASH_ITER(hh, m->site_names, sn, sntmp)
	{
		HASH_DEL(m->site_names, sn);
		free(sn->name);
		free(sn);
	}
	for (int k = 0; k < 2; k++) {
		struct vt_site_funnel *fu, *futmp;
		HASH_ITER(hh, m->site_funnels[k], fu, futmp)
		{
			HASH_DEL(m->site_funnels[k], fu);
			free(fu->function);
			free(fu->inner);
			free(fu->outer);
			free(fu);
		}
	}
	if (m->sites && m->sites_close)
		m->sites_close(m->sites);
	for (int d = 0; d < VT_MAX_DEVICES; d++)
		free(m->devices[d].name);
	free(m->replay_peaks);
	m->consumer->destroy(m);
	free(m->allocs);
	free(m->copies);
	free(m->copy_index);
	free(m->free_order);
	free(m->ranges);
	free(m->failed);
	free(m->procs);
	free(m);
}

/* The rank fields of p from its log's header: the header stores ranks plus
 * one so that zero, an older log's padding, reads as unknown. */
static void proc_rank_from_header(struct vt_proc *p, const struct vt_file_header *hdr)
{
	p->rank = hdr->rank_p1 && hdr->rank_p1 <= INT32_MAX ? (int32_t)(hdr->rank_p1 - 1) : -1;
	p->local_rank = hdr->local_rank_p1 && hdr->local_rank_p1 <= INT32_MAX
	                    ? (int32_t)(hdr->local_rank_p1 - 1)
	                    : -1;
	p->world_size = hdr->world_size;
	p->local_world_size = hdr->local_world_size;
	p->rank_source = p->rank >= 0 ? hdr->rank_source : VT_RANK_NONE;
	memcpy(p->rank_role, hdr->rank_role, sizeof p->rank_role);
	p->rank_role[sizeof p->rank_role - 1] = '\0';
}

uint32_t vt_model_begin_process(struct vt_model *m, const struct vt_file_header *hdr,
                                uint64_t trace_start_ns)
{
	GROW(m->procs, m->cap_procs, m->nprocs);
	uint32_t idx = m->nprocs++;
	struct vt_proc *p = &m->procs[idx];
	memset(p, 0, sizeof *p);
	m->trace_start_ns = trace_start_ns;
	if (hdr) {
		p->pid = hdr->pid;
		p->ppid = hdr->ppid;
		p->exec_index = hdr->exec_index;
		p->state_word = hdr->state;
		p->header_flags = hdr->flags;
		p->events_dropped = hdr->events_dropped;
		vt_self_cost_from_header(hdr, &p->self_cost);
		p->clock_offset_ns =
		    hdr->clock_base_ns >= trace_start_ns ? hdr->clock_base_ns - trace_start_ns : 0;
		p->realtime_base_ns = hdr->realtime_base_ns;
		p->clean_exit = VT_STATE_OF(hdr->state) == VT_STATE_EXITED;
		p->exit_code = p->clean_exit ? VT_EXIT_CODE_OF(hdr->state) : 0;
		p->exe = dup_n(hdr->exe,
		               strnlen(hdr->exe, hdr->exe_len < sizeof hdr->exe ? hdr->exe_len
		                                                                : sizeof hdr->exe));
		size_t cl =
		    hdr->cmdline_len < sizeof hdr->cmdline ? hdr->cmdline_len : sizeof hdr->cmdline;
		p->cmdline = dup_n(hdr->cmdline, cl);
		p->hostname = dup_n(hdr->hostname, strnlen(hdr->hostname, sizeof hdr->hostname));
		proc_rank_from_header(p, hdr);
	} else {
		p->exe = dup_n("", 0);
		p->cmdline = dup_n("", 0);
		p->hostname = dup_n("", 0);
	}
	if (!hdr)
		p->rank = p->local_rank = -1;
	p->alloc_begin = p->alloc_end = m->nallocs;
	p->free_begin = p->free_end = m->nfree_order;
	p->live = calloc(1, sizeof *p->live);
	if (!p->live) {
		vt_nomem();
	}
	vt_ival_init(p->live);
	return idx;
}

/* ---- devices -------------------------------------------------------- */

static struct vt_device *device_of(struct vt_model *m, uint8_t dev)
{
	if (dev == VT_DEVICE_UNKNOWN)
		return NULL;
	struct vt_device *d = &m->devices[dev];
	d->seen = 1;
	return d;
}

/* The record is one cache line; a field added to it costs every
 * allocation of every trace (see model.h). */
_Static_assert(sizeof(struct vt_alloc) == 64, "struct vt_alloc is one cache line");

/* ---- the copies side table ------------------------------------------ */

/* Most allocations never see a copy (activations, gradients): their
 * statistics would be 80 zero bytes in every record. Those that do get an
 * entry, found through an open-addressing index keyed by allocation.
 *
 * An allocation's slot is its index, each wrap of the index around the
 * table moved by a multiplicative hash of the wrap: the classifier asks
 * for the records' copies in record order, and a slot that follows the
 * record keeps those lookups in order in memory. A hash of the whole
 * index sent each of them to a cache miss (8 % of a 100 M-event report,
 * whose index held a batch buffer a step). */
static uint32_t copy_slot(uint32_t alloc, uint32_t mask)
{
	uint32_t wrap = alloc >> __builtin_ctz(mask + 1); /* mask + 1: a power of two */
	return (alloc + wrap * 2654435761u) & mask;
}

static void copy_index_grow(struct vt_model *m)
{
	uint32_t slots = m->copy_slots ? m->copy_slots * 2 : 1024;
	uint32_t *idx = malloc((size_t)slots * sizeof *idx);
	if (!idx || slots < m->copy_slots) {
		vt_nomem();
	}
	memset(idx, 0xff, (size_t)slots * sizeof *idx); /* VT_NO_INDEX everywhere */
	for (uint32_t e = 0; e < m->ncopies; e++) {
		uint32_t s = copy_slot(m->copies[e].alloc, slots - 1);
		while (idx[s] != VT_NO_INDEX)
			s = (s + 1) & (slots - 1);
		idx[s] = e;
	}
	free(m->copy_index);
	m->copy_index = idx;
	m->copy_slots = slots;
}

void vt_model_reindex_copies(struct vt_model *m)
{
	if (!m->copy_slots)
		return;
	m->copy_slots /= 2; /* the grow doubles it back, hashing every entry anew */
	copy_index_grow(m);
}

static struct vt_alloc_copies *copies_find(const struct vt_model *m, uint32_t alloc)
{
	if (!m->copy_slots)
		return NULL;
	for (uint32_t s = copy_slot(alloc, m->copy_slots - 1);; s = (s + 1) & (m->copy_slots - 1)) {
		uint32_t e = m->copy_index[s];
		if (e == VT_NO_INDEX)
			return NULL;
		if (m->copies[e].alloc == alloc)
			return &m->copies[e];
	}
}

/* The entry of allocation idx, made on its first copy (or mapping). */
static struct vt_alloc_copies *copies_of(struct vt_model *m, uint32_t idx)
{
	struct vt_alloc *a = &m->allocs[idx];
	if (a->flags & VT_AF_COPIES)
		return copies_find(m, idx);
	if ((uint64_t)(m->ncopies + 1) * 2 > m->copy_slots) /* load at most 1/2 */
		copy_index_grow(m);
	GROW(m->copies, m->cap_copies, m->ncopies);
	uint32_t e = m->ncopies++;
	m->copies[e] = (struct vt_alloc_copies){
	    .t_first_h2d = VT_T_NEVER,
	    .t_last_h2d = VT_T_NEVER,
	    .d2d_src = VT_NO_INDEX,
	    .alloc = idx,
	};
	uint32_t s = copy_slot(idx, m->copy_slots - 1);
	while (m->copy_index[s] != VT_NO_INDEX)
		s = (s + 1) & (m->copy_slots - 1);
	m->copy_index[s] = e;
	a->flags |= VT_AF_COPIES;
	return &m->copies[e];
}

/* Linear probing keeps its runs whole when an entry goes by shifting the
 * entries after it back (no tombstones: a streaming replay forgets as many
 * entries as it makes); the entry itself is replaced by the last one. */
void vt_model_forget_copies(struct vt_model *m, uint32_t idx)
{
	if (!(m->allocs[idx].flags & VT_AF_COPIES))
		return;
	m->allocs[idx].flags &= ~VT_AF_COPIES;
	uint32_t mask = m->copy_slots - 1, hole = copy_slot(idx, mask);
	while (m->copies[m->copy_index[hole]].alloc != idx)
		hole = (hole + 1) & mask;
	uint32_t e = m->copy_index[hole];
	for (uint32_t j = (hole + 1) & mask; m->copy_index[j] != VT_NO_INDEX; j = (j + 1) & mask) {
		uint32_t home = copy_slot(m->copies[m->copy_index[j]].alloc, mask);
		if (((j - home) & mask) >= ((j - hole) & mask)) { /* home is not past the hole */
			m->copy_index[hole] = m->copy_index[j];
			hole = j;
		}
	}
	m->copy_index[hole] = VT_NO_INDEX;
	uint32_t last = --m->ncopies;
	if (e == last)
		return;
	m->copies[e] = m->copies[last];
	uint32_t s = copy_slot(m->copies[e].alloc, mask);
	while (m->copy_index[s] != last)
		s = (s + 1) & mask;
	m->copy_index[s] = e;
}

const struct vt_alloc_copies *vt_model_copies(const struct vt_model *m, const struct vt_alloc *a)
{
	static const struct vt_alloc_copies none = {
	    .t_first_h2d = VT_T_NEVER,
	    .t_last_h2d = VT_T_NEVER,
	    .d2d_src = VT_NO_INDEX,
	    .alloc = VT_NO_INDEX,
	};
	const struct vt_alloc_copies *c = NULL;
	if (a->flags & VT_AF_COPIES)
		c = copies_find(m, (uint32_t)(a - m->allocs));
	return c ? c : &none;
}

/* ---- allocations ---------------------------------------------------- */

static uint64_t trace_t(const struct vt_proc *p, uint64_t t_ns)
{
	return t_ns + p->clock_offset_ns;
}

/* Live bytes and peak per device as the replay goes: for a one-process
 * trace this is the peak (the allocations and frees come in seq order, a
 * free before the alloc that closed it), and vt_model_finish need not read
 * every record again. */
static void replay_charge(struct vt_model *m, const struct vt_alloc *a, int is_free, uint64_t t,
                          uint64_t seq)
{
	if (vt_alloc_charges_device(a))
		m->consumer->charge(m, a, is_free, t, seq);
}

/* Inline: every free of a replay comes here, through free_address. */
static inline __attribute__((always_inline)) void
record_free(struct vt_model *m, struct vt_proc *p, uint32_t idx, uint64_t t, uint64_t seq)
{
	struct vt_alloc *a = &m->allocs[idx];
	if (a->t_free != VT_T_NEVER)
		return;
	/* A log whose time goes backwards must not end an allocation before it
	 * began: every sweep over lifetimes would count it below zero. */
	if (t < a->t_alloc)
		t = a->t_alloc;
	if (!m->consumer->freed_charges)
		replay_charge(m, a, 1, t, seq);
	a->t_free = t;
	a->seq_free = seq;
	m->consumer->freed(m, p, idx);
}

static int is_charged(uint8_t kind)
{
	return kind != VT_ALLOC_HOST && kind != VT_ALLOC_IPC;
}

static int is_handle_kind(uint8_t kind)
{
	return kind == VT_ALLOC_VMM || kind == VT_ALLOC_ARRAY;
}

/* The record the consumer gives back (take_record), or a new one: ev's
 * allocation in it. */
static uint32_t place_record(struct vt_model *m, uint32_t pi, const struct vt_event *ev, uint64_t t,
                             uint8_t flags)
{
	uint32_t idx = m->consumer->take_record(m, pi, ev->stack_id);
	if (idx == VT_NO_INDEX)
		idx = vt_model_append_record(m);
	vt_model_new_record(&m->allocs[idx], pi, ev, t, flags);
	return idx;
}

static void on_alloc(struct vt_model *m, uint32_t pi, const struct vt_event *ev)
{
	struct vt_proc *p = &m->procs[pi];
	uint64_t t = trace_t(p, ev->t_ns);
	struct vt_device *d = device_of(m, ev->device);
	if (d)
		d->alloc_calls++; /* failed ones too: the device was used */
	if (ev->result != 0) {
		GROW(m->failed, m->cap_failed, m->nfailed);
		m->failed[m->nfailed++] = (struct vt_failed_alloc){
		    .t_ns = t,
		    .seq = ev->seq,
		    .bytes = ev->bytes,
		    .proc = pi,
		    .stack_id = ev->stack_id,
		    .result = ev->result,
		    .api = ev->api,
		    .device = ev->device,
		    .kind = ev->kind,
		};
		m->totals.failed_allocs++;
		m->consumer->failed(m, pi, ev->device, t, ev->seq);
		return;
	}
	m->totals.alloc_calls++;
	int handle = is_handle_kind(ev->kind);
	/* the stale one is closed before the new record exists, so no state of
	 * the replay (a streaming snapshot taken at that free) ever holds both */
	struct vt_handle_entry *h = NULL;
	uint32_t at = 0; /* the live map's node at ev->addr, for the insert */
	if (handle) {
		/* a handle value still live: its release was lost; close it now */
		HASH_FIND(hh, p->handles, &ev->addr, sizeof ev->addr, h);
		if (h)
			record_free(m, p, h->alloc, t, ev->seq);
	} else {
		/* an ALLOC over a live address: its FREE was lost; close it now */
		const struct vt_ival *old = vt_ival_find_at(p->live, ev->addr, &at);
		if (old && !old->is_mapping) {
			struct vt_ival gone;
			vt_ival_erase(p->live, old->start, &gone);
			m->allocs[gone.alloc].flags |= VT_AF_IMPLICIT_FREE;
			record_free(m, p, gone.alloc, t, ev->seq);
			m->totals.implicit_frees++;
		}
	}
	uint8_t flags =
	    (uint8_t)((is_charged(ev->kind) ? VT_AF_CHARGED : 0) | (handle ? VT_AF_HANDLE : 0));
	/* added (and charged) by the consumer in one call, or taken, filled
	 * and charged below */
	int added = m->consumer->add_record != NULL;
	uint32_t idx = added ? m->consumer->add_record(m, pi, ev, t, flags)
	                     : place_record(m, pi, ev, t, flags);
	struct vt_alloc *a = &m->allocs[idx];
	p->alloc_end = m->nallocs;
	if (handle) {
		if (!h) {
			h = calloc(1, sizeof *h);
			if (!h)
				vt_nomem();
			h->handle = ev->addr;
			HASH_ADD(hh, p->handles, handle, sizeof h->handle, h);
		}
		h->alloc = idx;
		if (!added)
			replay_charge(m, a, 0, t, ev->seq);
		return;
	}
	struct vt_ival iv = {.start = ev->addr, .len = ev->bytes ? ev->bytes : 1, .alloc = idx};
	if (vt_ival_insert_at(p->live, &iv, at) != 0)
		vt_nomem();
	if (!added)
		replay_charge(m, a, 0, t, ev->seq);
}

/* A VMM handle's memory is gone once it is released and no longer mapped. */
static void maybe_retire_handle(struct vt_model *m, struct vt_proc *p, uint32_t idx, uint64_t t,
                                uint64_t seq)
{
	struct vt_alloc *a = &m->allocs[idx];
	if (!(a->flags & VT_AF_RELEASED))
		return;
	const struct vt_alloc_copies *c = vt_model_copies(m, a);
	if (c->maps == 0)
		record_free(m, p, idx, t, seq);
}

static int free_handle(struct vt_model *m, struct vt_proc *p, const struct vt_event *ev, uint64_t t)
{
	struct vt_handle_entry *h;
	HASH_FIND(hh, p->handles, &ev->addr, sizeof ev->addr, h);
	if (!h)
		return 0;
	uint32_t idx = h->alloc;
	HASH_DEL(p->handles, h);
	free(h);
	m->allocs[idx].flags |= VT_AF_RELEASED;
	maybe_retire_handle(m, p, idx, t, ev->seq);
	return 1;
}

static inline __attribute__((always_inline)) int free_address(struct vt_model *m, struct vt_proc *p,
                                                              const struct vt_event *ev, uint64_t t)
{
	/* one descent: erase, and put a VMM mapping back (a FREE of a mapped
	 * address frees nothing; rare) */
	struct vt_ival gone;
	if (!vt_ival_erase(p->live, ev->addr, &gone))
		return 0;
	if (gone.is_mapping) {
		if (vt_ival_insert(p->live, &gone) != 0)
			vt_nomem();
		return 0;
	}
	record_free(m, p, gone.alloc, t, ev->seq);
	return 1;
}

static void on_free(struct vt_model *m, uint32_t pi, const struct vt_event *ev)
{
	struct vt_proc *p = &m->procs[pi];
	if (ev->result != 0)
		return; /* the memory is still there */
	m->totals.free_calls++;
	uint64_t t = trace_t(p, ev->t_ns);
	int found = is_handle_kind(ev->kind)
	                ? free_handle(m, p, ev, t) || free_address(m, p, ev, t)
	                : free_address(m, p, ev, t) || free_handle(m, p, ev, t);
	if (!found && ev->addr != 0)
		m->totals.frees_unmatched++;
}

static void on_map(struct vt_model *m, uint32_t pi, const struct vt_event *ev)
{
	struct vt_proc *p = &m->procs[pi];
	if (ev->result != 0)
		return;
	m->totals.map_calls++;
	struct vt_handle_entry *h;
	HASH_FIND(hh, p->handles, &ev->aux, sizeof ev->aux, h);
	if (!h)
		return; /* a handle we never saw created (imported): not our bytes */
	struct vt_ival iv = {.start = ev->addr,
	                     .len = ev->bytes ? ev->bytes : 1,
	                     .offset = ev->stream,
	                     .alloc = h->alloc,
	                     .is_mapping = 1};
	const struct vt_ival *old = vt_ival_exact(p->live, ev->addr);
	if (old && old->is_mapping) {
		copies_of(m, old->alloc)->maps--;
	}
	if (vt_ival_insert(p->live, &iv) != 0)
		vt_nomem();
	struct vt_alloc_copies *c = copies_of(m, h->alloc);
	c->maps++;
	if (!c->mapped_at)
		c->mapped_at = ev->addr;
}

static void on_unmap(struct vt_model *m, uint32_t pi, const struct vt_event *ev)
{
	struct vt_proc *p = &m->procs[pi];
	if (ev->result != 0)
		return;
	m->totals.unmap_calls++;
	const struct vt_ival *iv = vt_ival_exact(p->live, ev->addr);
	if (!iv || !iv->is_mapping)
		return;
	struct vt_ival gone;
	vt_ival_erase(p->live, ev->addr, &gone);
	struct vt_alloc_copies *c = copies_of(m, gone.alloc);
	if (c->maps)
		c->maps--;
	maybe_retire_handle(m, p, gone.alloc, trace_t(p, ev->t_ns), ev->seq);
}

/* ---- copies --------------------------------------------------------- */

/* The allocation containing addr and the offset of addr inside it. */
static uint32_t containing(const struct vt_proc *p, uint64_t addr, uint64_t *offset)
{
	const struct vt_ival *iv = vt_ival_find(p->live, addr);
	if (!iv)
		return VT_NO_INDEX;
	*offset = addr - iv->start + iv->offset;
	return iv->alloc;
}

static void attach_h2d(struct vt_model *m, uint32_t idx, uint64_t off, const struct vt_event *ev,
                       uint64_t t)
{
	struct vt_alloc_copies *c = copies_of(m, idx);
	int partial = off != 0 || ev->bytes < m->allocs[idx].bytes;
	int first = c->h2d_copies == 0;
	if (first) {
		c->t_first_h2d = t;
		c->h2d_stack_id = ev->stack_id;
	}
	c->h2d_copies++;
	c->h2d_bytes += ev->bytes;
	c->t_last_h2d = t;
	m->consumer->uploaded(m, idx, off, ev, t, first, partial);
}

static void on_copy(struct vt_model *m, uint32_t pi, const struct vt_event *ev)
{
	struct vt_proc *p = &m->procs[pi];
	if (ev->result != 0)
		return;
	m->totals.copy_calls++;
	uint64_t t = trace_t(p, ev->t_ns);
	uint64_t doff = 0, soff = 0;
	uint32_t dst = containing(p, ev->addr, &doff);
	uint32_t src = containing(p, ev->aux, &soff);
	uint8_t dir = ev->kind;
	if (dir == VT_COPY_UNKNOWN) /* unified addressing: infer from what we know */
		dir = dst != VT_NO_INDEX ? (src != VT_NO_INDEX ? VT_COPY_DTOD : VT_COPY_HTOD)
		                         : (src != VT_NO_INDEX ? VT_COPY_DTOH : VT_COPY_HTOH);
	switch (dir) {
	case VT_COPY_HTOD:
		m->totals.htod_calls++;
		m->totals.htod_bytes += ev->bytes;
		if (dst != VT_NO_INDEX) {
			attach_h2d(m, dst, doff, ev, t);
		} else {
			m->totals.copy_unattached++;
			struct vt_handle_entry *h; /* an array: a handle, not an address */
			HASH_FIND(hh, p->handles, &ev->addr, sizeof ev->addr, h);
			if (!h)
				m->totals.copies_to_nowhere++;
		}
		break;
	case VT_COPY_DTOH:
		m->totals.dtoh_calls++;
		if (src != VT_NO_INDEX) {
			struct vt_alloc_copies *c = copies_of(m, src);
			c->d2h_copies++;
			c->d2h_bytes += ev->bytes;
		}
		break;
	case VT_COPY_DTOD:
	case VT_COPY_PEER:
		m->totals.dtod_calls++;
		if (dst != VT_NO_INDEX) {
			struct vt_alloc_copies *c = copies_of(m, dst);
			if (c->d2d_in_copies++ == 0)
				c->d2d_src = src;
			c->d2d_in_bytes += ev->bytes;
		}
		if (src != VT_NO_INDEX) {
			struct vt_alloc_copies *c = copies_of(m, src);
			c->d2d_out_copies++;
			c->d2d_out_bytes += ev->bytes;
		}
		break;
	default:
		break;
	}
}

/* ---- metadata ------------------------------------------------------- */

static void on_stack(struct vt_proc *p, const struct vt_stack_rec *r, uint32_t size)
{
	if (size < sizeof *r)
		return;
	size_t words = (size - sizeof *r) / 8;
	size_t want = (size_t)r->depth + 2u * r->py_depth;
	if (want > words)
		return; /* the reader checked sizes; a lying depth is ignored */
	struct vt_stack_entry *e;
	HASH_FIND(hh, p->stacks, &r->stack_id, sizeof r->stack_id, e);
	if (e)
		return;
	e = calloc(1, sizeof *e);
	if (!e)
		vt_nomem();
	e->s.id = r->stack_id;
	e->s.depth = r->depth;
	e->s.py_depth = r->py_depth;
	e->s.frames = malloc((want ? want : 1) * sizeof(uint64_t));
	if (!e->s.frames)
		vt_nomem();
	memcpy(e->s.frames, r->frames, want * sizeof(uint64_t));
	HASH_ADD(hh, p->stacks, s.id, sizeof e->s.id, e);
}

static void on_module(struct vt_proc *p, const struct vt_module_rec *r, uint32_t size)
{
	if (size < sizeof *r || sizeof *r + r->path_len > size)
		return;
	GROW(p->modules, p->cap_modules, p->nmodules);
	p->modules[p->nmodules++] = (struct vt_module){
	    .seq = r->seq,
	    .base = r->base,
	    .lo = r->lo,
	    .hi = r->hi,
	    .event = r->event,
	    .path = dup_n(r->path, r->path_len),
	};
}

int vt_mark_is_step(uint16_t kind, const char *text, size_t len)
{
	return kind == VT_MARK_STEP ||
	       (len >= 5 && (!memcmp(text, "step ", 5) || !memcmp(text, "step=", 5)));
}

static void on_mark(struct vt_model *m, struct vt_proc *p, const struct vt_mark_rec *r,
                    uint32_t size)
{
	if (size < sizeof *r || sizeof *r + r->text_len > size)
		return;
	m->consumer->mark(m, p, r, trace_t(p, r->t_ns));
}

void vt_model_keep_mark(struct vt_proc *p, const struct vt_mark_rec *r, uint64_t t)
{
	GROW(p->marks, p->cap_marks, p->nmarks);
	p->marks[p->nmarks++] = (struct vt_mark){
	    .t_ns = t,
	    .seq = r->seq,
	    .value = r->value,
	    .kind = r->kind,
	    .text = dup_n(r->text, r->text_len),
	};
}

static void on_meminfo(struct vt_model *m, struct vt_proc *p, const struct vt_meminfo_rec *r,
                       uint32_t size)
{
	if (size < sizeof *r)
		return;
	struct vt_device *d = device_of(m, r->device);
	if (d && !d->total_bytes)
		d->total_bytes = r->total_bytes;
	m->consumer->meminfo(m, p, r, trace_t(p, r->t_ns));
}

static void on_nvml(struct vt_proc *p, const struct vt_nvml_rec *r, uint32_t size)
{
	if (size < sizeof *r || r->nlisted > VT_NVML_LISTED ||
	    sizeof *r + r->nlisted * sizeof r->procs[0] > size)
		return;
	GROW(p->nvml, p->cap_nvml, p->nnvml);
	struct vt_nvml_reading *n = &p->nvml[p->nnvml++];
	*n = (struct vt_nvml_reading){
	    .t_ns = trace_t(p, r->t_ns),
	    .seq = r->seq,
	    .reading_seq = r->reading_seq,
	    .self_bytes = r->self_bytes,
	    .others_bytes = r->others_bytes,
	    .others = r->others,
	    .nlisted = r->nlisted,
	    .device = r->device,
	    .reason = r->reason,
	};
	memcpy(n->listed, r->procs, r->nlisted * sizeof r->procs[0]);
	for (uint32_t i = 0; i < n->nlisted; i++)
		n->listed[i].comm[sizeof n->listed[i].comm - 1] = 0;
}

static void on_device(struct vt_model *m, const struct vt_device_rec *r, uint32_t size)
{
	if (size < sizeof *r || sizeof *r + r->name_len > size || r->ordinal >= VT_MAX_DEVICES)
		return;
	struct vt_device *d = device_of(m, (uint8_t)r->ordinal);
	if (!d)
		return;
	if (r->total_bytes)
		d->total_bytes = r->total_bytes;
	if (!d->name && r->name_len)
		d->name = dup_n(r->name, r->name_len);
}

static void on_exit_rec(struct vt_proc *p, const struct vt_exit_rec *r, uint32_t size)
{
	if (size < sizeof *r)
		return;
	p->have_exit_rec = 1;
	if (!p->clean_exit) /* the state word is the truth; the record fills gaps */
		p->exit_code = r->code;
}

/* ---- feed ----------------------------------------------------------- */

/* A size no device can hold (summed, it would wrap every total) or a range
 * that runs past 2^64 is damage, not memory: the event is counted and
 * ignored. A stack id never recorded is only counted (the site is unknown). */
/* A stack id the cache below has not seen: out of line, as it is rare. */
static __attribute__((noinline)) void check_stack(struct vt_model *m, struct vt_proc *p,
                                                  uint32_t *slot, uint32_t stack_id)
{
	struct vt_stack_entry *e;
	HASH_FIND(hh, p->stacks, &stack_id, sizeof stack_id, e);
	if (!e)
		m->totals.unknown_stacks++;
	else
		*slot = stack_id;
}

static inline int event_is_plausible(struct vt_model *m, struct vt_proc *p,
                                     const struct vt_event *ev)
{
	if (ev->bytes > VT_MODEL_MAX_BYTES || ev->addr + ev->bytes < ev->addr) {
		m->totals.implausible++;
		return 0;
	}
	/* every event asks; a job uses a few stacks over and over, and a stack
	 * once recorded stays recorded: a direct-mapped cache of the ids found
	 * spares the hash lookup (4 % of the replay's instructions) */
	uint32_t *slot = &p->known_stacks[ev->stack_id % 64];
	if (ev->stack_id && *slot != ev->stack_id)
		check_stack(m, p, slot, ev->stack_id);
	return 1;
}

void vt_model_feed(struct vt_model *m, uint32_t pi, uint32_t type, const void *rec, uint32_t size)
{
	vt_model_feed_thread(m, pi, 0, type, rec, size);
}

/* An event of `type` (a whole struct vt_event) of process pi, whose
 * thread keeps its last event time at *thread_t. The trace's end time is
 * the caller's: the latest of its processes' last times. */
static inline __attribute__((always_inline)) void feed_event(struct vt_model *m, uint32_t pi,
                                                             uint64_t *thread_t, uint32_t type,
                                                             const struct vt_event *ev)
{
	struct vt_proc *p = &m->procs[pi];
	m->totals.events++;
	if (!event_is_plausible(m, p, ev))
		return;
	uint64_t t = trace_t(p, ev->t_ns);
	if (t < *thread_t)
		m->totals.time_backwards++;
	else
		*thread_t = t;
	if (t > p->last_t_ns)
		p->last_t_ns = t;
	p->last_seq = ev->seq;
	/* nearly every event is one of these two: two tests, where the
	 * switch's table cost five instructions more an event */
	if (type == VT_REC_ALLOC) {
		on_alloc(m, pi, ev);
		return;
	}
	if (type == VT_REC_FREE) {
		on_free(m, pi, ev);
		return;
	}
	switch (type) {
	case VT_REC_COPY:
		on_copy(m, pi, ev);
		break;
	case VT_REC_MAP:
		on_map(m, pi, ev);
		break;
	case VT_REC_UNMAP:
		on_unmap(m, pi, ev);
		break;
	default:
		break; /* reserve/unreserve/memset/trim: no device bytes change */
	}
}

/* n events of process pi, thread tid, in a row, each of the type its
 * header says. The one place the replay of an event is inlined (its
 * callees, with it): called, their entries and exits were a tenth of the
 * replay. */
static __attribute__((noinline)) void feed_events(struct vt_model *m, uint32_t pi, uint32_t tid,
                                                  const struct vt_event *ev, uint32_t n)
{
	/* one thread's events: its time's place is looked up once, and the
	 * trace's end moved once (both were a fiftieth of the replay) */
	struct vt_proc *p = &m->procs[pi];
	uint64_t *thread_t = thread_last_t(p, tid);
	for (uint32_t i = 0; i < n; i++) {
		uint32_t t = VT_HDR_TYPE(ev[i].hdr);
		if (t >= VT_REC_ALLOC && t <= VT_REC_POOL_TRIM)
			feed_event(m, pi, thread_t, t, &ev[i]);
	}
	if (p->last_t_ns > m->end_t_ns)
		m->end_t_ns = p->last_t_ns;
}

void vt_model_feed_events(struct vt_model *m, uint32_t pi, uint32_t tid, const struct vt_event *ev,
                          uint32_t n)
{
	if (pi >= m->nprocs)
		return;
	m->totals.records += n;
	feed_events(m, pi, tid, ev, n);
}

void vt_model_feed_thread(struct vt_model *m, uint32_t pi, uint32_t tid, uint32_t type,
                          const void *rec, uint32_t size)
{
	if (pi >= m->nprocs || !rec)
		return;
	struct vt_proc *p = &m->procs[pi];
	m->totals.records++;
	if (type >= VT_REC_ALLOC && type <= VT_REC_POOL_TRIM) {
		if (size < sizeof(struct vt_event))
			return;
		/* its type is the caller's (a record's header may say another:
		 * the compact free's): a copy that says it, so that the run's
		 * loop need not ask which */
		struct vt_event ev;
		memcpy(&ev, rec, sizeof ev);
		ev.hdr = VT_HDR(type, sizeof ev);
		feed_events(m, pi, tid, &ev, 1);
		return;
	}
	switch (type) {
	case VT_REC_STACK:
		on_stack(p, rec, size);
		break;
	case VT_REC_MODULE:
		on_module(p, rec, size);
		break;
	case VT_REC_MARK:
		on_mark(m, p, rec, size);
		break;
	case VT_REC_MEMINFO:
		on_meminfo(m, p, rec, size);
		break;
	case VT_REC_DEVICE:
		on_device(m, rec, size);
		break;
	case VT_REC_NVML:
		on_nvml(p, rec, size);
		break;
	case VT_REC_EXIT:
		on_exit_rec(p, rec, size);
		break;
	default:
		break;
	}
}

void vt_model_end_process(struct vt_model *m, uint32_t pi)
{
	if (pi >= m->nprocs)
		return;
	struct vt_proc *p = &m->procs[pi];
	if (p->live)
		m->consumer->end_process(m, pi);
	/* live allocations stay live (t_free = NEVER); the replay state goes */
	free_thread_times(p);
	if (p->live) {
		vt_ival_destroy(p->live);
		free(p->live);
		p->live = NULL;
	}
	struct vt_handle_entry *h, *htmp;
	HASH_ITER(hh, p->handles, h, htmp)
	{
		HASH_DEL(p->handles, h);
		free(h);
	}
}

/* ---- the end of the replay ------------------------------------------- */

struct vt_stack_entry *vt_model_cached_stack(struct vt_model *m, struct vt_stack_cache *sc,
                                             uint32_t proc, uint32_t id)
{
	if (!id)
		return NULL;
	if (proc != sc->proc) {
		memset(sc->slot, 0, sizeof sc->slot);
		sc->proc = proc;
	}
	struct vt_stack_entry *e = sc->slot[id % VT_STACK_CACHE];
	if (e && e->s.id == id)
		return e;
	HASH_FIND(hh, m->procs[proc].stacks, &id, sizeof id, e);
	if (e)
		sc->slot[id % VT_STACK_CACHE] = e;
	return e;
}

static int range_cmp(const void *a, const void *b)
{
	const struct vt_copy_range *x = a, *y = b;
	if (x->alloc != y->alloc)
		return x->alloc < y->alloc ? -1 : 1;
	return x->offset < y->offset ? -1 : x->offset > y->offset;
}

static void frame_fanin(struct vt_model *m)
{
	for (uint32_t pi = 0; pi < m->nprocs; pi++) {
		struct vt_proc *p = &m->procs[pi];
		struct vt_stack_entry *e, *tmp;
		HASH_ITER(hh, p->stacks, e, tmp)
		{
			if (!e->s.alloc_uses)
				continue;
			p->alloc_stacks++;
			for (uint16_t k = 0; k < e->s.depth; k++) {
				uint64_t ip = e->s.frames[k];
				int again = 0; /* recursion: count a frame once per stack */
				for (uint16_t j = 0; j < k && !again; j++)
					again = e->s.frames[j] == ip;
				if (again)
					continue;
				struct vt_frame_fanin *f;
				HASH_FIND(hh, p->fanin, &ip, sizeof ip, f);
				if (!f) {
					f = calloc(1, sizeof *f);
					if (!f)
						vt_nomem();
					f->ip = ip;
					HASH_ADD(hh, p->fanin, ip, sizeof f->ip, f);
				}
				f->stacks++;
			}
		}
	}
}

void vt_model_finish(struct vt_model *m)
{
	if (m->finished)
		return;
	for (uint32_t i = 0; i < m->nprocs; i++)
		vt_model_end_process(m, i);
	m->consumer->finish(m); /* peaks, end bytes, stack uses */
	frame_fanin(m);
	/* ranges sorted by (alloc, offset) for vt_model_ranges; the hash index
	 * pointing into them is no longer needed */
	vt_model_drop_range_index(m);
	if (m->nranges)
		qsort(m->ranges, m->nranges, sizeof *m->ranges, range_cmp);
	m->finished = 1;
}
