/* What the classifier's rules share (classify.c runs them, classify_*.c hold
 * them by family): the facts gathered for each allocation in one pass, the
 * (size, device) and per-size counters the rules read, the context of the
 * process and device being classified, and the reasons a verdict gives.
 * The facts stay 16 bytes an allocation: the rules' many passes over them
 * are bound by memory traffic (struct facts). Private to the classifier. */
#ifndef VT_CLASSIFY_CTX_H
#define VT_CLASSIFY_CTX_H

#include <stdint.h>

#include "nomem.h" /* before <uthash.h>: its out-of-memory exit */
#include "model_hash.h"
#include <uthash.h>

#include "model.h"
#include "steps.h"

struct vt_fold_size;
struct vt_frame_evidence;
struct vt_upload_sites;

/* Per-allocation facts the rules read, gathered in one pass: the rules'
 * many passes then walk these 16 bytes an allocation instead of the
 * model's 64-byte records (a classifier over millions of allocations is
 * bound by memory traffic, not by instructions), and the array, the
 * classifier's peak memory, is a quarter of the model's. The size is the
 * key's: a job has few distinct (size, device) pairs. */
struct facts {
	uint32_t key;       /* its (size, device) counter: ctx.keys[key] */
	int32_t born, died; /* step of the allocation and of its free */
	uint8_t device;
	unsigned charged : 1, freed : 1, recurring : 1, host_filled : 1, decided : 1;
	unsigned transient : 1; /* recurring only as made and freed within one step */
	unsigned kept : 1;      /* never freed, its size made in most steps */
	/* freed only by the job's teardown (after the last allocation on its
	 * device): kept to the end, as if never freed */
	unsigned torn_down : 1;
	unsigned grown : 1; /* torn down, most of its size kept to the end (mark_recurring) */
};
_Static_assert(sizeof(struct facts) == 16, "classifier facts stay 16 bytes");

/* Allocations of one size on one device: the call site is not part of the
 * key, because frameworks allocate everything through the same allocator
 * frames while the same tensor role recurs with the same size. */
struct key_count {
	struct {
		uint64_t bytes;
		uint32_t device;
		uint32_t pad;
	} key;
	uint32_t count, steps_seen, freed;
	/* of them made in training, and of those the ones never freed or freed
	 * by the teardown */
	uint32_t in_training, kept_from_training;
	uint32_t uploaded_in_training; /* of those made in training, filled from the host */
	int last_step;
	uint32_t index; /* in ctx.keys */
	/* a folding model's counters of this key, NULL when none was folded:
	 * its allocations from the era on are counted there (model_fold.h) */
	const struct vt_fold_size *fold;
	uint32_t torn_unsure; /* of its folded ones, how many the teardown may also have freed */
	UT_hash_handle hh;
};

#define PER_STEP_HIST 8

struct size_count {
	uint64_t bytes;
	uint32_t recurring, steps_seen, long_lived, weights;
	int last_step;
	uint32_t in_step; /* recurring allocations of this size in last_step */
	struct {
		uint32_t count, steps;
	} hist[PER_STEP_HIST]; /* how many steps made `count` of them */
	uint8_t gradient_size; /* recurring allocations of this size are gradients */
	/* long-lived ones made before training / during it (those not from the
	 * host: the twins training makes) */
	uint32_t ll_before, ll_during;
	uint32_t grads_per_step; /* of the recurring ones each step, the last this many
	                            are gradients (the rest: activations of that size) */
	int cur_step;            /* recurring_ones: the step being walked */
	uint32_t idx_in_step;
	uint8_t *is_grad;          /* of the step being walked, by place: a gradient (the
	                              grads_per_step that outlive the rest) */
	uint32_t is_grad_cap;      /* entries is_grad holds */
	uint32_t is_grad_n;        /* entries set for cur_step */
	uint32_t made;             /* per_step() once asked (the histogram is final by
	                              then: count_sizes closed every step), 0 before */
	uint8_t kept;              /* weights_by_kept_twins decided this size */
	uint8_t frozen;            /* weights_by_twin: its weights get no optimizer state */
	uint32_t trained;          /* weights_by_twin: of its weights, those that train (0: all) */
	uint32_t params_flattened; /* parameters of this size packed into a flat buffer */
	uint32_t kept_seen;        /* weights_by_kept_twins: twins of this size walked */
	/* weights_by_kept_twins: when its first and last kept twins were made,
	 * and of its recurring ones those live from before the first to after
	 * the last */
	uint64_t t_first_twin, t_last_twin;
	uint32_t live_across_twins;
	UT_hash_handle hh;
};

