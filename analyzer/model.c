/* Replay of process logs into the memory model (see model.h). */
#include "model.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <uthash.h>

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

/* Grow *arr (element size elem) so that index n fits. Exits on OOM: the
 * analyzer cannot say anything true with half a model. */
static void *grow(void *arr, uint32_t *cap, uint32_t n, size_t elem)
{
	if (n < *cap)
		return arr;
	uint32_t c = *cap ? *cap : 16;
	while (c <= n)
		c = c > UINT32_MAX / 2 ? UINT32_MAX : c * 2;
	void *p = realloc(arr, (size_t)c * elem);
	if (!p) {
		fprintf(stderr, "vramtrace: out of memory while building the model\n");
		exit(3);
	}
	*cap = c;
	return p;
}
#define GROW(arr, cap, n) ((arr) = grow((arr), &(cap), (n), sizeof *(arr)))

static char *dup_n(const char *s, size_t n)
{
	char *d = malloc(n + 1);
	if (!d) {
		fprintf(stderr, "vramtrace: out of memory\n");
		exit(3);
	}
	memcpy(d, s, n);
	d[n] = 0;
	return d;
}

/* ---- lifecycle ------------------------------------------------------ */

struct vt_model *vt_model_new(void)
{
	struct vt_model *m = calloc(1, sizeof *m);
	return m;
}

