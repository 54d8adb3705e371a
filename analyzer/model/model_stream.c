/* The streaming model's state (see model_stream.h): recycled allocation
 * records, each process's live bytes and peak per device, and the
 * snapshots of what was live at those peaks: the replay's consumer
 * (model_consumer.h) that a streaming model is made with. */
#include "model_stream.h"

#include <stdlib.h>
#include <string.h>

#include "live_curve.h"
#include "model_consumer.h"
#include "model_internal.h"

/* One process's replay state. */
struct stream_proc {
	struct vt_replay_peak dev[VT_MAX_DEVICES];   /* live bytes and peak so far */
	uint32_t entry[VT_MAX_DEVICES];              /* its vt_stream_peak, VT_NO_INDEX none */
	uint8_t pending[VT_MAX_DEVICES];             /* a peak not yet snapshotted */
	struct vt_stack_cache stacks;                /* this process's stack lookups */
	struct vt_live_curve *curve[VT_MAX_DEVICES]; /* live bytes over time, NULL unused */
	uint64_t steps;                              /* step markers */
	int ended;
};

struct snap_item {
	uint32_t stack_id, idx;
	uint64_t bytes;
};

struct vt_stream {
	uint32_t *free_records; /* recycled indices of m->allocs */
	uint32_t nfree, cap_free;
	uint64_t retired;
	struct stream_proc **procs;
	uint32_t nprocs;
	struct stream_proc *last; /* procs[last_proc]: the replay asks several */
	uint32_t last_proc;       /* times an event, always for the same process */
	struct vt_stream_peak *peaks;
	uint32_t npeaks, cap_peaks;
	struct snap_item *scratch; /* a snapshot's live allocations */
	uint32_t cap_scratch;
	uint32_t procs_on_device[VT_MAX_DEVICES];
	uint64_t combined[VT_MAX_DEVICES][2]; /* the bounds of each device's peak (finish) */
	struct vt_stream_peak failures[VT_STREAM_FAILURES]; /* the first failed allocations */
	uint32_t nfailures;
};

int vt_model_is_streaming(const struct vt_model *m)
{
	return m->stream != NULL;
}

static void stream_free(struct vt_stream *s)
{
	if (!s)
		return;
	for (uint32_t i = 0; i < s->nprocs; i++) {
		for (int d = 0; s->procs[i] && d < VT_MAX_DEVICES; d++)
			free(s->procs[i]->curve[d]);
		free(s->procs[i]);
	}
	for (uint32_t i = 0; i < s->npeaks; i++)
		free(s->peaks[i].sites);
	for (uint32_t i = 0; i < s->nfailures; i++)
		free(s->failures[i].sites);
	free(s->procs);
	free(s->peaks);
	free(s->scratch);
	free(s->free_records);
	free(s);
}

/* ---- records ------------------------------------------------------------ */

static void count_use(struct vt_model *m, uint32_t proc, uint32_t stack_id, int copy);

static uint32_t take_record(struct vt_model *m, uint32_t proc, uint32_t stack_id)
{
	struct vt_stream *s = m->stream;
	count_use(m, proc, stack_id, 0);
	return s->nfree ? s->free_records[--s->nfree] : VT_NO_INDEX;
}

static void retire(struct vt_model *m, uint32_t idx)
{
	struct vt_stream *s = m->stream;
	const struct vt_alloc *a = &m->allocs[idx];
	/* A handle freed while a mapping still names it (its value was reused:
	 * records were lost) stays, dead, as in the full model: reused, the
	 * mapping's later unmap would end another allocation. */
	if ((a->flags & VT_AF_HANDLE) && vt_model_copies(m, a)->maps)
		return;
	vt_model_forget_copies(m, idx);
	s->free_records = vt_model_grow(s->free_records, &s->cap_free, s->nfree, sizeof(uint32_t));
	s->free_records[s->nfree++] = idx;
	s->retired++;
}

/* ---- per process -------------------------------------------------------- */

static struct stream_proc *proc_state_slow(struct vt_stream *s, uint32_t proc)
{
	if (proc >= s->nprocs) {
		uint32_t n = proc + 1;
		struct stream_proc **v = realloc(s->procs, n * sizeof *v);
		if (!v)
			vt_nomem();
		memset(v + s->nprocs, 0, (n - s->nprocs) * sizeof *v);
		s->procs = v;
		s->nprocs = n;
	}
	if (!s->procs[proc]) {
		struct stream_proc *sp = calloc(1, sizeof *sp);
		if (!sp)
			vt_nomem();
		memset(sp->entry, 0xff, sizeof sp->entry); /* VT_NO_INDEX */
		s->procs[proc] = sp;
	}
	s->last = s->procs[proc];
	s->last_proc = proc;
	return s->last;
}