struct ctx {
	struct vt_model *m;
	struct vt_proc *p;
	uint32_t proc;
	struct facts *f;                    /* indexed by alloc - p->alloc_begin */
	struct key_count *key_hash, **keys; /* (size, device) counters, by index */
	uint32_t nkeys, cap_keys;
	/* classify_device: the size entry of each key (a key is a size on the
	 * device being classified), so the per-allocation passes look a size
	 * up once per key instead of once per allocation */
	struct size_count **size_by_key;
	uint64_t span_ns;              /* first to last event of the process */
	uint64_t span_events;          /* the same in events (seq) */
	uint64_t readbacks;            /* device-to-host copies out of its allocations */
	struct vt_upload_sites *sites; /* classify_device: tensors filled per upload site */
	/* classify_device, made when first asked: when the device's host-filled
	 * tensors of a loader site were freed (seq, sorted), for
	 * dropped_with_model; loader_frees_n is UINT32_MAX until made */
	uint64_t *loader_frees;
	uint32_t loader_frees_n;
	/* classify_device, found when first asked (first_weight_known): when
	 * the first of the device's weights decided by then came from the host */
	uint64_t first_weight_h2d;
	int first_weight_known;
	struct vt_frame_evidence *fe;          /* what the stacks' names say (frame_rules.def) */
	struct vt_step_table proc_steps;       /* the process's steps */
	struct vt_step_table *own;             /* [VT_MAX_DEVICES]: a device's own steps (t NULL:
	                                          the process's), NULL when no device has its own */
	int dev;                               /* classify_device: the device */
	uint64_t last_alloc_t[VT_MAX_DEVICES]; /* when each device's last allocation was */
	uint64_t last_alloc_any_t;             /* when the process's last allocation was */
	int streams_batches;       /* classify_device: the job feeds it batches from the host */
	uint64_t weights_loaded_t; /* classify_device: when the last weight filled from the
	                              host was, 0 if none */
	int trains;                /* classify_device: gradients or optimizer slots seen on it */
	/* per device: its sizes are a caching allocator's (caching_allocator_sizes,
	 * asked once: the segment rule and classify_device both read it) */
	uint8_t caching_on[VT_MAX_DEVICES];
	/* key_index's direct-mapped cache: a job repeats a handful of sizes
	 * millions of times, and the hash table's probe (hash the key, walk
	 * the bucket, compare) was a quarter of classify_proc's samples */
	struct {
		uint64_t bytes;
		uint32_t index_plus_1; /* 0: empty */
		uint32_t device;
	} key_cache[256];
};

enum reason {
	R_UNCLASSIFIED, /* VT_REASON_UNCLASSIFIED */
	R_NOT_DEVICE,
	R_POOL,
	R_FLAT_BUCKET,
	R_TWIN,
	R_OPTIMIZER,
	R_DATASET,
	R_EARLY_WEIGHTS,
	R_LONG_UNKNOWN,
	R_SERVING_BUFFER,
	R_EARLY_WORKSPACE,
	R_EARLY_STATE,
	R_SAMPLE_STORE,
	R_SERVED_OUTPUT,
	R_CACHED_ACTIVATIONS,
	R_MIRRORS_LOADED,
	R_GATHERED,
	R_COMM_BUFFER,
	R_CARRIED_WEIGHTS,
	R_FROZEN_SIZE,
	R_FROZEN_SIZE_ACT,
	R_CARRIED_STATE,
	R_PREFETCH,
	R_FORWARD,
	R_GRADIENTS,
	R_ACTIVATIONS,
	R_UNFINISHED,
	R_KEPT_WEIGHT,
	R_KEPT_GRADIENT,
	R_TRAINING_COPY,
	R_LOADED_WEIGHTS,
	R_RING,
	R_TRANSIENT_BATCH,
	R_TRANSIENT,
	R_KEPT_PER_STEP,
	R_GROWN_ROWS,
	R_DATA_IN_TRAINING,
	R_BESIDE_MODEL,
	R_FIRST_BEFORE_DATA,
	R_GROWN_SLOTS,
	R_DATASET_BY_NAME,
	R_WEIGHTS_BY_NAME,
	R_OPTIMIZER_BY_NAME,
	R_PREFETCH_BY_NAME,
	R_DATASET_SLICED,
	R_FROZEN_WEIGHTS,
	R_GRAD_BUCKET,
	R_ARENA_CHUNK,
	R_FROZEN_COPY,
	R_CACHING_SEGMENT,
	R_FLATTENED,
	R_GROWING_REGION,
	R_ROW_STORE,
	R_REPLICATED,
	R_CONVERTED_DATA,
	R_TEMP_BUFFER,
	R_GRAD_BUFFER_EARLY,
	R_KEPT_OUTPUTS,
	R_ONE_OFF_SCRATCH,
	R_SERVED_REGION,
	R_VARIED_BATCHES,
	R_UPDATED_STATE,
	R_WARMED_CACHE,
	R_ASSEMBLED_DATA,
	R_UPLOADED_WITH_DATA,
	R_DATA_ROWS,
	R_WEIGHT_COPY,
	R_STAGED_UPLOAD,
	R_DROPPED_WITH_MODEL,
	R_ROWS_EVERY_STEP,
	R_REPLACES,
	R_SLOT_AFTER_GRADIENT,
	R_COUNT
};
_Static_assert(R_UNCLASSIFIED == VT_REASON_UNCLASSIFIED,
               "model.c marks new allocations unclassified");

/* A verdict on allocation a: its category, confidence and reason; its facts
 * f say it is decided. */
static inline void set_cat(struct vt_alloc *a, struct facts *f, int cat, int confidence,
                           enum reason why)
{
	a->category = (uint8_t)cat;
	a->confidence = (uint8_t)confidence;
	a->reason = (uint8_t)why;
	f->decided = 1;
}

/* How long allocation a lived: to its free, or to the end of the model. */
static inline uint64_t lifetime(const struct vt_model *m, const struct vt_alloc *a)
{
	uint64_t end = a->t_free == VT_T_NEVER ? m->end_t_ns : a->t_free;
	return end > a->t_alloc ? end - a->t_alloc : 0;
}

/* How many of its process's events allocation a lived through: to its
 * free, or to the process's last event. A share of the run counted in
 * events does not move with the machine's load, as one in nanoseconds
 * does (a slow first upload into fresh pages can take most of a short
 * run's time). */
static inline uint64_t lifetime_events(const struct vt_proc *p, const struct vt_alloc *a)
{
	uint64_t end = a->seq_free == VT_T_NEVER ? p->last_seq : a->seq_free;
	return end > a->seq_alloc ? end - a->seq_alloc : 0;
}

/* The size of a fact's (size, device) key. */
static inline uint64_t fact_bytes(const struct ctx *c, const struct facts *f)
{
	return c->keys[f->key]->key.bytes;
}

#endif