static void free_proc(struct vt_proc *p)
{
	for (uint32_t i = 0; i < p->nmarks; i++)
		free(p->marks[i].text);
	for (uint32_t i = 0; i < p->nmodules; i++)
		free(p->modules[i].path);
	free(p->marks);
	free(p->modules);
	free(p->meminfo);
	struct vt_stack_entry *s, *stmp;
	HASH_ITER(hh, p->stacks, s, stmp) {
		HASH_DEL(p->stacks, s);
		free(s->s.frames);
		free(s);
	}
	struct vt_handle_entry *h, *htmp;
	HASH_ITER(hh, p->handles, h, htmp) {
		HASH_DEL(p->handles, h);
		free(h);
	}
	struct vt_frame_fanin *fi, *ftmp;
	HASH_ITER(hh, p->fanin, fi, ftmp) {
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
	HASH_ITER(hh, m->range_index, r, rtmp) {
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
	HASH_ITER(hh, m->site_names, sn, sntmp) {
		HASH_DEL(m->site_names, sn);
		free(sn->name);
		free(sn);
	}
	for (int k = 0; k < 2; k++) {
		struct vt_site_funnel *fu, *futmp;
		HASH_ITER(hh, m->site_funnels[k], fu, futmp) {
			HASH_DEL(m->site_funnels[k], fu);
			free(fu->function);
			free(fu->inner);
			free(fu);
		}
	}
	if (m->sites && m->sites_close)
		m->sites_close(m->sites);
	for (int d = 0; d < VT_MAX_DEVICES; d++)
		free(m->devices[d].name);
	free(m->allocs);
	free(m->free_order);
	free(m->ranges);
	free(m->failed);
	free(m->procs);
	free(m);
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
		p->clock_offset_ns = hdr->clock_base_ns >= trace_start_ns
		                         ? hdr->clock_base_ns - trace_start_ns : 0;
		p->clean_exit = VT_STATE_OF(hdr->state) == VT_STATE_EXITED;
		p->exit_code = p->clean_exit ? VT_EXIT_CODE_OF(hdr->state) : 0;
		p->exe = dup_n(hdr->exe, strnlen(hdr->exe, hdr->exe_len < sizeof hdr->exe
		                                               ? hdr->exe_len : sizeof hdr->exe));
		size_t cl = hdr->cmdline_len < sizeof hdr->cmdline ? hdr->cmdline_len
		                                                   : sizeof hdr->cmdline;
		p->cmdline = dup_n(hdr->cmdline, cl);
		p->hostname = dup_n(hdr->hostname, strnlen(hdr->hostname, sizeof hdr->hostname));
	} else {
		p->exe = dup_n("", 0);
		p->cmdline = dup_n("", 0);
		p->hostname = dup_n("", 0);
	}
	p->alloc_begin = p->alloc_end = m->nallocs;
	p->free_begin = p->free_end = m->nfree_order;
	p->live = calloc(1, sizeof *p->live);
	if (!p->live) {
		fprintf(stderr, "vramtrace: out of memory\n");
		exit(3);
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

/* ---- allocations ---------------------------------------------------- */

static uint64_t trace_t(const struct vt_proc *p, uint64_t t_ns)
{
	return t_ns + p->clock_offset_ns;
}

static void record_free(struct vt_model *m, struct vt_proc *p, uint32_t idx, uint64_t t,
                        uint64_t seq)
{
	struct vt_alloc *a = &m->allocs[idx];
	if (a->t_free != VT_T_NEVER)
		return;
	a->t_free = t;
	a->seq_free = seq;
	GROW(m->free_order, m->cap_free_order, m->nfree_order);
	m->free_order[m->nfree_order++] = idx;
	p->free_end = m->nfree_order;
}

static int is_charged(uint8_t kind)
{
	return kind != VT_ALLOC_HOST && kind != VT_ALLOC_IPC;
}

static int is_handle_kind(uint8_t kind)
{
	return kind == VT_ALLOC_VMM || kind == VT_ALLOC_ARRAY;
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
			.t_ns = t, .seq = ev->seq, .bytes = ev->bytes, .proc = pi,
			.stack_id = ev->stack_id, .result = ev->result, .api = ev->api,
			.device = ev->device, .kind = ev->kind,
		};
		m->totals.failed_allocs++;
		return;
	}
	m->totals.alloc_calls++;
	int handle = is_handle_kind(ev->kind);
	if (!handle) {
		/* an ALLOC over a live address: its FREE was lost; close it now */
		const struct vt_ival *old = vt_ival_find(p->live, ev->addr);
		if (old && !old->is_mapping) {
			struct vt_ival gone;
			vt_ival_erase(p->live, old->start, &gone);
			m->allocs[gone.alloc].flags |= VT_AF_IMPLICIT_FREE;
			record_free(m, p, gone.alloc, t, ev->seq);
			m->totals.implicit_frees++;
		}
	}
	GROW(m->allocs, m->cap_allocs, m->nallocs);
	uint32_t idx = m->nallocs++;
	struct vt_alloc *a = &m->allocs[idx];
	memset(a, 0, sizeof *a);
	a->addr = ev->addr;
	a->bytes = ev->bytes;
	a->t_alloc = t;
	a->seq_alloc = ev->seq;
	a->t_free = a->seq_free = VT_T_NEVER;
	a->t_first_h2d = a->t_last_h2d = VT_T_NEVER;
	a->stack_id = ev->stack_id;
	a->d2d_src = VT_NO_INDEX;
	a->proc = pi;
	a->api = ev->api;
	a->rt_api = ev->rt_api;
	a->device = ev->device;
	a->kind = ev->kind;
	a->category = VT_CAT_UNKNOWN;
	a->reason = "not classified";
	if (is_charged(ev->kind))
		a->flags |= VT_AF_CHARGED;
	p->alloc_end = m->nallocs;
	if (handle) {
		a->flags |= VT_AF_HANDLE;
		struct vt_handle_entry *h;
		HASH_FIND(hh, p->handles, &ev->addr, sizeof ev->addr, h);
		if (!h) {
			h = calloc(1, sizeof *h);
			if (!h)
				exit(3);
			h->handle = ev->addr;
			HASH_ADD(hh, p->handles, handle, sizeof h->handle, h);
		} else {
			record_free(m, p, h->alloc, t, ev->seq); /* handle value reused */
		}
		h->alloc = idx;
		return;
	}
	struct vt_ival iv = {.start = ev->addr, .len = ev->bytes ? ev->bytes : 1, .alloc = idx};
	if (vt_ival_insert(p->live, &iv) != 0)
		exit(3);
}

/* A VMM handle's memory is gone once it is released and no longer mapped. */
static void maybe_retire_handle(struct vt_model *m, struct vt_proc *p, uint32_t idx, uint64_t t,
                                uint64_t seq)
{
	struct vt_alloc *a = &m->allocs[idx];
	if ((a->flags & VT_AF_RELEASED) && a->maps == 0)
		record_free(m, p, idx, t, seq);
}

static int free_handle(struct vt_model *m, struct vt_proc *p, const struct vt_event *ev,
                       uint64_t t)
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

static int free_address(struct vt_model *m, struct vt_proc *p, const struct vt_event *ev,
                        uint64_t t)
{
	const struct vt_ival *iv = vt_ival_exact(p->live, ev->addr);
	if (!iv || iv->is_mapping)
		return 0;
	struct vt_ival gone;
	vt_ival_erase(p->live, ev->addr, &gone);
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
	struct vt_ival iv = {.start = ev->addr, .len = ev->bytes ? ev->bytes : 1,
	                     .offset = ev->stream, .alloc = h->alloc, .is_mapping = 1};
	const struct vt_ival *old = vt_ival_exact(p->live, ev->addr);
	if (old && old->is_mapping) {
		m->allocs[old->alloc].maps--;
	}
	if (vt_ival_insert(p->live, &iv) != 0)
		exit(3);
	m->allocs[h->alloc].maps++;
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
	struct vt_alloc *a = &m->allocs[gone.alloc];
	if (a->maps)
		a->maps--;
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

static void note_partial_copy(struct vt_model *m, uint32_t idx, uint64_t off,
                              const struct vt_event *ev, uint64_t t)
{
	struct vt_range_key key = {.alloc = idx, .offset = off};
	struct vt_range_entry *e;
	HASH_FIND(hh, m->range_index, &key, sizeof key, e);
	if (!e) {
		e = calloc(1, sizeof *e);
		if (!e)
			exit(3);
		e->key = key;
		GROW(m->ranges, m->cap_ranges, m->nranges);
		e->range = m->nranges++;
		m->ranges[e->range] = (struct vt_copy_range){
			.alloc = idx, .stack_id = ev->stack_id, .offset = off, .t_first = t,
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

static void attach_h2d(struct vt_model *m, uint32_t idx, uint64_t off, const struct vt_event *ev,
                       uint64_t t)
{
	struct vt_alloc *a = &m->allocs[idx];
	if (a->h2d_copies == 0) {
		a->t_first_h2d = t;
		a->h2d_stack_id = ev->stack_id;
	}
	a->h2d_copies++;
	a->h2d_bytes += ev->bytes;
	a->t_last_h2d = t;
	if (off != 0 || ev->bytes < a->bytes)
		note_partial_copy(m, idx, off, ev, t);
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
		if (dst != VT_NO_INDEX)
			attach_h2d(m, dst, doff, ev, t);
		else
			m->totals.copy_unattached++;
		break;
	case VT_COPY_DTOH:
		m->totals.dtoh_calls++;
		if (src != VT_NO_INDEX) {
			m->allocs[src].d2h_copies++;
			m->allocs[src].d2h_bytes += ev->bytes;
		}
		break;
	case VT_COPY_DTOD:
	case VT_COPY_PEER:
		m->totals.dtod_calls++;
		if (dst != VT_NO_INDEX) {
			struct vt_alloc *a = &m->allocs[dst];
			if (a->d2d_in_copies++ == 0)
				a->d2d_src = src;
			a->d2d_in_bytes += ev->bytes;
		}
		if (src != VT_NO_INDEX) {
			m->allocs[src].d2d_out_copies++;
			m->allocs[src].d2d_out_bytes += ev->bytes;
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
		exit(3);
	e->s.id = r->stack_id;
	e->s.depth = r->depth;
	e->s.py_depth = r->py_depth;
	e->s.frames = malloc((want ? want : 1) * sizeof(uint64_t));
	if (!e->s.frames)
		exit(3);
	memcpy(e->s.frames, r->frames, want * sizeof(uint64_t));
	HASH_ADD(hh, p->stacks, s.id, sizeof e->s.id, e);
}

static void on_module(struct vt_proc *p, const struct vt_module_rec *r, uint32_t size)
{
	if (size < sizeof *r || sizeof *r + r->path_len > size)
		return;
	GROW(p->modules, p->cap_modules, p->nmodules);
	p->modules[p->nmodules++] = (struct vt_module){
		.seq = r->seq, .base = r->base, .lo = r->lo, .hi = r->hi, .event = r->event,
		.path = dup_n(r->path, r->path_len),
	};
}

static void on_mark(struct vt_model *m, struct vt_proc *p, const struct vt_mark_rec *r,
                    uint32_t size)
{
	if (size < sizeof *r || sizeof *r + r->text_len > size)
		return;
	GROW(p->marks, p->cap_marks, p->nmarks);
	p->marks[p->nmarks++] = (struct vt_mark){
		.t_ns = trace_t(p, r->t_ns), .seq = r->seq, .value = r->value, .kind = r->kind,
		.text = dup_n(r->text, r->text_len),
	};
	(void)m;
}

static void on_meminfo(struct vt_model *m, struct vt_proc *p, const struct vt_meminfo_rec *r,
                       uint32_t size)
{
	if (size < sizeof *r)
		return;
	GROW(p->meminfo, p->cap_meminfo, p->nmeminfo);
	p->meminfo[p->nmeminfo++] = (struct vt_meminfo){
		.t_ns = trace_t(p, r->t_ns), .seq = r->seq, .free_bytes = r->free_bytes,
		.total_bytes = r->total_bytes, .device = r->device, .reason = r->reason,
	};
	struct vt_device *d = device_of(m, r->device);
	if (d && !d->total_bytes)
		d->total_bytes = r->total_bytes;
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

void vt_model_feed(struct vt_model *m, uint32_t pi, uint32_t type, const void *rec,
                   uint32_t size)
{
	if (pi >= m->nprocs || !rec)
		return;
	struct vt_proc *p = &m->procs[pi];
	m->totals.records++;
	if (type >= VT_REC_ALLOC && type <= VT_REC_POOL_TRIM) {
		if (size < sizeof(struct vt_event))
			return;
		const struct vt_event *ev = rec;
		m->totals.events++;
		uint64_t t = trace_t(p, ev->t_ns);
		if (t > p->last_t_ns)
			p->last_t_ns = t;
		if (t > m->end_t_ns)
			m->end_t_ns = t;
		p->last_seq = ev->seq;
		switch (type) {
		case VT_REC_ALLOC: on_alloc(m, pi, ev); break;
		case VT_REC_FREE: on_free(m, pi, ev); break;
		case VT_REC_COPY: on_copy(m, pi, ev); break;
		case VT_REC_MAP: on_map(m, pi, ev); break;
		case VT_REC_UNMAP: on_unmap(m, pi, ev); break;
		default: break; /* reserve/unreserve/memset/trim: no device bytes change */
		}
		return;
	}
	switch (type) {
	case VT_REC_STACK: on_stack(p, rec, size); break;
	case VT_REC_MODULE: on_module(p, rec, size); break;
	case VT_REC_MARK: on_mark(m, p, rec, size); break;
	case VT_REC_MEMINFO: on_meminfo(m, p, rec, size); break;
	case VT_REC_DEVICE: on_device(m, rec, size); break;
	case VT_REC_EXIT: on_exit_rec(p, rec, size); break;
	default: break;
	}
}

void vt_model_end_process(struct vt_model *m, uint32_t pi)
{
	if (pi >= m->nprocs)
		return;
	struct vt_proc *p = &m->procs[pi];
	/* live allocations stay live (t_free = NEVER); the replay state goes */
	if (p->live) {
		vt_ival_destroy(p->live);
		free(p->live);
		p->live = NULL;
	}
	struct vt_handle_entry *h, *htmp;
	HASH_ITER(hh, p->handles, h, htmp) {
		HASH_DEL(p->handles, h);
		free(h);
	}
}