static inline struct stream_proc *proc_state(struct vt_stream *s, uint32_t proc)
{
	return s->last && s->last_proc == proc ? s->last : proc_state_slow(s, proc);
}

uint64_t vt_stream_steps(const struct vt_model *m, uint32_t proc)
{
	const struct vt_stream *s = m->stream;
	return s && proc < s->nprocs && s->procs[proc] ? s->procs[proc]->steps : 0;
}

static void count_use(struct vt_model *m, uint32_t proc, uint32_t stack_id, int copy)
{
	if (proc >= m->nprocs)
		return;
	struct vt_stack_entry *e =
	    vt_model_cached_stack(m, &proc_state(m->stream, proc)->stacks, proc, stack_id);
	if (!e)
		return; /* never recorded: counted as unknown by the replay */
	if (copy)
		e->s.copy_uses++;
	else
		e->s.alloc_uses++;
}

/* ---- snapshots ---------------------------------------------------------- */

static int by_stack(const void *pa, const void *pb)
{
	const struct snap_item *a = pa, *b = pb;
	if (a->stack_id != b->stack_id)
		return a->stack_id < b->stack_id ? -1 : 1;
	return a->idx < b->idx ? -1 : a->idx > b->idx;
}

static int site_by_bytes(const void *pa, const void *pb)
{
	const struct vt_stream_site *a = pa, *b = pb;
	if (a->bytes != b->bytes)
		return a->bytes > b->bytes ? -1 : 1;
	return a->stack_id < b->stack_id ? -1 : a->stack_id > b->stack_id;
}

static struct vt_stream_peak *peak_entry(struct vt_stream *s, struct stream_proc *sp, uint32_t proc,
                                         uint8_t dev)
{
	if (sp->entry[dev] == VT_NO_INDEX) {
		s->peaks = vt_model_grow(s->peaks, &s->cap_peaks, s->npeaks, sizeof *s->peaks);
		sp->entry[dev] = s->npeaks;
		s->peaks[s->npeaks++] = (struct vt_stream_peak){.proc = proc, .device = dev};
		s->procs_on_device[dev]++;
	}
	return &s->peaks[sp->entry[dev]];
}

/* Insert a into the largest-first list if it is among the largest. */
static void keep_largest(struct vt_stream_peak *pk, const struct vt_model *m, uint32_t idx)
{
	const struct vt_alloc *a = &m->allocs[idx];
	uint32_t n = pk->nlargest;
	if (n == VT_STREAM_LARGEST && a->bytes <= pk->largest[n - 1].bytes)
		return;
	uint32_t i = n < VT_STREAM_LARGEST ? n++ : n - 1;
	while (i > 0 && pk->largest[i - 1].bytes < a->bytes) {
		pk->largest[i] = pk->largest[i - 1];
		i--;
	}
	pk->largest[i] = (struct vt_stream_alloc){
	    .bytes = a->bytes,
	    .t_alloc = a->t_alloc,
	    .h2d_bytes = vt_model_copies(m, a)->h2d_bytes,
	    .stack_id = a->stack_id,
	    .api = a->api,
	    .kind = a->kind,
	};
	pk->nlargest = n;
}

/* What process proc holds on dev now: its live allocations there by stack,
 * and the largest. Returns their bytes. */
static uint64_t fill_snapshot(struct vt_model *m, uint32_t proc, uint8_t dev,
                              struct vt_stream_peak *pk)
{
	struct vt_stream *s = m->stream;
	pk->nlargest = 0;
	s->scratch = vt_model_grow(s->scratch, &s->cap_scratch, m->nallocs, sizeof *s->scratch);
	uint32_t n = 0;
	uint64_t bytes = 0;
	for (uint32_t i = 0; i < m->nallocs; i++) {
		const struct vt_alloc *a = &m->allocs[i];
		if (a->t_free != VT_T_NEVER || a->proc != proc || a->device != dev ||
		    !(a->flags & VT_AF_CHARGED))
			continue;
		s->scratch[n++] = (struct snap_item){a->stack_id, i, a->bytes};
		bytes += a->bytes;
		keep_largest(pk, m, i);
	}
	pk->live_allocs = n;
	qsort(s->scratch, n, sizeof *s->scratch, by_stack);
	uint32_t nsites = 0;
	for (uint32_t i = 0; i < n; i++)
		nsites += i == 0 || s->scratch[i].stack_id != s->scratch[i - 1].stack_id;
	free(pk->sites);
	pk->sites = malloc((nsites ? nsites : 1) * sizeof *pk->sites);
	if (!pk->sites)
		vt_nomem();
	pk->nsites = 0;
	for (uint32_t i = 0; i < n; i++) {
		if (i == 0 || s->scratch[i].stack_id != s->scratch[i - 1].stack_id)
			pk->sites[pk->nsites++] =
			    (struct vt_stream_site){.stack_id = s->scratch[i].stack_id};
		struct vt_stream_site *st = &pk->sites[pk->nsites - 1];
		st->allocs++;
		st->bytes += s->scratch[i].bytes;
	}
	qsort(pk->sites, pk->nsites, sizeof *pk->sites, site_by_bytes);
	return bytes;
}

