/* uthash entries the model keeps per process, and what the replay offers
 * its consumers; private to the model (model*.c) and the site namer. */
#ifndef VT_MODEL_INTERNAL_H
#define VT_MODEL_INTERNAL_H

#include "nomem.h"      /* before <uthash.h>: its out-of-memory exit */
#include "model_hash.h" /* every table below hashed the same way in every file */
#include <uthash.h>

#include "model.h"

struct vt_stack_entry {
	struct vt_model_stack s;
	UT_hash_handle hh;
};

/* A process's stack by id through a small direct-mapped cache: a job
 * allocates through a handful of stacks over and over, and the hash lookup
 * per allocation was most of the passes that count stack uses. Id 0 is
 * "no stack" (NULL), as is an id never recorded. A cache serves one process
 * at a time; asked for another, it starts over. */
#define VT_STACK_CACHE 64
struct vt_stack_cache {
	uint32_t proc;
	struct vt_stack_entry *slot[VT_STACK_CACHE];
};
struct vt_stack_entry *vt_model_cached_stack(struct vt_model *m, struct vt_stack_cache *sc,
                                             uint32_t proc, uint32_t id);

struct vt_frame_fanin {
	uint64_t ip;
	uint32_t stacks;
	UT_hash_handle hh;
};

struct vt_site_name {
	struct {
		uint32_t proc, stack;
	} key;
	char *name;
	UT_hash_handle hh;
};

/* A function the allocation stacks pass through (explain/site_names.c): in how
 * many stacks, whether it always calls the same function below it, and
 * whether it is called from more than one place. */
struct vt_site_funnel {
	char *function;
	uint32_t stacks, last_stack;
	char *inner;    /* the function below it, first seen */
	int many_inner; /* it calls different functions: a dispatcher */
	char *outer;    /* the function above it, first seen */
	int many_outer; /* called from different functions: a wrapper worth seeing past */
	UT_hash_handle hh;
};

struct vt_handle_entry {
	uint64_t handle;
	uint32_t alloc;
	UT_hash_handle hh;
};

struct vt_range_key {
	uint32_t alloc;
	uint32_t pad;
	uint64_t offset;
};

struct vt_range_entry {
	struct vt_range_key key;
	uint32_t range;
	UT_hash_handle hh;
};

/* Grow *arr (element size elem) so that index n fits; *cap doubles. Exits
 * on OOM: the analyzer cannot say anything true with half a model. */
void *vt_model_grow(void *arr, uint32_t *cap, uint32_t n, size_t elem);
/* Drop the (alloc, offset) -> range index once replay is over. */
void vt_model_drop_range_index(struct vt_model *m);
/* Allocation idx's copy statistics go (its record is about to be reused). */
void vt_model_forget_copies(struct vt_model *m, uint32_t idx);
/* The copy statistics' index again, after the allocations were renumbered
 * (their vt_alloc_copies.alloc rewritten). */
void vt_model_reindex_copies(struct vt_model *m);

/* ---- for the replay's consumers (model_consumer.h) ------------------- */
struct vt_replay_consumer;
/* An empty model whose replay hands what it sees to consumer (a static
 * table): the constructors vt_model_new and vt_model_new_streaming. */
struct vt_model *vt_model_create(const struct vt_replay_consumer *consumer);
/* Keep marker r of process p, at trace time t, in p->marks. */
struct vt_mark_rec;
void vt_model_keep_mark(struct vt_proc *p, const struct vt_mark_rec *r, uint64_t t);

/* Live bytes and the peak: 1 when this allocation made a new peak. */
static inline int vt_replay_peak_charge(struct vt_replay_peak *r, uint64_t bytes, int is_free,
                                        uint64_t t, uint64_t seq)
{
	if (is_free) {
		r->live -= bytes;
		return 0;
	}
	r->live += bytes;
	if (r->live <= r->peak)
		return 0;
	r->peak = r->live;
	r->t_ns = t;
	r->seq = seq;
	return 1;
}

/* The record of ev, an allocation of process pi at trace time t with
 * flags (enum vt_alloc_flag), written where it is kept: built elsewhere
 * and copied, its narrow stores and the copy's wide loads stalled the
 * replay (a store forwarded to a wider load waits for the stores). */
static inline void vt_model_new_record(struct vt_alloc *a, uint32_t pi, const struct vt_event *ev,
                                       uint64_t t, uint8_t flags)
{
	*a = (struct vt_alloc){
	    .addr = ev->addr,
	    .bytes = ev->bytes,
	    .t_alloc = t,
	    .t_free = VT_T_NEVER,
	    .seq_alloc = ev->seq,
	    .seq_free = VT_T_NEVER,
	    .stack_id = ev->stack_id,
	    .proc = pi,
	    .api = ev->api,
	    .rt_api = ev->rt_api,
	    .device = ev->device,
	    .kind = ev->kind,
	    .flags = flags,
	    .category = VT_CAT_UNKNOWN,
	    .reason = VT_REASON_UNCLASSIFIED,
	};
}

/* Grow arr so that index n fits (vt_model_grow), the check inline: it runs
 * for every allocation and every free. */
#define GROW(arr, cap, n)                                                                          \
	((n) < (cap) ? (void)0 : (void)((arr) = vt_model_grow((arr), &(cap), (n), sizeof *(arr))))

/* A new record at the end of m->allocs: its index. */
static inline uint32_t vt_model_append_record(struct vt_model *m)
{
	GROW(m->allocs, m->cap_allocs, m->nallocs);
	return m->nallocs++;
}

/* Whether a counts towards its device's live bytes (the replay's charge):
 * charged, on a known device. */
static inline int vt_alloc_charges_device(const struct vt_alloc *a)
{
	return (a->flags & VT_AF_CHARGED) && a->device != VT_DEVICE_UNKNOWN;
}

#endif