/* What process proc holds on dev now, which is what it held at its last
 * peak there (nothing on dev has been freed since). */
static void snapshot(struct vt_model *m, uint32_t proc, uint8_t dev)
{
	struct stream_proc *sp = proc_state(m->stream, proc);
	struct vt_stream_peak *pk = peak_entry(m->stream, sp, proc, dev);
	const struct vt_replay_peak *r = &sp->dev[dev];
	pk->bytes = r->peak;
	pk->t_ns = r->t_ns;
	pk->seq = r->seq;
	fill_snapshot(m, proc, dev, pk);
	sp->pending[dev] = 0;
}

static void failed(struct vt_model *m, uint32_t proc, uint8_t dev, uint64_t t, uint64_t seq)
{
	struct vt_stream *s = m->stream;
	if (s->nfailures == VT_STREAM_FAILURES)
		return;
	struct vt_stream_peak *f = &s->failures[s->nfailures++];
	*f = (struct vt_stream_peak){.proc = proc, .device = dev, .t_ns = t, .seq = seq};
	if (dev != VT_DEVICE_UNKNOWN) /* else nothing is charged to it: empty */
		f->bytes = fill_snapshot(m, proc, dev, f);
}

const struct vt_stream_peak *vt_stream_failures(const struct vt_model *m, uint32_t *n)
{
	*n = m->stream ? m->stream->nfailures : 0;
	return m->stream ? m->stream->failures : NULL;
}

static void charge(struct vt_model *m, const struct vt_alloc *a, int is_free, uint64_t t,
                   uint64_t seq)
{
	struct stream_proc *sp = proc_state(m->stream, a->proc);
	/* before the first fall after a peak, what is live is what was then */
	if (is_free && sp->pending[a->device])
		snapshot(m, a->proc, a->device);
	if (vt_replay_peak_charge(&sp->dev[a->device], a->bytes, is_free, t, seq))
		sp->pending[a->device] = 1;
	struct vt_live_curve *c = sp->curve[a->device];
	if (!c) { /* the first charge on this device: the curve starts here */
		if (!(c = sp->curve[a->device] = malloc(sizeof *c)))
			vt_nomem();
		vt_curve_init(c, t, 10); /* 1 us buckets to start */
	}
	vt_curve_add(c, t, sp->dev[a->device].live);
}

const struct vt_live_curve *vt_stream_curve(const struct vt_model *m, uint32_t proc, uint8_t dev)
{
	const struct vt_stream *s = m->stream;
	return s && proc < s->nprocs && s->procs[proc] ? s->procs[proc]->curve[dev] : NULL;
}

static void end_process(struct vt_model *m, uint32_t proc)
{
	struct vt_stream *s = m->stream;
	struct stream_proc *sp = proc_state(s, proc);
	if (sp->ended)
		return;
	sp->ended = 1;
	for (int d = 0; d < VT_MAX_DEVICES; d++) {
		if (sp->pending[d])
			snapshot(m, proc, (uint8_t)d);
		if (sp->entry[d] != VT_NO_INDEX)
			s->peaks[sp->entry[d]].end_bytes = sp->dev[d].live;
	}
}

/* The bounds of dev's combined peak (vt_stream_combined_peak), worked out
 * once: a report asks for every process's entry, and a trace of many short
 * processes on one GPU would redo the grid for each. */
static void combine(struct vt_model *m, int dev, uint64_t *at_least, uint64_t *at_most)
{
	const struct vt_stream *s = m->stream;
	const struct vt_live_curve **curves =
	    calloc(s && s->npeaks ? s->npeaks : 1, sizeof *curves);
	if (!curves)
		vt_nomem();
	uint32_t n = 0;
	uint64_t own = 0, end = 0;
	for (uint32_t i = 0; s && i < s->npeaks; i++) {
		const struct vt_stream_peak *pk = &s->peaks[i];
		if (pk->device != dev)
			continue;
		own = pk->bytes > own ? pk->bytes : own;
		end += pk->end_bytes;
		const struct vt_live_curve *c = vt_stream_curve(m, pk->proc, pk->device);
		if (c)
			curves[n++] = c;
	}
	*at_least = own > end ? own : end; /* one process's peak; all that was left */
	*at_most = vt_curves_sum_bound(curves, n);
	if (*at_most < *at_least)
		*at_most = *at_least;
	free(curves);
}

/* Each device's peak: the largest of its processes' own peaks (exact when
 * one process used it); at the end, what every process still held. */
static void finish(struct vt_model *m)
{
	struct vt_stream *s = m->stream;
	for (uint32_t i = 0; i < s->npeaks; i++) {
		const struct vt_stream_peak *pk = &s->peaks[i];
		struct vt_device *d = &m->devices[pk->device];
		d->end_bytes += pk->end_bytes;
		if (pk->bytes > d->peak_bytes) {
			d->peak_bytes = pk->bytes;
			d->peak_t_ns = pk->t_ns;
			d->peak_proc = pk->proc;
			d->peak_seq = pk->seq;
		}
	}
	for (int dev = 0; dev < VT_MAX_DEVICES; dev++)
		if (s->procs_on_device[dev])
			combine(m, dev, &s->combined[dev][0], &s->combined[dev][1]);
}

/* ---- the replay's consumer ---------------------------------------------- */

static void freed(struct vt_model *m, struct vt_proc *p, uint32_t idx)
{
	(void)p; /* no free order: the record is reused */
	retire(m, idx);
}

/* No per-offset ranges (they grow with the trace); a stack that filled a
 * part counts as an upload site, as in the full model's count. */
static void uploaded(struct vt_model *m, uint32_t idx, uint64_t off, const struct vt_event *ev,
                     uint64_t t, int first, int partial)
{
	(void)off, (void)t;
	if (first || partial)
		count_use(m, m->allocs[idx].proc, ev->stack_id, 1);
}

/* One marker per step would grow with the trace: steps are counted. */
static void mark(struct vt_model *m, struct vt_proc *p, const struct vt_mark_rec *r, uint64_t t)
{
	if (vt_mark_is_step(r->kind, r->text, r->text_len))
		proc_state(m->stream, (uint32_t)(p - m->procs))->steps++;
	else
		vt_model_keep_mark(p, r, t);
}

/* One per cuMemGetInfo call: only the capacity (taken by the replay) is kept. */
static void meminfo(struct vt_model *m, struct vt_proc *p, const struct vt_meminfo_rec *r,
                    uint64_t t)
{
	(void)m, (void)p, (void)r, (void)t;
}

static void destroy(struct vt_model *m)
{
	stream_free(m->stream);
}

static const struct vt_replay_consumer streaming = {
    .take_record = take_record,
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

struct vt_model *vt_model_new_streaming(void)
{
	struct vt_model *m = vt_model_create(&streaming);
	if (m && !(m->stream = calloc(1, sizeof *m->stream))) {
		vt_model_free(m);
		return NULL;
	}
	return m;
}

/* ---- queries ------------------------------------------------------------ */

void vt_stream_combined_peak(const struct vt_model *m, int dev, uint64_t *at_least,
                             uint64_t *at_most)
{
	const struct vt_stream *s = m->stream;
	int ok = s && dev >= 0 && dev < VT_MAX_DEVICES;
	*at_least = ok ? s->combined[dev][0] : 0;
	*at_most = ok ? s->combined[dev][1] : 0;
}

const struct vt_stream_peak *vt_stream_peaks(const struct vt_model *m, uint32_t *n)
{
	*n = m->stream ? m->stream->npeaks : 0;
	return m->stream ? m->stream->peaks : NULL;
}

uint32_t vt_stream_records_high(const struct vt_model *m)
{
	return m->stream ? m->nallocs : 0; /* records are reused, never given back */
}

uint64_t vt_stream_retired(const struct vt_model *m)
{
	return m->stream ? m->stream->retired : 0;
}

uint32_t vt_stream_procs_on_device(const struct vt_model *m, int dev)
{
	return m->stream && dev >= 0 && dev < VT_MAX_DEVICES ? m->stream->procs_on_device[dev] : 0;
}

void vt_stream_live_now(const struct vt_model *m, uint32_t proc, uint8_t dev, uint64_t *live,
                        uint64_t *peak)
{
	const struct vt_stream *s = m->stream;
	const struct stream_proc *sp = s && proc < s->nprocs ? s->procs[proc] : NULL;
	*live = sp ? sp->dev[dev].live : 0;
	*peak = sp ? sp->dev[dev].peak : 0;
}

uint64_t vt_stream_snapshot_now(struct vt_model *m, uint32_t proc, uint8_t dev,
                                struct vt_stream_peak *out)
{
	*out = (struct vt_stream_peak){.proc = proc, .device = dev};
	if (!m->stream)
		return 0;
	out->bytes = fill_snapshot(m, proc, dev, out);
	return out->bytes;
}
