/* Classification of allocations (see classify.h). */
#include "classify.h"

#include <stdlib.h>
#include <string.h>

#include "classify_ctx.h"
#include "frame_evidence.h"
#include "model_fold.h"
#include "steps.h"
#include "upload_sites.h"
#include "model_query.h"

/* Every reason a verdict gives, by index (an allocation record keeps a byte
 * instead of an 8-byte pointer, model.h), with the categories the same
 * evidence would also fit: what the report offers as alternatives, sharing
 * the confidence the verdict leaves (first one the larger share). */
#define NO_ALT VT_CAT_COUNT
static const struct reason_row {
	const char *text;
	uint8_t alt[2]; /* NO_ALT: none */
} reasons[R_COUNT] = {
    [R_UNCLASSIFIED] = {"not classified", {NO_ALT, NO_ALT}},
    [R_NOT_DEVICE] = {"not device memory", {NO_ALT, NO_ALT}},
    [R_POOL] = {"allocator region: copies land inside it at several offsets, or it holds "
                "half the device for the whole run",
                {NO_ALT, NO_ALT}},
    [R_FLAT_BUCKET] = {"long-lived; with its neighbours it adds up to the flat gradient "
                       "bucket made every step",
                       {VT_CAT_OPTIMIZER, NO_ALT}},
    [R_TWIN] = {"long-lived; a gradient of the same size is made every step",
                {VT_CAT_OPTIMIZER, NO_ALT}},
    [R_OPTIMIZER] = {"long-lived, the size of a weight and made after it (optimizer slot)",
                     {VT_CAT_GRADIENTS, VT_CAT_WEIGHTS}},
    [R_DATASET] = {"filled from the host in one upload, long-lived, no per-step twin, its "
                   "upload site filled no other tensors: data, or frozen weights",
                   {VT_CAT_WEIGHTS, NO_ALT}},
    [R_EARLY_WEIGHTS] = {"long-lived, made before the first step; no gradient twin seen",
                         {VT_CAT_OPTIMIZER, VT_CAT_UNKNOWN}},
    [R_SERVING_BUFFER] = {"long-lived, made on the device by a job that never trains and "
                          "whose weights came from the host: a cache or a workspace (a KV "
                          "cache, a compute buffer)",
                          {VT_CAT_WEIGHTS, NO_ALT}},
    [R_SERVED_OUTPUT] = {"long-lived, made on the device by a job that never trains, read "
                         "back by the host again and again: the output of each request (an "
                         "engine's output binding)",
                         {VT_CAT_UNKNOWN, NO_ALT}},
    [R_CACHED_ACTIVATIONS] = {"a caching allocator's segment made during training, not "
                              "filled from the host, the size of no weight: kept for the "
                              "passes' tensors (activations), not a weight's state",
                              {VT_CAT_OPTIMIZER, VT_CAT_UNKNOWN}},
    [R_MIRRORS_LOADED] = {"long-lived, made on the device after a weight of its size came from "
                          "the host, where no gradient shows: state that mirrors the weights "
                          "(an optimizer's zeros_like(params))",
                          {VT_CAT_WEIGHTS, VT_CAT_UNKNOWN}},
    [R_GATHERED] = {"made for a step and filled by device-to-device copies from weights: "
                    "parameters gathered from their shards (FSDP's all-gather), the "
                    "weights while the unit runs",
                    {VT_CAT_ACTIVATIONS, NO_ALT}},
    [R_LONG_UNKNOWN] = {"long-lived, made during training, matches no weight",
                        {VT_CAT_OPTIMIZER, VT_CAT_ACTIVATIONS}},
    [R_PREFETCH] = {"filled from the host every step: a batch buffer", {NO_ALT, NO_ALT}},
    [R_FORWARD] = {"made every step before the gradients of its size (forward pass)",
                   {VT_CAT_GRADIENTS, NO_ALT}},
    [R_GRADIENTS] = {"made every step, the size of the weights (or of all of them: a flat "
                     "bucket)",
                     {VT_CAT_ACTIVATIONS, NO_ALT}},
    [R_ACTIVATIONS] = {"made and freed every step, matches no weight", {NO_ALT, NO_ALT}},
    [R_UNFINISHED] = {"made in the step the job stopped in: the category of its twins from "
                      "earlier steps (same site, size and device)",
                      {VT_CAT_UNKNOWN, NO_ALT}},
    [R_KEPT_WEIGHT] = {"long-lived, made before training; training made its gradient and "
                       "optimizer slots, long-lived twins of its size",
                       {VT_CAT_OPTIMIZER, NO_ALT}},
    [R_KEPT_GRADIENT] = {"long-lived, the size of a weight, made in training before the "
                         "optimizer slots of its size (a gradient kept between steps)",
                         {VT_CAT_OPTIMIZER, NO_ALT}},
    [R_LOADED_WEIGHTS] = {"filled from the host by a site that filled several tensors (a model "
                          "loaded tensor by tensor), no gradient: frozen or inference weights",
                          {VT_CAT_DATASET, NO_ALT}},
    [R_RING] = {"long-lived, refilled from the host again and again through the run: a "
                "batch buffer reused in place (a prefetch ring)",
                {VT_CAT_DATASET, NO_ALT}},
    [R_TRANSIENT_BATCH] = {"filled from the host, made and freed within one step, like "
                           "others of its size: a batch (an evaluation pass's)",
                           {VT_CAT_ACTIVATIONS, NO_ALT}},
    [R_TRANSIENT] = {"made and freed within one step, like others of its size (an "
                     "evaluation or forward-only pass)",
                     {VT_CAT_GRADIENTS, NO_ALT}},
    [R_KEPT_PER_STEP] = {"made in most steps and never freed: outputs kept step after step "
                         "(a list that grows, a leak?)",
                         {VT_CAT_UNKNOWN, NO_ALT}},
    [R_DATASET_BY_NAME] = {"filled from the host under a framework's dataset conversion "
                           "(stack names)",
                           {VT_CAT_WEIGHTS, NO_ALT}},
    [R_WEIGHTS_BY_NAME] = {"filled from the host under a framework's model loading (stack "
                           "names): weights",
                           {VT_CAT_DATASET, NO_ALT}},
    [R_OPTIMIZER_BY_NAME] = {"filled from the host under a framework's optimizer state "
                             "loading (stack names)",
                             {VT_CAT_WEIGHTS, NO_ALT}},
    [R_PREFETCH_BY_NAME] = {"filled from the host by a framework's input pipeline (stack "
                            "names): a batch buffer kept and refilled",
                            {VT_CAT_DATASET, NO_ALT}},
    [R_DATASET_SLICED] = {"filled from the host in one upload, long-lived, and read by "
                          "device-to-device copies step after step: batches sliced out of "
                          "data on the device",
                          {VT_CAT_WEIGHTS, NO_ALT}},
    [R_FROZEN_WEIGHTS] = {"filled from the host in one upload, long-lived, no gradient, while "
                          "the job streams its batches from the host, made while its model "
                          "was loaded or where nothing trains: frozen or inference weights, "
                          "or data it also keeps on the device",
                          {VT_CAT_DATASET, NO_ALT}},
    [R_FROZEN_COPY] = {"long-lived, made before training, the size of a trained weight, "
                       "beyond the weights its gradients and slots account for: a copy "
                       "that does not train (a target network, an EMA)",
                       {VT_CAT_OPTIMIZER, NO_ALT}},
    [R_CACHING_SEGMENT] = {"a 2 MiB or 20 MiB segment of a device whose every allocation is a "
                           "multiple of 2 MiB: PyTorch's caching allocator, its small and "
                           "large segments (tensors are carved out of it)",
                           {VT_CAT_UNKNOWN, NO_ALT}},
    [R_FLATTENED] = {"long-lived, filled by device-to-device copies from tensors the host "
                     "filled, which were freed before training: parameters flattened into "
                     "one buffer (FSDP, apex, Megatron)",
                     {VT_CAT_OPTIMIZER, NO_ALT}},
    [R_GROWING_REGION] = {"one of a device's allocations that each double the one before and "
                          "are kept to the end: an allocator growing its regions "
                          "(TensorFlow's BFC with allow_growth); tensors are carved out of it",
                          {VT_CAT_UNKNOWN, NO_ALT}},
    [R_ROW_STORE] = {"kept, written from the host a row at a time (every copy one row, at "
                     "row offsets) beside other such buffers of as many rows: a table of "
                     "samples filled as they come (a replay buffer's storage)",
                     {VT_CAT_POOL, NO_ALT}},
    [R_ARENA_CHUNK] = {"a physical chunk mapped next to an allocator region's chunk: the "
                       "same arena",
                       {NO_ALT, NO_ALT}},
    [R_COMM_BUFFER] = {"long-lived, written every step by device-to-device copies from a "
                       "gradient bucket: a communication buffer (NCCL's channel)",
                       {VT_CAT_GRADIENTS, NO_ALT}},
    [R_FROZEN_SIZE] = {"long-lived, a tensor of its size is made every step, but training made "
                       "no optimizer state of its size while it did for the sizes it trains: "
                       "a frozen weight",
                       {VT_CAT_DATASET, NO_ALT}},
    [R_FROZEN_SIZE_ACT] = {"made every step, the size of a frozen weight (no optimizer state of "
                           "its size while the trained sizes have theirs): not its gradient",
                           {VT_CAT_GRADIENTS, NO_ALT}},
    [R_CARRIED_WEIGHTS] = {"handed from step to step: each step makes a new one of its size and "
                           "the next frees it, from one made before training (a jitted step "
                           "without buffer donation returns new parameters); the first of "
                           "its size in each generation",
                           {VT_CAT_OPTIMIZER, NO_ALT}},
    [R_CARRIED_STATE] = {"handed from step to step like the parameters (a jitted step without "
                         "buffer donation): a later one of its size in each generation, the "
                         "optimizer's state",
                         {VT_CAT_WEIGHTS, NO_ALT}},
    [R_GRAD_BUCKET] = {"long-lived, written every step by device-to-device copies from that "
                       "step's gradients: a gradient bucket (DDP's Reducer)",
                       {VT_CAT_OPTIMIZER, NO_ALT}},
};

const char *vt_alloc_reason(const struct vt_alloc *a)
{
	return a->reason < R_COUNT ? reasons[a->reason].text : reasons[R_UNCLASSIFIED].text;
}

uint32_t vt_alloc_alternatives(const struct vt_alloc *a, struct vt_alternative *out, uint32_t max)
{
	const struct reason_row *r = &reasons[a->reason < R_COUNT ? a->reason : R_UNCLASSIFIED];
	uint32_t n = 0, left = a->confidence < 100 ? 100u - a->confidence : 0;
	for (int i = 0; i < 2 && n < max; i++) {
		if (r->alt[i] == NO_ALT || r->alt[i] == a->category)
			continue;
		out[n].category = r->alt[i];
		/* the first alternative takes two thirds of what is left when there
		 * are two, all of it when alone */
		int two = i == 0 && r->alt[1] != NO_ALT && r->alt[1] != a->category;
		out[n].confidence = (uint8_t)(two ? left * 2 / 3 : i == 0 ? left : left / 3);
		n++;
	}
	return n;
}

/* ---- pools -------------------------------------------------------------- */

/* Copies that tile the allocation from offset 0, once each: a large tensor
 * uploaded in chunks, not an allocator region. */
static int one_contiguous_upload(const struct vt_copy_range *r, uint32_t n, uint64_t bytes)
{
	uint64_t next = 0;
	for (uint32_t i = 0; i < n; i++) {
		if (r[i].copies != 1 || r[i].offset != next)
			return 0;
		next = r[i].offset + r[i].bytes;
	}
	return next * 10 >= bytes * 9;
}

static int looks_like_pool(const struct ctx *c, uint32_t idx)
{
	const struct vt_alloc *a = &c->m->allocs[idx];
	uint32_t n = 0;
	const struct vt_copy_range *r =
	    a->flags & VT_AF_PARTIAL_COPIES ? vt_model_ranges(c->m, idx, &n) : NULL;
	/* an allocator keeps its regions; a buffer freed soon after a few
	 * copies into it is scratch (XLA's autotuner writes the two red zones
	 * of each RedzoneAllocator buffer: 3 such "pools" on an H200 made a
	 * --per-tensor JAX run read as pooled) */
	int kept = a->t_free == VT_T_NEVER || lifetime(c->m, a) * 10 >= c->span_ns;
	if (n >= 2 && kept && !one_contiguous_upload(r, n, a->bytes))
		return 1;
	/* a block of it refilled again and again, the rest used otherwise: an
	 * allocator's segment handing the same block to each batch (PyTorch's
	 * caching allocator), kept or not */
	for (uint32_t i = 0; i < n; i++)
		if (r[i].copies >= 3 && r[i].bytes * 2 <= a->bytes)
			return 1;
	uint64_t total = vt_model_device_total(c->m, a->device);
	/* a preallocated arena (XLA's 75 %): half a device, held start to end */
	return total && a->bytes * 2 >= total && lifetime(c->m, a) * 10 >= c->span_ns * 9 &&
	       vt_model_copies(c->m, a)->h2d_bytes < a->bytes / 2;
}

/* The VMM handle mapped right before or after handle `a`, that the
 * allocator-region rules made a pool? */
static int next_to_pool_chunk(const struct ctx *c, const struct vt_alloc *a)
{
	uint64_t at = vt_model_copies(c->m, a)->mapped_at;
	if (!at)
		return 0;
	for (uint32_t i = c->p->alloc_begin; i < c->p->alloc_end; i++) {
		const struct vt_alloc *b = &c->m->allocs[i];
		uint64_t b_at = vt_model_copies(c->m, b)->mapped_at;
		if (b == a || !(b->flags & VT_AF_HANDLE) || b->category != VT_CAT_POOL || !b_at ||
		    b->device != a->device)
			continue;
		if (b_at + b->bytes == at || at + a->bytes == b_at)
			return 1;
	}
	return 0;
}

/* Physical chunks mapped back to back into one reservation make one arena
 * (XLA's GpuVirtualMemAllocator, PyTorch's expandable segments): a chunk
 * next to one that is an allocator's region is part of that region too,
 * whatever it held at the peak, unless the host filled it (then what filled
 * it says what it is). Where a chunk sits is evidence no size can
 * fake. Repeated until no chunk joins (an arena grows one chunk at a time). */
static void arena_chunks(struct ctx *c)
{
	int joined = 1;
	while (joined) {
		joined = 0;
		for (uint32_t i = c->p->alloc_begin; i < c->p->alloc_end; i++) {
			struct vt_alloc *a = &c->m->allocs[i];
			struct facts *f = &c->f[i - c->p->alloc_begin];
			/* a chunk the host filled is judged by what filled it */
			if (!(a->flags & VT_AF_HANDLE) || !f->charged || f->host_filled ||
			    a->category == VT_CAT_POOL || !next_to_pool_chunk(c, a))
				continue;
			set_cat(a, f, VT_CAT_POOL, 75, R_ARENA_CHUNK);
			joined = 1;
		}
	}
}

/* PyTorch's caching allocator (c10/cuda/CUDACachingAllocator.cpp) asks the
 * driver only for segments of three shapes: 2 MiB (kSmallBuffer) for
 * tensors up to 1 MiB, 20 MiB (kLargeBuffer) for tensors up to 10 MiB, and
 * larger tensors rounded up to 2 MiB (kRoundLarge). A device whose every
 * allocation is a multiple of 2 MiB, with segments of both fixed sizes,
 * shows that allocator: a per-tensor job would have its biases, scalars and
 * odd-sized activations at the driver. Its 2 MiB and 20 MiB segments hold
 * many tensors each: pools, whatever one tensor in them happens to do,
 * unless the host filled one whole in one upload (then that upload says
 * what it is). The larger ones hold one tensor each until freed and are
 * left to the other rules. */
/* Whether a folding model folded, on device dev of this process, an
 * allocation whose size is not a multiple of `unit` (0: any allocation). */
static int folded_size_on(const struct ctx *c, int dev, uint64_t unit)
{
	uint32_t ng;
	const struct vt_fold_group *g = vt_fold_groups(c->m, &ng);
	for (uint32_t i = 0; i < ng; i++)
		if (g[i].proc == c->proc && g[i].device == dev && (!unit || g[i].bytes % unit))
			return 1;
	return 0;
}

#define CACHING_SMALL_SEGMENT (2ull << 20)
#define CACHING_LARGE_SEGMENT (20ull << 20)

/* cuMemAllocAsync and cuMemAllocFromPoolAsync: the driver's stream-ordered
 * pool, a second allocator beside a framework's (DALI's buffers next to
 * PyTorch's segments), whose sizes say nothing of the caching allocator's. */
static int stream_ordered(const struct vt_alloc *a)
{
	return a->kind == VT_ALLOC_ASYNC || a->kind == VT_ALLOC_POOL;
}

static int caching_allocator_sizes(const struct ctx *c, int dev)
{
	uint32_t small = 0, large = 0;
	for (uint32_t i = c->p->alloc_begin; i < c->p->alloc_end; i++) {
		const struct vt_alloc *a = &c->m->allocs[i];
		const struct facts *f = &c->f[i - c->p->alloc_begin];
		if (f->device != dev || !f->charged || (a->flags & VT_AF_HANDLE) ||
		    stream_ordered(a))
			continue;
		if (a->bytes % CACHING_SMALL_SEGMENT)
			return 0;
		small += a->bytes == CACHING_SMALL_SEGMENT;
		large += a->bytes == CACHING_LARGE_SEGMENT;
	}
	if (!small || !large)
		return 0;
	/* a folding model's per-step allocations count too, but a folded group
	 * does not say whether it was stream-ordered: the full model decides */
	if (folded_size_on(c, dev, CACHING_SMALL_SEGMENT)) {
		vt_fold_set_inexact(c->m,
		                    "a folded allocation of an odd size beside caching segments");
		return 0;
	}
	return 1;
}

static int shows_caching_allocator(const struct ctx *c, int dev)
{
	return c->caching_on[dev];
}

/* A 2 MiB or 20 MiB segment the host did not fill. */
static int caching_segment(const struct ctx *c, const struct vt_alloc *a, const struct facts *f)
{
	(void)c;
	return !(a->flags & VT_AF_HANDLE) && !f->host_filled && !stream_ordered(a) &&
	       (a->bytes == CACHING_SMALL_SEGMENT || a->bytes == CACHING_LARGE_SEGMENT);
}

/* An allocator that grows (TensorFlow's BFC allocator with allow_growth:
 * its first region 2 MiB, each Extend() asking for at least twice the one
 * before) leaves a telling trace at the driver: every allocation of the
 * device a power of two of at least 1 MiB, each at least twice the one
 * before it, three or more, all kept to the end. Tensors of a job that
 * allocates per tensor repeat sizes, shrink, or are freed. Each such region
 * is a pool, unless one upload filled it whole (then that upload says what
 * it is). */
#define GROWING_REGION_MIN (1ull << 20)
static int is_pow2(uint64_t x)
{
	return x && !(x & (x - 1));
}

static int growing_regions(const struct ctx *c, int dev)
{
	uint64_t last = 0;
	uint32_t n = 0;
	for (uint32_t i = c->p->alloc_begin; i < c->p->alloc_end; i++) {
		const struct vt_alloc *a = &c->m->allocs[i];
		const struct facts *f = &c->f[i - c->p->alloc_begin];
		if (f->device != dev || !f->charged)
			continue;
		int kept = a->t_free == VT_T_NEVER ||
		           lifetime(c->m, a) * 10 >= (c->p->last_t_ns - a->t_alloc) * 9;
		if ((a->flags & VT_AF_HANDLE) || !is_pow2(a->bytes) ||
		    a->bytes < GROWING_REGION_MIN || a->bytes < 2 * last || !kept)
			return 0;
		last = a->bytes;
		n++;
	}
	/* a folding model's groups are freed per-step tensors: not regions */
	return n >= 3 && !folded_size_on(c, dev, 0);
}

/* A region no single upload filled whole. */
static int growing_region(const struct ctx *c, const struct vt_alloc *a, const struct facts *f)
{
	const struct vt_alloc_copies *cp = vt_model_copies(c->m, a);
	(void)f;
	return !(cp->h2d_copies == 1 && cp->h2d_bytes * 10 >= a->bytes * 9);
}

/* On each device whose allocations show the allocator (device_shows), the
 * undecided ones that are its regions (is_region) are pools. */
static void allocator_regions(struct ctx *c, const int *devs,
                              int (*device_shows)(const struct ctx *, int),
                              int (*is_region)(const struct ctx *, const struct vt_alloc *,
                                               const struct facts *),
                              enum reason why)
{
	for (int d = 0; d < VT_MAX_DEVICES; d++) {
		if (!devs[d] || !device_shows(c, d))
			continue;
		for (uint32_t i = c->p->alloc_begin; i < c->p->alloc_end; i++) {
			struct vt_alloc *a = &c->m->allocs[i];
			struct facts *f = &c->f[i - c->p->alloc_begin];
			if (f->device != d || !f->charged || f->decided || !is_region(c, a, f))
				continue;
			set_cat(a, f, VT_CAT_POOL, 70, why);
			c->p->pool_mode = 1;
		}
	}
}

static void classify_pool(struct ctx *c, uint32_t i, struct vt_alloc *a, struct facts *f)
{
	if (!f->charged || !looks_like_pool(c, i))
		return;
	set_cat(a, f, VT_CAT_POOL, 80, R_POOL);
	c->p->pool_mode = 1;
}

/* A buffer kept and refilled from the host again and again through the
 * run (at least 3 uploads, twice its size in all, spread over 3 steps, or
 * without steps over a quarter of the run, or over a quarter of its own
 * life where the host reads results back at least as often: a server's
 * input binding made after a long model load, each request's input
 * answered by its output): a batch buffer reused in place, as a DALI-style
 * ring or a static input buffer does. A dataset is uploaded once; weights
 * restored from a checkpoint are written twice at most. */
static int refilled(const struct ctx *c, const struct vt_alloc *a)
{
	const struct vt_alloc_copies *cp = vt_model_copies(c->m, a);
	if (cp->h2d_copies < 3 || cp->h2d_bytes < 2 * a->bytes || cp->t_first_h2d == VT_T_NEVER)
		return 0;
	if (c->p->nsteps >= 3)
		return vt_step_of(c->p, cp->t_last_h2d) - vt_step_of(c->p, cp->t_first_h2d) >= 2;
	uint64_t spread = cp->t_last_h2d - cp->t_first_h2d;
	return spread * 4 >= c->span_ns ||
	       (spread * 4 >= lifetime(c->m, a) && c->readbacks >= cp->h2d_copies);
}

static void classify_ring(struct ctx *c, struct vt_alloc *a, struct facts *f)
{
	if (f->decided || !f->charged || !f->host_filled || !refilled(c, a))
		return;
	set_cat(a, f, VT_CAT_PREFETCH, 80, R_RING);
}

/* ---- recurrence ---------------------------------------------------------- */

/* The index of the (size, device) counter, made on first sight. */
static uint32_t key_index_slow(struct ctx *c, uint64_t bytes, uint8_t device)
{
	struct key_count probe, *k;
	memset(&probe.key, 0, sizeof probe.key);
	probe.key.bytes = bytes;
	probe.key.device = device;
	HASH_FIND(hh, c->key_hash, &probe.key, sizeof probe.key, k);
	if (k)
		return k->index;
	if (c->nkeys == c->cap_keys) {
		uint32_t cap = c->cap_keys ? 2 * c->cap_keys : 64;
		struct key_count **v = realloc(c->keys, cap * sizeof *v);
		if (!v)
			vt_nomem();
		c->keys = v;
		c->cap_keys = cap;
	}
	k = calloc(1, sizeof *k);
	if (!k)
		vt_nomem();
	k->key = probe.key;
	k->last_step = -2;
	k->index = c->nkeys;
	c->keys[c->nkeys++] = k;
	HASH_ADD(hh, c->key_hash, key, sizeof k->key, k);
	return k->index;
}

static uint32_t key_index(struct ctx *c, uint64_t bytes, uint8_t device)
{
	uint64_t h = (bytes ^ ((uint64_t)device << 56)) * 0x9e3779b97f4a7c15ull;
	uint32_t slot = (uint32_t)(h >> 56); /* 256 slots */
	if (c->key_cache[slot].index_plus_1 && c->key_cache[slot].bytes == bytes &&
	    c->key_cache[slot].device == device)
		return c->key_cache[slot].index_plus_1 - 1;
	uint32_t index = key_index_slow(c, bytes, device);
	c->key_cache[slot].bytes = bytes;
	c->key_cache[slot].device = device;
	c->key_cache[slot].index_plus_1 = index + 1;
	return index;
}

static void free_keys(struct ctx *c)
{
	struct key_count *k, *tmp;
	HASH_ITER(hh, c->key_hash, k, tmp)
	{
		HASH_DEL(c->key_hash, k);
		free(k);
	}
	free(c->keys);
}

static void count_keys(struct ctx *c)
{
	uint32_t n = c->p->alloc_end - c->p->alloc_begin;
	for (uint32_t i = 0; i < n; i++) {
		struct facts *f = &c->f[i];
		struct key_count *k = c->keys[f->key];
		k->count++;
		k->freed += f->freed;
		int s = f->born;
		if (s >= 0 && s != k->last_step) {
			k->steps_seen++;
			k->last_step = s;
		}
	}
	/* a folding model counted every allocation of a folded key as it came
	 * (a key may have been folded whole: it needs its counter too) */
	uint32_t ng;
	const struct vt_fold_group *g = vt_fold_groups(c->m, &ng);
	for (uint32_t i = 0; i < ng; i++)
		if (g[i].proc == c->proc)
			key_index(c, g[i].bytes, g[i].device);
	for (uint32_t i = 0; i < c->nkeys; i++) {
		struct key_count *k = c->keys[i];
		k->fold = vt_fold_size_of(c->m, c->proc, k->key.bytes, (uint8_t)k->key.device);
		if (!k->fold)
			continue;
		k->count = k->fold->count;
		k->steps_seen = k->fold->steps_seen;
		k->freed += (uint32_t)k->fold->folded;
	}
}

/* Made again in most steps, and this one does not live through most of the
 * training (a prefetched batch lives a few steps, a weight all of them). */
static int recurs(const struct ctx *c, const struct key_count *k, uint32_t idx,
                  const struct facts *f)
{
	uint32_t steps = c->p->nsteps;
	/* still there at the end while most of its kind were freed: a batch or
	 * an activation in flight when the job stopped; while most were kept:
	 * state that grows (a leak, metrics), not a per-step tensor */
	if (!f->freed && k->freed * 2 < k->count)
		return 0;
	if (steps >= 3) {
		if (k->steps_seen < 3 || k->steps_seen * 2 < steps)
			return 0;
		return (uint32_t)(f->died - f->born) * 4 < steps * 3;
	}
	/* no steps: made again and again, each one short-lived */
	return k->count >= 3 && lifetime(c->m, &c->m->allocs[idx]) * 4 < c->span_ns;
}

/* Made and freed within one step, like at least two others of its size,
 * most of which were freed: a tensor of a pass that is not a training step
 * (an evaluation pass, a forward-only pass between steps), too rare across
 * the steps to recur but no more long-lived than an activation. */
static int transient(const struct ctx *c, const struct key_count *k, const struct facts *f)
{
	return c->p->nsteps >= 3 && f->freed && f->died == f->born && k->count >= 3 &&
	       k->freed * 2 >= k->count;
}

/* Never freed, while its size was made in most steps and never freed
 * either: kept step after step (outputs appended to a list). */
static int kept_per_step(const struct ctx *c, const struct key_count *k, const struct facts *f)
{
	uint32_t steps = c->p->nsteps;
	return steps >= 3 && !f->freed && f->born >= 0 && !k->freed && k->steps_seen >= 3 &&
	       k->steps_seen * 2 >= steps;
}

/* Whether a folding model's group recurs, as recurs() and transient() say
 * of each of its allocations (freed, within a step or two of its making);
 * transient_only: only as transient() says. 0: they would be long-lived,
 * which the folded evidence cannot tell the full model's way. */
static int group_recurs(struct ctx *c, const struct vt_fold_group *g, int *transient_only)
{
	const struct key_count *k = c->keys[key_index(c, g->bytes, g->device)];
	uint32_t steps = c->p->nsteps;
	*transient_only = 0;
	if (steps < 3)
		return 0;
	if (k->steps_seen >= 3 && k->steps_seen * 2 >= steps)
		return 1; /* and a span of one step at most is under 3/4 of them */
	if (g->span == 0 && k->count >= 3 && k->freed * 2 >= k->count) {
		*transient_only = 1;
		return 1;
	}
	return 0;
}

static void mark_recurring(struct ctx *c)
{
	count_keys(c);
	for (uint32_t i = c->p->alloc_begin; i < c->p->alloc_end; i++) {
		struct facts *f = &c->f[i - c->p->alloc_begin];
		const struct key_count *k = c->keys[f->key];
		f->recurring = recurs(c, k, i, f);
		if (!f->recurring && transient(c, k, f))
			f->recurring = f->transient = 1;
		f->kept = kept_per_step(c, k, f);
	}
	uint32_t ng;
	const struct vt_fold_group *g = vt_fold_groups(c->m, &ng);
	for (uint32_t i = 0; i < ng; i++) {
		int transient_only;
		if (g[i].proc == c->proc && !group_recurs(c, &g[i], &transient_only))
			vt_fold_set_inexact(c->m, "a folded allocation would be long-lived");
	}
}

/* ---- twins: gradients and the weights they mirror ----------------------- */

static struct size_count *size_entry(struct size_count **sizes, uint64_t bytes)
{
	struct size_count *s;
	HASH_FIND(hh, *sizes, &bytes, sizeof bytes, s);
	if (!s) {
		s = calloc(1, sizeof *s);
		if (!s)
			vt_nomem();
		s->bytes = bytes;
		s->last_step = -2;
		s->cur_step = -2;
		HASH_ADD(hh, *sizes, bytes, sizeof s->bytes, s);
	}
	return s;
}

/* Lookup only: every size the rules ask about was entered by count_sizes. */
static struct size_count *size_find(struct size_count *sizes, uint64_t bytes)
{
	struct size_count *s;
	HASH_FIND(hh, sizes, &bytes, sizeof bytes, s);
	return s;
}

static void free_sizes(struct size_count **sizes)
{
	struct size_count *s, *tmp;
	HASH_ITER(hh, *sizes, s, tmp)
	{
		HASH_DEL(*sizes, s);
		free(s->is_grad);
		free(s);
	}
}

/* The step just left made in_step allocations of this size: count it. */
static void close_step(struct size_count *s)
{
	if (!s->in_step)
		return;
	for (int i = 0; i < PER_STEP_HIST; i++) {
		if (s->hist[i].steps && s->hist[i].count != s->in_step)
			continue;
		s->hist[i].count = s->in_step;
		s->hist[i].steps++;
		break;
	}
	s->in_step = 0;
}

/* How many of this size a step makes: the most common count (a step cut in
 * two by an estimated boundary, or one that made extra, does not move it). */
static uint32_t per_step(const struct size_count *s)
{
	uint32_t best = 0, best_steps = 0;
	for (int i = 0; i < PER_STEP_HIST; i++)
		if (s->hist[i].steps > best_steps ||
		    (s->hist[i].steps == best_steps && s->hist[i].count > best)) {
			best = s->hist[i].count;
			best_steps = s->hist[i].steps;
		}
	return best ? best : 1;
}

/* Undecided long-lived allocations of one device, in time order. */
static uint32_t long_lived(const struct ctx *c, int dev, uint32_t *out)
{
	uint32_t n = 0;
	for (uint32_t i = c->p->alloc_begin; i < c->p->alloc_end; i++) {
		const struct facts *f = &c->f[i - c->p->alloc_begin];
		if (f->device == dev && f->charged && !f->decided && !f->recurring)
			out[n++] = i;
	}
	return n;
}

/* A run of consecutive long-lived allocations whose sizes add up to a
 * recurring flat gradient bucket: those are the weights. */
static int find_flat_bucket(struct ctx *c, struct size_count *sizes, const uint32_t *ll, uint32_t n)
{
	struct size_count *s, *tmp;
	HASH_ITER(hh, sizes, s, tmp)
	{
		if (!s->recurring || s->long_lived)
			continue;
		uint64_t sum = 0;
		uint32_t lo = 0;
		for (uint32_t hi = 0; hi < n; hi++) {
			sum += c->m->allocs[ll[hi]].bytes;
			while (sum > s->bytes && lo <= hi)
				sum -= c->m->allocs[ll[lo++]].bytes;
			if (sum != s->bytes || hi - lo + 1 < 2)
				continue;
			/* each of them with a per-step twin of its own: their
			 * gradients are made one by one, and a tensor the size of
			 * their sum is a coincidence (LoRA's 8 adapters of 256 KiB
			 * and a 2 MiB activation) */
			uint32_t own = 0;
			for (uint32_t i = lo; i <= hi; i++) {
				const struct size_count *m =
				    size_find(sizes, c->m->allocs[ll[i]].bytes);
				own += m && m->recurring;
			}
			if (own == hi - lo + 1)
				continue;
			for (uint32_t i = lo; i <= hi; i++) {
				struct vt_alloc *a = &c->m->allocs[ll[i]];
				set_cat(a, &c->f[ll[i] - c->p->alloc_begin], VT_CAT_WEIGHTS, 85,
				        R_FLAT_BUCKET);
				size_find(sizes, a->bytes)->weights++;
			}
			s->gradient_size = 1;
			s->grads_per_step = per_step(s);
			return 1;
		}
	}
	return 0;
}

/* A kept record of a folded key's era: the folding model counted it with
 * the folded ones, which is right only if it counts as they do (recurring,
 * not host-filled, undecided). */
static int folded_era(struct ctx *c, const struct facts *f)
{
	const struct key_count *k = c->keys[f->key];
	if (!k->fold || f->born < (int)vt_fold_keep_steps(c->m))
		return 0;
	if (!f->recurring || f->host_filled || f->decided)
		vt_fold_set_inexact(c->m, "a folded size has other allocations in its steps");
	return 1;
}

/* steps more steps that made count of a size (close_step, many at once). */
static void close_steps(struct size_count *s, uint32_t count, uint32_t steps)
{
	for (int i = 0; i < PER_STEP_HIST; i++) {
		if (s->hist[i].steps && s->hist[i].count != count)
			continue;
		s->hist[i].count = count;
		s->hist[i].steps += steps;
		break;
	}
}

/* The steps a folding model counted for a folded key of dev, after the
 * steps its kept records made (the steps come in that order). */
static void merge_folded_sizes(struct ctx *c, int dev, struct size_count **sizes)
{
	for (uint32_t i = 0; i < c->nkeys; i++) {
		const struct key_count *k = c->keys[i];
		if (!k->fold || (int)k->key.device != dev)
			continue;
		struct size_count *s = size_entry(sizes, k->key.bytes);
		c->size_by_key[i] = s;
		close_step(s);
		for (uint32_t h = 0; h < k->fold->nhist; h++)
			close_steps(s, k->fold->hist[h].count, k->fold->hist[h].steps);
		s->recurring += (uint32_t)k->fold->era_allocs;
	}
}

/* Per size: how many recurring (not host-filled) allocations each step makes,
 * how many long-lived allocations exist. */
static void count_sizes(struct ctx *c, int dev, struct size_count **sizes, const uint32_t *ll,
                        uint32_t n)
{
	for (uint32_t i = c->p->alloc_begin; i < c->p->alloc_end; i++) {
		const struct facts *f = &c->f[i - c->p->alloc_begin];
		if (f->device != dev || folded_era(c, f))
			continue;
		if (f->decided || !f->recurring || f->host_filled)
			continue;
		struct size_count **slot = &c->size_by_key[f->key];
		if (!*slot)
			*slot = size_entry(sizes, fact_bytes(c, f));
		struct size_count *s = *slot;
		s->recurring++;
		int st = f->born;
		if (st != s->last_step) {
			close_step(s);
			s->steps_seen++;
			s->last_step = st;
		}
		s->in_step++;
	}
	merge_folded_sizes(c, dev, sizes);
	struct size_count *s, *tmp;
	HASH_ITER(hh, *sizes, s, tmp) close_step(s);
	uint64_t first_step = c->p->nsteps ? c->p->step_t[0] : VT_T_NEVER;
	for (uint32_t i = 0; i < n; i++) {
		const struct vt_alloc *a = &c->m->allocs[ll[i]];
		struct size_count *s = size_entry(sizes, a->bytes);
		s->long_lived++;
		if (a->t_alloc < first_step)
			s->ll_before++;
		else
			s->ll_during++;
	}
}

/* How many long-lived allocations of a size are weights: one per gradient
 * made each step. When activations share the size, a step makes more of it
 * than there are weights; then, if the optimizer state was made during
 * training (lazily, as PyTorch and Keras do), the weights are those made
 * before it. */
static uint32_t weights_of_size(const struct size_count *s)
{
	uint32_t n = per_step(s);
	if (s->ll_before && s->ll_during && s->ll_before < n)
		n = s->ll_before;
	return n;
}

/* Gradients kept between steps (PyTorch's zero_grad(set_to_none=False), its
 * default before 2.0) are long-lived: training gives each trained weight T
 * twins of its size, its gradient (backward) and then its optimizer slots
 * (the optimizer's first step). T is the same for every size (one
 * optimizer): the count of twins made during training, a multiple of T
 * (two trained weights of a size have 2T), not more than T for each tensor
 * of that size made before training (a frozen copy beside the trained one:
 * a target network, an EMA, which have no twins of their own), settles it,
 * also for a size a dataset array shares with a weight (on an H200, PyTorch
 * 2.11 with Adam: T = 3, and a 64 KiB label array the size of a weight).
 * The T that fits the most sizes wins, then the one by which more sizes
 * are all trained (twins = T x tensors made before), then the smallest;
 * it must fit more than half of the sizes, and two sizes at least unless
 * the one fits exactly with T >= 3 (every tensor of it made before
 * training trains: a caching allocator leaves only its big tensors outside
 * its segments; one size with two twins is as often Adam's two slots of a
 * flat buffer whose gradients come per step).
 * T = 2 is also Adam's two slots
 * beside recurring gradients, which weights_by_twin reads: it is taken
 * only where most of those sizes have no per-step twin and no flat
 * gradient bucket is made every step (two_may_be_kept). Same-size
 * allocations that recur are then the optimizer's temporaries, not
 * gradients. 0: no such pattern. */
#define MAX_TWINS_PER_WEIGHT 8
static int twins_fit(const struct size_count *s, uint32_t t)
{
	return s->ll_during % t == 0 && s->ll_during / t <= s->ll_before;
}

static uint32_t twins_per_weight(struct size_count *sizes, int two_may_be_kept)
{
	uint32_t votes[MAX_TWINS_PER_WEIGHT + 1] = {0}, exact[MAX_TWINS_PER_WEIGHT + 1] = {0};
	uint32_t voters = 0, best = 0, untwinned = 0;
	struct size_count *s, *tmp;
	HASH_ITER(hh, sizes, s, tmp)
	{
		if (!s->ll_before || !s->ll_during ||
		    s->ll_during > MAX_TWINS_PER_WEIGHT * s->ll_before)
			continue;
		voters++;
		untwinned += !s->recurring;
		for (uint32_t t = 2; t <= MAX_TWINS_PER_WEIGHT; t++) {
			votes[t] += twins_fit(s, t);
			exact[t] += s->ll_during == t * s->ll_before;
		}
	}
	for (uint32_t t = 2; t <= MAX_TWINS_PER_WEIGHT; t++)
		if (votes[t] > votes[best] || (votes[t] == votes[best] && exact[t] > exact[best]))
			best = t;
	/* T = 2 reads as a gradient and one slot (SGD with momentum) only
	 * where most sizes have no per-step twin: no per-step gradients, so
	 * not Adam's two slots beside them */
	int two_ok = two_may_be_kept && untwinned * 2 > voters;
	int enough = voters >= 2 || (exact[best] == voters && best >= 3);
	return enough && (best >= 3 || (best == 2 && two_ok)) && votes[best] * 2 > voters ? best
	                                                                                  : 0;
}

/* The earliest of a size are its weights (ll_during / T of them), the
 * others made before training frozen copies of them; of its twins the last
 * W * T are gradients then slots, earlier ones first-step set-up (library
 * workspaces of that size). */
static void weights_by_kept_twins(struct ctx *c, struct size_count *sizes, const uint32_t *ll,
                                  uint32_t n, int two_may_be_kept)
{
	uint32_t per = c->p->nsteps ? twins_per_weight(sizes, two_may_be_kept) : 0;
	if (!per)
		return;
	uint64_t first_step = c->p->step_t[0];
	for (uint32_t i = 0; i < n; i++) {
		struct vt_alloc *a = &c->m->allocs[ll[i]];
		struct facts *f = &c->f[ll[i] - c->p->alloc_begin];
		struct size_count *s = size_find(sizes, a->bytes);
		uint32_t weights = s->ll_during / per;
		if (f->decided || !weights || s->ll_before < weights)
			continue;
		s->kept = 1;
		if (a->t_alloc < first_step) {
			if (s->weights < weights) {
				s->weights++;
				set_cat(a, f, VT_CAT_WEIGHTS, 80, R_KEPT_WEIGHT);
			} else if (!f->host_filled) { /* slots are among the twins: not it */
				set_cat(a, f, VT_CAT_WEIGHTS, 65, R_FROZEN_COPY);
			} /* filled from the host: what the upload rules make of it */
			continue;
		}
		uint32_t idx = s->kept_seen++, first_twin = s->ll_during - weights * per;
		if (idx < first_twin)
			set_cat(a, f, VT_CAT_UNKNOWN, 30, R_LONG_UNKNOWN);
		else if (idx < first_twin + weights)
			set_cat(a, f, VT_CAT_GRADIENTS, 75, R_KEPT_GRADIENT);
		else
			set_cat(a, f, VT_CAT_OPTIMIZER, 85, R_OPTIMIZER);
	}
}

/* Written by device-to-device copies in most steps (a bucket, a
 * communication buffer): what a weight, updated in place, is not. */
static int rewritten_on_device(const struct ctx *c, const struct vt_alloc *a)
{
	uint32_t steps = c->p->nsteps;
	return steps >= 3 && vt_model_copies(c->m, a)->d2d_in_copies + 1 >= steps;
}

/* Sizes with a per-step twin whose tensors made before training got
 * long-lived company during it (optimizer slots, kept gradients). */
static uint32_t slotted_sizes(struct size_count *sizes)
{
	uint32_t n = 0;
	struct size_count *s, *tmp;
	HASH_ITER(hh, sizes, s, tmp)
	n += s->recurring && s->ll_before && s->ll_during;
	return n;
}

/* A per-step twin is a gradient only if its weight trains. Where three
 * sizes or more got optimizer state during training, a size that got none
 * is frozen (a diffusion model's VAE and text encoder beside its trained
 * UNet, a fine-tune's frozen layers): its long-lived tensors are weights
 * that do not train, its per-step tensors activations that happen to share
 * their size. A job whose optimizer keeps no state (plain SGD), or made it
 * before training (JAX, Keras), has no such sizes to compare with. */
/* Optimizer slots per trained weight, by the sizes whose tensors made
 * during training are a whole multiple (1 to 4) of those made before: the
 * multiple most sizes show, the smaller on a tie; 0 when fewer than three
 * sizes show one. */
static uint32_t slots_per_weight(struct size_count *sizes)
{
	uint32_t votes[5] = {0}, best = 0;
	struct size_count *s, *tmp;
	HASH_ITER(hh, sizes, s, tmp)
	{
		if (!s->recurring || !s->ll_before || !s->ll_during || s->ll_during % s->ll_before)
			continue;
		uint32_t r = s->ll_during / s->ll_before;
		votes[r <= 4 ? r : 0]++;
	}
	for (uint32_t r = 1; r <= 4; r++)
		if (votes[r] > votes[best])
			best = r;
	return votes[best] >= 3 ? best : 0;
}

/* A size shared by frozen and trained weights (a frozen VAE's tensors the
 * size of some of the UNet's): its slots say how many of its weights train,
 * and so how many of its per-step tensors are gradients; the rest of its
 * weights are frozen, all of them made before training. */
static void trained_of_size(struct size_count *sizes, uint32_t per_weight)
{
	struct size_count *s, *tmp;
	HASH_ITER(hh, sizes, s, tmp)
	{
		if (per_weight && s->recurring && s->ll_during && s->ll_during % per_weight == 0 &&
		    s->ll_during < per_weight * s->ll_before)
			s->trained = s->ll_during / per_weight;
	}
}

static void weights_by_twin(struct ctx *c, struct size_count *sizes, const uint32_t *ll, uint32_t n)
{
	int slots_show = slotted_sizes(sizes) >= 3;
	trained_of_size(sizes, slots_show ? slots_per_weight(sizes) : 0);
	for (uint32_t i = 0; i < n; i++) {
		struct vt_alloc *a = &c->m->allocs[ll[i]];
		struct facts *f = &c->f[ll[i] - c->p->alloc_begin];
		struct size_count *s = size_find(sizes, a->bytes);
		if (f->decided || !s->recurring || s->kept)
			continue;
		if (slots_show && s->ll_before && !s->ll_during) {
			s->frozen = 1;
			set_cat(a, f, VT_CAT_WEIGHTS, 75, R_FROZEN_SIZE);
			continue;
		}
		s->gradient_size = 1;
		if (rewritten_on_device(c, a))
			continue; /* a weight is updated in place, not copied into each step */
		if (s->trained && a->t_alloc < c->p->step_t[0]) {
			s->weights++;
			s->grads_per_step = s->trained;
			set_cat(a, f, VT_CAT_WEIGHTS, 80, R_TWIN);
		} else if (!s->trained && s->weights < weights_of_size(s)) {
			s->weights++;
			s->grads_per_step = s->weights;
			set_cat(a, f, VT_CAT_WEIGHTS, 90, R_TWIN);
		}
	}
}

/* The stacks' names decide what behaviour cannot: a long-lived tensor
 * filled from the host with no per-step twin is data, frozen weights or
 * restored optimizer state alike; the framework path that filled it (its
 * first copy's stack, else its allocation's) says which. Only a CONTEXT
 * rule decides alone; a MECHANISM rule (a conversion any caller uses)
 * decides only between data and weights, where it is the better guess. */
static int by_name(struct ctx *c, struct vt_alloc *a, struct facts *f, uint32_t h2d_stack)
{
	if (!f->host_filled)
		return 0;
	struct vt_frame_hint h = vt_frame_hint(c->fe, c->proc, h2d_stack);
	if (h.category == VT_CAT_COUNT)
		h = vt_frame_hint(c->fe, c->proc, a->stack_id);
	int strong = h.strength == VT_FRAME_CONTEXT;
	switch (h.category) {
	case VT_CAT_DATASET:
		set_cat(a, f, VT_CAT_DATASET, strong ? 90 : 75, R_DATASET_BY_NAME);
		return 1;
	case VT_CAT_WEIGHTS:
		set_cat(a, f, VT_CAT_WEIGHTS, strong ? 90 : 75, R_WEIGHTS_BY_NAME);
		return 1;
	case VT_CAT_OPTIMIZER:
		set_cat(a, f, VT_CAT_OPTIMIZER, 90, R_OPTIMIZER_BY_NAME);
		return 1;
	case VT_CAT_PREFETCH:
		set_cat(a, f, VT_CAT_PREFETCH, 85, R_PREFETCH_BY_NAME);
		return 1;
	default:
		return 0;
	}
}

/* Whether the job feeds device dev its batches from the host: a buffer made
 * every step and filled from the host, one refilled step after step (a
 * ring), or an allocator's region taking them: VT_STREAMED_BATCH_BYTES says
 * why it matters. */
int vt_region_takes_batches(const struct vt_model *m, uint32_t i)
{
	if (!(m->allocs[i].flags & VT_AF_PARTIAL_COPIES))
		return 0;
	uint32_t n;
	const struct vt_copy_range *r = vt_model_ranges(m, i, &n);
	for (uint32_t k = 0; k < n; k++)
		if (r[k].copies >= 3 && r[k].total_bytes >= 3ull * VT_STREAMED_BATCH_BYTES)
			return 1;
	return 0;
}

static int streams_batches(const struct ctx *c, int dev)
{
	/* A batch tensor is made once steps run: a host-filled tensor made
	 * before the first step whose size merely recurs (a checkpoint's copy
	 * the size of a batch gathered on the device) is no streamed batch. */
	uint64_t first_step = c->p->nsteps ? c->p->step_t[0] : 0;
	for (uint32_t i = c->p->alloc_begin; i < c->p->alloc_end; i++) {
		const struct facts *f = &c->f[i - c->p->alloc_begin];
		const struct vt_alloc *a = &c->m->allocs[i];
		if (f->device != dev || !f->charged || a->bytes < VT_STREAMED_BATCH_BYTES)
			continue;
		if (a->category == VT_CAT_POOL
		        ? vt_region_takes_batches(c->m, i)
		        : f->host_filled &&
		              ((f->recurring && a->t_alloc >= first_step) || refilled(c, a)))
			return 1;
	}
	return 0;
}

/* When the device's weights were filled from the host (a checkpoint, a
 * model file) the last time, 0 if never: trained weights the twin rules
 * found, or tensors of a site that loaded several. */
static uint64_t weights_loaded_t(const struct ctx *c, int dev)
{
	uint64_t last = 0;
	for (uint32_t i = c->p->alloc_begin; i < c->p->alloc_end; i++) {
		const struct facts *f = &c->f[i - c->p->alloc_begin];
		const struct vt_alloc *a = &c->m->allocs[i];
		if (f->device != dev || !f->charged || !f->host_filled)
			continue;
		const struct vt_alloc_copies *cp = vt_model_copies(c->m, a);
		int weight =
		    f->decided ? a->category == VT_CAT_WEIGHTS
		               : !f->recurring &&
		                     vt_upload_site_is_loader(c->sites, cp->h2d_stack_id, a->bytes);
		if (weight && cp->t_first_h2d != VT_T_NEVER && cp->t_first_h2d > last)
			last = cp->t_first_h2d;
	}
	return last;
}

/* Whether anything trains on the device: the twin rules found weights with
 * gradients, or optimizer slots. */
static int trains(struct size_count *sizes)
{
	struct size_count *s, *tmp;
	HASH_ITER(hh, sizes, s, tmp)
	{
		if (s->weights || s->gradient_size || s->kept)
			return 1;
	}
	return 0;
}

/* A long-lived tensor filled from the host in one upload, no gradient twin,
 * and nothing in the stacks' names: data or frozen weights, which the
 * events tell apart only by how the job uses them. Batches copied out of it
 * on the device say data. In a job that streams its batches from the
 * host, an upload made while the model was loaded from the host (before its
 * last weight upload: frozen layers beside trained ones, a fine-tune's
 * checkpoint) or on a device where nothing trains (an inference server)
 * makes weights the better guess, data the alternative: not confident.
 * Otherwise data: TensorFlow's numpy path uploads the whole dataset when
 * training starts, after the model, and streams its batches too. */
static void data_or_frozen_weights(struct ctx *c, struct vt_alloc *a, struct facts *f)
{
	const struct vt_alloc_copies *cp = vt_model_copies(c->m, a);
	/* slices: copies of part of it (a batch); whole copies out every step
	 * are a parameter broadcast to another rank (ZeRO's _sync_params) */
	int slices = cp->d2d_out_copies && cp->d2d_out_bytes / cp->d2d_out_copies < a->bytes;
	if (cp->d2d_out_copies >= 2 && slices && c->p->nsteps >= 2)
		set_cat(a, f, VT_CAT_DATASET, 90, R_DATASET_SLICED);
	else if (c->streams_batches && (!c->trains || cp->t_first_h2d < c->weights_loaded_t))
		set_cat(a, f, VT_CAT_WEIGHTS, 60, R_FROZEN_WEIGHTS);
	else
		set_cat(a, f, VT_CAT_DATASET, 75, R_DATASET);
}

/* Whether long-lived allocation i (not from the host) was filled by
 * device-to-device copies, most of its bytes, from tensors the host filled
 * that were gone before training: a model's parameters packed into one
 * flat buffer, each parameter then a view into it (FSDP's FlatParameter,
 * apex's and Megatron's flattened buffers). Who wrote the bytes says
 * weights where no size or twin can: the flat buffer's size is no
 * parameter's. The first copy's source speaks for the rest. */
static int flattened_weights(const struct ctx *c, uint32_t i, const struct facts *f)
{
	const struct vt_alloc *a = &c->m->allocs[i];
	const struct vt_alloc_copies *cp = vt_model_copies(c->m, a);
	uint64_t first_step = c->p->nsteps ? c->p->step_t[0] : VT_T_NEVER;
	if (f->host_filled || cp->d2d_in_copies < 2 || cp->d2d_in_bytes * 10 < a->bytes * 9 ||
	    cp->d2d_src < c->p->alloc_begin || cp->d2d_src >= c->p->alloc_end)
		return 0;
	const struct vt_alloc *src = &c->m->allocs[cp->d2d_src];
	const struct facts *sf = &c->f[cp->d2d_src - c->p->alloc_begin];
	return sf->host_filled && src->t_free != VT_T_NEVER && src->t_free < first_step;
}

/* What the twin rules left: optimizer slots (a weight's size, made after
 * it), datasets (host-filled, no twin), weights without a visible twin. */
static void rest_of_long_lived(struct ctx *c, struct size_count *sizes, const uint32_t *ll,
                               uint32_t n)
{
	uint64_t first_step = c->p->nsteps ? c->p->step_t[0] : VT_T_NEVER;
	for (uint32_t i = 0; i < n; i++) {
		struct vt_alloc *a = &c->m->allocs[ll[i]];
		struct facts *f = &c->f[ll[i] - c->p->alloc_begin];
		if (f->decided)
			continue;
		struct size_count *s = size_find(sizes, a->bytes);
		uint32_t stack = vt_model_copies(c->m, a)->h2d_stack_id;
		if (by_name(c, a, f, stack))
			continue;
		if (flattened_weights(c, ll[i], f)) {
			set_cat(a, f, VT_CAT_WEIGHTS, 80, R_FLATTENED);
			size_find(sizes, a->bytes)->weights++; /* count_sizes made it */
			continue;
		}
		if (f->kept && !f->host_filled)
			set_cat(a, f, VT_CAT_ACTIVATIONS, 50, R_KEPT_PER_STEP);
		else if (s->weights > 0 && !f->host_filled)
			set_cat(a, f, VT_CAT_OPTIMIZER, 85, R_OPTIMIZER);
		else if (f->host_filled && vt_upload_site_is_loader(c->sites, stack, a->bytes))
			set_cat(a, f, VT_CAT_WEIGHTS, 60, R_LOADED_WEIGHTS);
		else if (f->host_filled)
			data_or_frozen_weights(c, a, f);
		else if (a->t_alloc < first_step)
			set_cat(a, f, VT_CAT_WEIGHTS, 50, R_EARLY_WEIGHTS);
		else if (c->caching)
			set_cat(a, f, VT_CAT_ACTIVATIONS, 50, R_CACHED_ACTIVATIONS);
		else
			set_cat(a, f, VT_CAT_UNKNOWN, 30, R_LONG_UNKNOWN);
	}
}

/* ... unless it is the size of a weight loaded before it: state made to
 * mirror the weights (optax's `zeros_like(params)` before training, the
 * gradients inside XLA's temp buffer, so no gradient shows), optimizer
 * state with weights the alternative. */
/* A device where nothing trains (no gradient, no optimizer slot; requests
 * of a server may still repeat like steps) whose weights came from the
 * host (inference, a server): a long-lived buffer made on the device and never filled
 * from the host is not a weight (a model is loaded, not made, where it is
 * not trained) but a cache or workspace it fills itself: a KV cache, an
 * engine's compute buffer. Unknown, with weights the alternative; one the
 * host reads back again and again is each request's output (activations). */
struct loaded_size {
	uint64_t bytes;
	uint64_t t_first; /* when the first weight of this size was made */
	UT_hash_handle hh;
};

static int loaded_weight(const struct ctx *c, uint32_t i, int dev)
{
	const struct facts *f = &c->f[i - c->p->alloc_begin];
	return f->device == dev && f->host_filled && c->m->allocs[i].category == VT_CAT_WEIGHTS;
}

static void serving_buffers(struct ctx *c, int dev)
{
	struct loaded_size *sizes = NULL, *e, *tmp;
	for (uint32_t i = c->p->alloc_begin; !c->trains && i < c->p->alloc_end; i++) {
		const struct vt_alloc *a = &c->m->allocs[i];
		if (!loaded_weight(c, i, dev))
			continue;
		HASH_FIND(hh, sizes, &a->bytes, sizeof a->bytes, e);
		if (e)
			continue;
		if (!(e = calloc(1, sizeof *e)))
			vt_nomem();
		*e = (struct loaded_size){.bytes = a->bytes, .t_first = a->t_alloc};
		HASH_ADD(hh, sizes, bytes, sizeof e->bytes, e);
	}
	for (uint32_t i = c->p->alloc_begin; sizes && i < c->p->alloc_end; i++) {
		struct vt_alloc *a = &c->m->allocs[i];
		struct facts *f = &c->f[i - c->p->alloc_begin];
		if (f->device != dev || a->reason != R_EARLY_WEIGHTS)
			continue;
		HASH_FIND(hh, sizes, &a->bytes, sizeof a->bytes, e);
		if (e && e->t_first < a->t_alloc)
			set_cat(a, f, VT_CAT_OPTIMIZER, 55, R_MIRRORS_LOADED);
		else if (vt_model_copies(c->m, a)->d2h_copies >= 3)
			set_cat(a, f, VT_CAT_ACTIVATIONS, 70, R_SERVED_OUTPUT);
		else
			set_cat(a, f, VT_CAT_UNKNOWN, 60, R_SERVING_BUFFER);
	}
	HASH_ITER(hh, sizes, e, tmp)
	{
		HASH_DEL(sizes, e);
		free(e);
	}
}

/* Whether allocation i of dev is a parameter that was packed into a flat
 * buffer: filled from the host, copied whole to the device elsewhere, and
 * gone before training. */
static int flattened_parameter(const struct ctx *c, uint32_t i, uint64_t first_step)
{
	const struct vt_alloc *a = &c->m->allocs[i];
	const struct facts *f = &c->f[i - c->p->alloc_begin];
	return f->device == c->dev && f->host_filled && a->t_free < first_step &&
	       vt_model_copies(c->m, a)->d2d_out_bytes >= a->bytes;
}

/* With a flat weights buffer on the device (R_FLATTENED), the parameters
 * packed into it are gone, but each still gets a gradient every step (its
 * `.grad`, added into a flat gradient buffer by a hook): their sizes are
 * gradient sizes, as many a step as parameters of that size. */
static void flattened_parameter_sizes(struct ctx *c, int dev, struct size_count *sizes)
{
	uint64_t first_step = c->p->nsteps ? c->p->step_t[0] : VT_T_NEVER;
	int flat = 0;
	for (uint32_t i = c->p->alloc_begin; i < c->p->alloc_end && !flat; i++)
		flat = c->m->allocs[i].device == dev && c->m->allocs[i].reason == R_FLATTENED;
	for (uint32_t i = c->p->alloc_begin; flat && i < c->p->alloc_end; i++) {
		struct size_count *s;
		if (!flattened_parameter(c, i, first_step) ||
		    !(s = size_find(sizes, c->m->allocs[i].bytes)) || s->weights)
			continue;
		s->gradient_size = 1;
		s->params_flattened++;
	}
	struct size_count *s, *tmp;
	HASH_ITER(hh, sizes, s, tmp)
	if (s->params_flattened && !s->grads_per_step)
		s->grads_per_step = s->params_flattened;
}

/* ---- state handed from step to step ------------------------------------- */

/* A jitted step without buffer donation (JAX's default) returns new
 * parameter and optimizer-state buffers every step, and the old ones die in
 * the next: no weight is long-lived at any address. Per size: the tensors
 * made before training that die in the first two steps (the generation the
 * first step consumes: `init`, `tx.init`) are m origins; when at least four
 * steps in five each make m or more of that size, not from the host, that
 * live into the next step exactly (the last step's live to the end), the
 * size is carried state. A step's activations die in their step, a
 * prefetched batch comes from the host, and an activation kept into the
 * next step has no origin before training. Within each generation (and
 * among the origins) the first of the size is the parameter, later ones
 * the optimizer's state (parameters are made before the state that mirrors
 * them): only the order tells them apart, so confidence 55 with the other
 * as the alternative. */
struct carried {
	uint64_t bytes;
	uint32_t origins;    /* made before training, dead by the end of the second step */
	uint32_t good_steps; /* steps that made a whole generation */
	uint32_t in_step;    /* of the step being counted */
	int cur_step;
	uint32_t taken; /* generation members decided in cur_step */
	UT_hash_handle hh;
};

/* The step a free belongs to; the free that ends a step (the valley the
 * period rule starts the next step at) belongs to the step it ends. */
static int freed_in(const struct ctx *c, const struct vt_alloc *a)
{
	return a->t_free ? vt_step_of(c->p, a->t_free - 1) : -1;
}

static int hands_on(const struct ctx *c, const struct vt_alloc *a, const struct facts *f)
{
	uint32_t steps = c->p->nsteps;
	return f->born >= 0 && !f->host_filled &&
	       (f->freed ? freed_in(c, a) == f->born + 1 : f->born + 1 == (int)steps);
}

static int origin(const struct ctx *c, const struct vt_alloc *a, const struct facts *f)
{
	int died = f->freed ? freed_in(c, a) : -1;
	return a->t_alloc < c->p->step_t[0] && died >= 0 && died <= 1;
}

static struct carried *carried_find(struct carried *tab, uint64_t bytes)
{
	struct carried *e;
	HASH_FIND(hh, tab, &bytes, sizeof bytes, e);
	return e;
}

static void count_generations(struct ctx *c, int dev, struct carried **tab)
{
	for (uint32_t i = c->p->alloc_begin; i < c->p->alloc_end; i++) {
		const struct vt_alloc *a = &c->m->allocs[i];
		const struct facts *f = &c->f[i - c->p->alloc_begin];
		if (f->device != dev || !f->charged || f->decided || !origin(c, a, f))
			continue;
		struct carried *e = carried_find(*tab, a->bytes);
		if (!e) {
			if (!(e = calloc(1, sizeof *e)))
				vt_nomem();
			e->bytes = a->bytes;
			e->cur_step = -1;
			HASH_ADD(hh, *tab, bytes, sizeof e->bytes, e);
		}
		e->origins++;
	}
	for (uint32_t i = c->p->alloc_begin; *tab && i < c->p->alloc_end; i++) {
		const struct facts *f = &c->f[i - c->p->alloc_begin];
		struct carried *e;
		if (f->device != dev || !f->charged || f->decided ||
		    !hands_on(c, &c->m->allocs[i], f) ||
		    !(e = carried_find(*tab, c->m->allocs[i].bytes)))
			continue;
		if (f->born != e->cur_step) {
			e->good_steps += e->in_step >= e->origins;
			e->cur_step = f->born;
			e->in_step = 0;
		}
		e->in_step++;
	}
	struct carried *e, *tmp;
	HASH_ITER(hh, *tab, e, tmp)
	{
		e->good_steps += e->in_step >= e->origins;
		e->cur_step = -1;
		e->in_step = 0;
	}
}

static void carried_state(struct ctx *c, int dev)
{
	uint32_t steps = c->p->nsteps;
	if (steps < 3)
		return;
	struct carried *tab = NULL, *e, *tmp;
	count_generations(c, dev, &tab);
	for (uint32_t i = c->p->alloc_begin; tab && i < c->p->alloc_end; i++) {
		struct vt_alloc *a = &c->m->allocs[i];
		struct facts *f = &c->f[i - c->p->alloc_begin];
		if (f->device != dev || !f->charged || f->decided ||
		    !(e = carried_find(tab, a->bytes)) || e->good_steps * 5 < steps * 4)
			continue;
		int step = origin(c, a, f) ? -2 : hands_on(c, a, f) ? f->born : -3;
		if (step == -3)
			continue;
		if (step != e->cur_step) {
			e->cur_step = step;
			e->taken = 0;
		}
		if (e->taken++ >= e->origins)
			continue;
		if (c->keys[f->key]->fold)
			vt_fold_set_inexact(c->m, "state handed from step to step is folded");
		if (e->taken == 1)
			set_cat(a, f, VT_CAT_WEIGHTS, 55, R_CARRIED_WEIGHTS);
		else
			set_cat(a, f, VT_CAT_OPTIMIZER, 55, R_CARRIED_STATE);
	}
	HASH_ITER(hh, tab, e, tmp)
	{
		HASH_DEL(tab, e);
		free(e);
	}
}

/* Does allocation j of the process walk with allocation i through
 * recurring_ones' gradient-size branch in i's step? */
static int same_walk(const struct ctx *c, const struct facts *fi, uint32_t j)
{
	const struct facts *f = &c->f[j - c->p->alloc_begin];
	return f->key == fi->key && f->born == fi->born && f->recurring && !f->decided &&
	       !f->host_filled;
}

struct lifetime {
	uint64_t t_free;
	uint32_t place;
};

static int by_later_free(const void *x, const void *y)
{
	const struct lifetime *a = x, *b = y;
	if ((a->place == 0) != (b->place == 0))
		return a->place == 0 ? 1 : -1;
	if (a->t_free != b->t_free)
		return a->t_free < b->t_free ? 1 : -1;
	return a->place < b->place ? 1 : a->place > b->place ? -1 : 0;
}

/* The gradients among the allocations of s in allocation i's step: the
 * grads_per_step that are freed last (a gradient lives until the optimizer
 * has used it; the forward pass's activations die in the backward pass),
 * later place first among equals, but never the step's first of the size
 * while others remain: the forward pass comes first, and a tensor it makes
 * may outlive the gradients (a GAN's generated batch, used by both
 * models' updates). "The last made" is wrong under gradient accumulation
 * (the kept .grad is made by the first micro-batch's backward, before the
 * activations of the next three) and under activation checkpointing (the
 * recomputed forward of an early segment comes after the gradients of the
 * later ones). Sets s->is_grad by place. */
static void mark_step_gradients(struct ctx *c, struct size_count *s, uint32_t i)
{
	const struct facts *fi = &c->f[i - c->p->alloc_begin];
	int step = fi->born;
	uint64_t end = (uint32_t)step + 1 < c->p->nsteps ? c->p->step_t[step + 1] : VT_T_NEVER;
	struct lifetime *l = NULL;
	uint32_t n = 0, cap = 0;
	for (uint32_t j = i; j < c->p->alloc_end && c->m->allocs[j].t_alloc < end; j++) {
		if (!same_walk(c, fi, j))
			continue;
		if (n == cap) {
			cap = cap ? 2 * cap : 16;
			l = realloc(l, cap * sizeof *l);
			if (!l)
				vt_nomem();
		}
		l[n].t_free = c->m->allocs[j].t_free;
		l[n].place = n;
		n++;
	}
	if (n > s->is_grad_cap) {
		s->is_grad = realloc(s->is_grad, n);
		if (!s->is_grad)
			vt_nomem();
		s->is_grad_cap = n;
	}
	if (n) { /* none when the step table moved under it (threads racing the clock) */
		memset(s->is_grad, 0, n);
		qsort(l, n, sizeof *l, by_later_free);
	}
	for (uint32_t k = 0; k < n && k < s->grads_per_step; k++)
		s->is_grad[l[k].place] = 1;
	s->is_grad_n = n;
	free(l);
}

/* Within a step, the allocations of a gradient size that are not its
 * gradients are the forward pass's activations of that size. */
static int activation_of_weight_size(struct ctx *c, struct size_count *s, uint32_t i)
{
	int step = c->f[i - c->p->alloc_begin].born;
	int first = step != s->cur_step;
	if (first) {
		s->cur_step = step;
		s->idx_in_step = 0;
	}
	uint32_t idx = s->idx_in_step++;
	if (!s->made) /* asked once per recurring allocation: worth keeping */
		s->made = per_step(s);
	uint32_t made = s->made;
	if (!s->grads_per_step || s->grads_per_step >= made)
		return 0;
	if (first)
		mark_step_gradients(c, s, i);
	return idx < s->is_grad_n ? !s->is_grad[idx] : idx < made - s->grads_per_step;
}

/* A tensor of a size that recurs, filled from the host under a framework's
 * model loading (a CONTEXT rule of frame_rules.def: `Module._apply`,
 * `load_state_dict`): a parameter uploaded once that happens to share its
 * size with the activations or batches of every step, not a batch. */
static int weights_by_name(struct ctx *c, const struct vt_alloc *a)
{
	struct vt_frame_hint h =
	    vt_frame_hint(c->fe, c->proc, vt_model_copies(c->m, a)->h2d_stack_id);
	return h.category == VT_CAT_WEIGHTS && h.strength == VT_FRAME_CONTEXT;
}

/* Filled (nine tenths of it at least) by device-to-device copies, the
 * first from a weight: the parameters a sharded job gathers for the step
 * (FSDP's unsharded flat parameter, its own shard copied in and the other
 * ranks' arriving by peer copies). Who wrote the bytes says weights where
 * the size, no weight's, cannot. */
static int gathered_weights(const struct ctx *c, const struct vt_alloc *a)
{
	const struct vt_alloc_copies *cp = vt_model_copies(c->m, a);
	if (cp->d2d_in_bytes * 10 < a->bytes * 9 || cp->d2d_src < c->p->alloc_begin ||
	    cp->d2d_src >= c->p->alloc_end)
		return 0;
	return c->m->allocs[cp->d2d_src].category == VT_CAT_WEIGHTS;
}

/* Is allocation i of this process (not filled from the host, long-lived)
 * written in most steps by device-to-device copies whose first source is a
 * gradient (made every step, or kept between steps: `zero_grad(set_to_none=
 * False)` under DDP)? Who writes the bytes, and how often: evidence a size
 * cannot give by coincidence. Chained buffers (NCCL's channel, filled from the bucket)
 * are not: their source is not a gradient. */
static int written_from_gradients(const struct ctx *c, uint32_t i, const struct facts *f)
{
	uint32_t steps = c->p->nsteps;
	if (steps < 3 || f->recurring || f->host_filled || !f->charged)
		return 0;
	const struct vt_alloc_copies *cp = vt_model_copies(c->m, &c->m->allocs[i]);
	if (cp->d2d_in_copies + 1 < steps || cp->d2d_src < c->p->alloc_begin ||
	    cp->d2d_src >= c->p->alloc_end)
		return 0;
	const struct vt_alloc *src = &c->m->allocs[cp->d2d_src];
	return src->category == VT_CAT_GRADIENTS &&
	       (src->reason == R_GRADIENTS || src->reason == R_KEPT_GRADIENT);
}

/* Gradient buckets of device dev: decided after the per-step gradients are,
 * whatever the long-lived rules made of them before. */
static void gradient_buckets(struct ctx *c, int dev)
{
	for (uint32_t i = c->p->alloc_begin; i < c->p->alloc_end; i++) {
		struct facts *f = &c->f[i - c->p->alloc_begin];
		if (f->device == dev && written_from_gradients(c, i, f))
			set_cat(&c->m->allocs[i], f, VT_CAT_GRADIENTS, 80, R_GRAD_BUCKET);
	}
}

/* Buffers of any device written in most steps from a gradient bucket (the
 * all-reduce's NCCL channel, fed by peer copies from the other rank's
 * bucket): a communication buffer, whatever its size matched. After every
 * device's buckets are known. */
static void comm_buffers(struct ctx *c)
{
	for (uint32_t i = c->p->alloc_begin; i < c->p->alloc_end; i++) {
		struct vt_alloc *a = &c->m->allocs[i];
		const struct vt_alloc_copies *cp = vt_model_copies(c->m, a);
		if (a->reason == R_GRAD_BUCKET || !rewritten_on_device(c, a) ||
		    cp->d2d_src < c->p->alloc_begin || cp->d2d_src >= c->p->alloc_end ||
		    c->m->allocs[cp->d2d_src].reason != R_GRAD_BUCKET)
			continue;
		set_cat(a, &c->f[i - c->p->alloc_begin], VT_CAT_UNKNOWN, 60, R_COMM_BUFFER);
	}
}

/* A kept record of a folded key's era, of a size whose place in the step
 * decides (activations sharing a gradient size): its place counts the
 * folded ones too, which the classifier does not see. */
static int activation_in_step(struct ctx *c, const struct facts *f, struct size_count *s)
{
	int act = activation_of_weight_size(c, s, (uint32_t)(f - c->f) + c->p->alloc_begin);
	if (c->keys[f->key]->fold && f->born >= (int)vt_fold_keep_steps(c->m) &&
	    s->grads_per_step && s->grads_per_step < s->made)
		vt_fold_set_inexact(c->m, "a kept allocation's place in its step is not known");
	return act;
}

static void set_group(struct vt_fold_group *g, int cat, int conf, enum reason why)
{
	g->category = (uint8_t)cat;
	g->confidence = (uint8_t)conf;
	g->reason = (uint8_t)why;
}

/* The folded groups of dev, as recurring_ones decides each of their
 * allocations (none was filled from the host). */
static void recurring_groups(struct ctx *c, int dev, struct size_count *sizes)
{
	uint32_t ng;
	struct vt_fold_group *g = vt_fold_groups(c->m, &ng);
	for (uint32_t i = 0; i < ng; i++) {
		if (g[i].proc != c->proc || g[i].device != dev)
			continue;
		int transient_only;
		group_recurs(c, &g[i], &transient_only);
		struct size_count *s = size_find(sizes, g[i].bytes);
		int grad = s && s->gradient_size;
		if (s && !s->made)
			s->made = per_step(s);
		if (s && s->frozen)
			set_group(&g[i], VT_CAT_ACTIVATIONS, 65, R_FROZEN_SIZE_ACT);
		else if (transient_only && !grad)
			set_group(&g[i], VT_CAT_ACTIVATIONS, 70, R_TRANSIENT);
		else if (grad && s->grads_per_step && s->grads_per_step < s->made &&
		         g[i].place < s->made - s->grads_per_step)
			set_group(&g[i], VT_CAT_ACTIVATIONS, 60, R_FORWARD);
		else if (grad)
			set_group(&g[i], VT_CAT_GRADIENTS, 85, R_GRADIENTS);
		else
			set_group(&g[i], VT_CAT_ACTIVATIONS, 75, R_ACTIVATIONS);
	}
}

static void recurring_ones(struct ctx *c, int dev, struct size_count *sizes)
{
	for (uint32_t i = c->p->alloc_begin; i < c->p->alloc_end; i++) {
		struct facts *f = &c->f[i - c->p->alloc_begin];
		if (f->device != dev || f->decided || !f->recurring)
			continue;
		struct vt_alloc *a = &c->m->allocs[i];
		struct size_count **slot = &c->size_by_key[f->key];
		if (!*slot)
			*slot = size_find(sizes, fact_bytes(c, f));
		struct size_count *s = *slot;
		if (f->host_filled && weights_by_name(c, a))
			set_cat(a, f, VT_CAT_WEIGHTS, 85, R_WEIGHTS_BY_NAME);
		else if (!f->host_filled && gathered_weights(c, a))
			set_cat(a, f, VT_CAT_WEIGHTS, 70, R_GATHERED);
		else if (f->host_filled && f->transient)
			set_cat(a, f, VT_CAT_PREFETCH, 70, R_TRANSIENT_BATCH);
		else if (f->host_filled)
			set_cat(a, f, VT_CAT_PREFETCH, 85, R_PREFETCH);
		else if (s && s->frozen)
			set_cat(a, f, VT_CAT_ACTIVATIONS, 65, R_FROZEN_SIZE_ACT);
		else if (f->transient && !(s && s->gradient_size))
			set_cat(a, f, VT_CAT_ACTIVATIONS, 70, R_TRANSIENT);
		else if (s && s->gradient_size && activation_in_step(c, f, s))
			set_cat(a, f, VT_CAT_ACTIVATIONS, 60, R_FORWARD);
		else if (s && s->gradient_size)
			set_cat(a, f, VT_CAT_GRADIENTS, 85, R_GRADIENTS);
		else
			set_cat(a, f, VT_CAT_ACTIVATIONS, 75, R_ACTIVATIONS);
	}
}

/* A long-lived tensor of the device being classified, filled from the host,
 * that no rule explained yet (not a batch, a ring, a pool, a weight with a
 * gradient twin): what upload_sites.h counts per site. Trained weights do not
 * count, so a program that uploads its weights and its dataset through one
 * helper still has a dataset. */
static int loaded_tensor(const struct vt_model *m, uint32_t i, void *arg)
{
	const struct ctx *c = arg;
	const struct facts *f = &c->f[i - c->p->alloc_begin];
	(void)m;
	return f->device == c->dev && f->charged && f->host_filled && !f->recurring && !f->decided;
}

/* A pool region of the device: its single-copy ranges count too (weights
 * device_put leaf by leaf, some in a region, some in their own chunk). */
static int pool_region(const struct vt_model *m, uint32_t i, void *arg)
{
	const struct ctx *c = arg;
	return m->allocs[i].device == c->dev && m->allocs[i].category == VT_CAT_POOL;
}

/* A backward pass makes a gradient for every trained weight, and an
 * optimizer with state makes its slots during training. Twins that only a
 * minority of the tensors made before training have (by count and by
 * bytes), with no long-lived tensor made during training the size of one
 * made before (optimizer slots, gradients kept between steps),
 * are activations that happen to share a weight's size: an inference job
 * (torch_inference: four 6 MiB activations per batch beside four 6 MiB
 * weights). Then no size is a gradient size. */
static int twins_believable(struct ctx *c, struct size_count *sizes, const uint32_t *ll, uint32_t n)
{
	uint64_t first_step = c->p->nsteps ? c->p->step_t[0] : VT_T_NEVER;
	uint32_t before = 0, twinned = 0, during = 0;
	uint64_t before_bytes = 0, twinned_bytes = 0;
	for (uint32_t i = 0; i < n; i++) {
		const struct vt_alloc *a = &c->m->allocs[ll[i]];
		const struct size_count *s = size_find(sizes, a->bytes);
		int twin = s && s->recurring;
		if (a->t_alloc >= first_step) { /* a slot, or a gradient kept */
			during += s && s->ll_before;
			continue;
		}
		before++;
		before_bytes += a->bytes;
		twinned += twin;
		twinned_bytes += twin ? a->bytes : 0;
	}
	return during || !before || twinned * 2 >= before || twinned_bytes * 2 >= before_bytes;
}

static void classify_device(struct ctx *c, int dev, uint32_t *ll_buf)
{
	carried_state(c, dev);
	uint32_t n = long_lived(c, dev, ll_buf);
	struct size_count *sizes = NULL;
	c->size_by_key = calloc(c->nkeys ? c->nkeys : 1, sizeof *c->size_by_key);
	if (!c->size_by_key)
		vt_nomem();
	count_sizes(c, dev, &sizes, ll_buf, n);
	/* a flat bucket is evidence of its own: the sum of a run of tensors */
	int flat = find_flat_bucket(c, sizes, ll_buf, n);
	if (flat || twins_believable(c, sizes, ll_buf, n)) {
		weights_by_kept_twins(c, sizes, ll_buf, n, !flat);
		weights_by_twin(c, sizes, ll_buf, n);
	}
	c->dev = dev;
	c->streams_batches = streams_batches(c, dev);
	c->sites = vt_upload_sites_count(c->m, c->proc, loaded_tensor, pool_region, c);
	c->weights_loaded_t = weights_loaded_t(c, dev);
	c->trains = trains(sizes);
	c->caching = c->caching_on[dev];
	rest_of_long_lived(c, sizes, ll_buf, n);
	vt_upload_sites_free(c->sites);
	c->sites = NULL;
	serving_buffers(c, dev);
	flattened_parameter_sizes(c, dev, sizes);
	recurring_ones(c, dev, sizes);
	recurring_groups(c, dev, sizes);
	gradient_buckets(c, dev);
	free(c->size_by_key);
	c->size_by_key = NULL;
	free_sizes(&sizes);
}

/* The step of every allocation and free. Allocations and frees are each in
 * time order, so a cursor walks the steps; a binary search only where time
 * went backwards (threads racing for the clock). */
static int step_cursor(const struct vt_step_table *st, uint32_t *cur, uint64_t t)
{
	if (!st->n)
		return -1;
	if (*cur > 0 && t < st->t[*cur - 1]) {
		int s = vt_step_in(st->t, st->n, t);
		*cur = (uint32_t)(s + 1);
		return s;
	}
	while (*cur < st->n && st->t[*cur] <= t)
		(*cur)++;
	return (int)*cur - 1;
}

/* The step of a free, from the step of its allocation: most allocations
 * die within a few steps, so a short walk forward beats a search, and it
 * reads the allocation's own record instead of the free order's scattered
 * ones. Time behind the start (threads racing for the clock): a search. */
static int step_from(const struct vt_step_table *st, int from, uint64_t t)
{
	if (from < 0 || t < st->t[from])
		return vt_step_in(st->t, st->n, t);
	for (int k = 0; k < 8; k++, from++)
		if ((uint32_t)from + 1 >= st->n || st->t[from + 1] > t)
			return from;
	return vt_step_in(st->t, st->n, t);
}

/* How many rows allocation i holds when the host wrote it a row at a time:
 * three copies at least, every one the same size at a multiple of it, the
 * allocation a whole number (16 at least) of such rows; else 0. */
#define ROW_STORE_MIN_ROWS 16
static uint64_t rows_written(const struct ctx *c, uint32_t i)
{
	const struct vt_alloc *a = &c->m->allocs[i];
	uint32_t n = 0;
	const struct vt_copy_range *r =
	    a->flags & VT_AF_PARTIAL_COPIES ? vt_model_ranges(c->m, i, &n) : NULL;
	if (n < 3 || !r[0].bytes || a->bytes % r[0].bytes)
		return 0;
	for (uint32_t k = 0; k < n; k++)
		if (r[k].bytes != r[0].bytes || r[k].offset % r[0].bytes)
			return 0;
	uint64_t rows = a->bytes / r[0].bytes;
	return rows >= ROW_STORE_MIN_ROWS ? rows : 0;
}

/* Buffers the pool rule took for allocator regions, written from the host a
 * row at a time, with a sibling of as many rows written as often: one table
 * of samples stored a column per key (TorchRL's LazyTensorStorage: every
 * environment step writes one row of observations, actions, rewards...).
 * An allocator region gets tensors of many sizes at offsets that do not
 * line up; two regions with the same row count and copy count would be a
 * coincidence. Such a table holds the training data: dataset, with pool the
 * alternative; it never arrives whole, so it raises no whole-dataset
 * finding. */
struct row_store {
	uint64_t rows;
	uint32_t idx, copies;
	uint8_t device;
};

static void row_stores(struct ctx *c)
{
	struct row_store *rs = NULL;
	uint32_t n = 0, cap = 0;
	for (uint32_t i = c->p->alloc_begin; i < c->p->alloc_end; i++) {
		const struct vt_alloc *a = &c->m->allocs[i];
		uint64_t rows = a->reason == R_POOL ? rows_written(c, i) : 0;
		if (!rows)
			continue;
		if (n == cap) {
			cap = cap ? 2 * cap : 8;
			if (!(rs = realloc(rs, cap * sizeof *rs)))
				vt_nomem();
		}
		rs[n++] =
		    (struct row_store){rows, i, vt_model_copies(c->m, a)->h2d_copies, a->device};
	}
	for (uint32_t x = 0; x < n; x++)
		for (uint32_t y = 0; y < n; y++)
			if (x != y && rs[x].rows == rs[y].rows && rs[x].device == rs[y].device &&
			    rs[x].copies == rs[y].copies) {
				uint32_t i = rs[x].idx;
				set_cat(&c->m->allocs[i], &c->f[i - c->p->alloc_begin],
				        VT_CAT_DATASET, 65, R_ROW_STORE);
				break;
			}
	free(rs);
	c->p->pool_mode = 0;
	for (uint32_t i = c->p->alloc_begin; i < c->p->alloc_end && !c->p->pool_mode; i++)
		c->p->pool_mode = c->m->allocs[i].category == VT_CAT_POOL;
}

/* The step table of device dev: its own, or the process's. */
static const struct vt_step_table *steps_of(const struct ctx *c, int dev)
{
	return c->own && dev < VT_MAX_DEVICES && c->own[dev].t ? &c->own[dev] : &c->proc_steps;
}

static int by_u64(const void *x, const void *y)
{
	uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;
	return a < b ? -1 : a > b;
}

/* Median distance from each of a device's step starts (the first, an
 * estimate, left out) to the nearest process step start. */
static uint64_t phase_gap(const struct vt_step_table *own, const struct vt_step_table *proc)
{
	uint64_t *d = malloc(own->n * sizeof *d);
	if (!d)
		return 0;
	uint32_t n = 0;
	for (uint32_t i = 1; i < own->n; i++) {
		int k = vt_step_in(proc->t, proc->n, own->t[i]);
		uint64_t after = k < 0 ? UINT64_MAX : own->t[i] - proc->t[k];
		uint64_t before =
		    (uint32_t)(k + 1) < proc->n ? proc->t[k + 1] - own->t[i] : UINT64_MAX;
		d[n++] = after < before ? after : before;
	}
	if (n)
		qsort(d, n, sizeof *d, by_u64);
	uint64_t median = n ? d[(n - 1) / 2] : 0;
	free(d);
	return median;
}

/* A device in phase with the process's steps found by the period of
 * another device: the steps are the process's, but the first begins where
 * the device's own first step does (its lazy state, its first gradients are
 * its own; ranks start their first steps apart). Rewrites tab so; 0 when
 * nothing differs or the steps came from markers (then exact). */
static int own_first_step(const struct ctx *c, struct vt_step_table *tab)
{
	const struct vt_step_table *proc = &c->proc_steps;
	if (c->p->step_source != VT_STEPS_PERIOD || tab->t[0] == proc->t[0] ||
	    tab->t[0] >= proc->t[1])
		return 0;
	uint64_t *t = malloc(proc->n * sizeof *t);
	if (!t)
		return 0;
	memcpy(t, proc->t, proc->n * sizeof *t);
	t[0] = tab->t[0];
	free(tab->t);
	*tab = (struct vt_step_table){t, proc->n, proc->period_ns};
	return 1;
}

/* Where two devices are driven by two threads, each device's steps are its
 * own: markers from one rank, or the period of the busiest device, cut the
 * other rank's steps anywhere, and its gradient buffer then reads as made
 * in one step and freed in the next. A device takes its own steps (the
 * period rule on its allocations alone) when they are as many as the
 * process's (within one, or a tenth) and start out of phase with them (the
 * median distance to the nearest process step start over a tenth of the
 * period); the device the markers came from, or the period was found on,
 * is in phase and keeps the process's, and another in phase keeps them but
 * for its first step's start (own_first_step). */
static void own_steps(struct ctx *c)
{
	int devs[VT_MAX_DEVICES] = {0}, used = 0;
	for (uint32_t i = c->p->alloc_begin; i < c->p->alloc_end; i++) {
		const struct vt_alloc *a = &c->m->allocs[i];
		if (a->device != VT_DEVICE_UNKNOWN && (a->flags & VT_AF_CHARGED) &&
		    !devs[a->device])
			used += devs[a->device] = 1;
	}
	const struct vt_step_table *proc = &c->proc_steps;
	if (used < 2 || proc->n < 3 || !proc->period_ns)
		return;
	/* a device's own steps need all of its allocations: a folding model
	 * reused the records of some */
	uint32_t ng;
	const struct vt_fold_group *g = vt_fold_groups(c->m, &ng);
	for (uint32_t i = 0; i < ng; i++)
		if (g[i].proc == c->proc) {
			vt_fold_set_inexact(c->m, "several devices: each one's steps need every "
			                          "allocation");
			break;
		}
	for (int d = 0; d < VT_MAX_DEVICES; d++) {
		struct vt_step_table tab;
		if (!devs[d] || !vt_steps_on_device(c->m, c->p, d, &tab))
			continue;
		uint32_t slack = proc->n / 10 > 1 ? proc->n / 10 : 1;
		uint32_t diff = tab.n > proc->n ? tab.n - proc->n : proc->n - tab.n;
		if (diff > slack ||
		    (phase_gap(&tab, proc) * 10 <= proc->period_ns && !own_first_step(c, &tab))) {
			free(tab.t);
			continue;
		}
		if (!c->own && !(c->own = calloc(VT_MAX_DEVICES, sizeof *c->own)))
			vt_nomem();
		c->own[d] = tab;
	}
}

static void free_own_steps(struct ctx *c)
{
	for (int d = 0; c->own && d < VT_MAX_DEVICES; d++)
		free(c->own[d].t);
	free(c->own);
	c->own = NULL;
}

/* The one pass over the model's records: reset each allocation's verdict,
 * gather its facts, its step, and decide the pools. */
static void gather(struct ctx *c, int *devs)
{
	const struct vt_proc *p = c->p;
	uint32_t cur[VT_MAX_DEVICES] = {0}, last = VT_NO_INDEX; /* runs of one size are common */
	for (uint32_t i = p->alloc_begin; i < p->alloc_end; i++) {
		struct vt_alloc *a = &c->m->allocs[i];
		struct facts *f = &c->f[i - p->alloc_begin];
		a->category = VT_CAT_UNKNOWN;
		a->confidence = 0;
		a->reason = R_NOT_DEVICE;
		if (a->device != VT_DEVICE_UNKNOWN)
			devs[a->device] = 1;
		const struct key_count *lk = last != VT_NO_INDEX ? c->keys[last] : NULL;
		f->key = lk && lk->key.bytes == a->bytes && lk->key.device == a->device
		             ? last
		             : key_index(c, a->bytes, a->device);
		last = f->key;
		f->device = a->device;
		f->charged = (a->flags & VT_AF_CHARGED) != 0;
		f->freed = a->t_free != VT_T_NEVER;
		uint64_t h2d = vt_model_copies(c->m, a)->h2d_bytes;
		f->host_filled = h2d > 0 && h2d * 2 >= a->bytes;
		const struct vt_step_table *st = steps_of(c, a->device);
		f->born = step_cursor(st, &cur[a->device], a->t_alloc);
		f->died = f->freed ? step_from(st, f->born, a->t_free) : (int)st->n;
		classify_pool(c, i, a, f);
		classify_ring(c, a, f);
	}
}

/* ---- the step the job stopped in ------------------------------------------- */

/* Allocations of one (stack, size, device): how many of each category, over
 * the allocations of finished steps. */
struct twin_key {
	struct {
		uint64_t bytes;
		uint32_t stack_id, device;
	} key;
	uint32_t n, by_cat[VT_CAT_COUNT];
	UT_hash_handle hh;
};

/* Made in the last step and still live at the end: the job stopped before
 * that step finished (a kill, an OOM), so the evidence is cut short (a batch
 * buffer allocated but not yet uploaded looks like a gradient of its size).
 * Needs a stack: without one, the twins of a size are not told apart. */
static int unfinished(const struct ctx *c, const struct vt_alloc *a, const struct facts *f)
{
	return c->p->nsteps >= 3 && a->stack_id && a->t_free == VT_T_NEVER &&
	       f->born == (int)c->p->nsteps - 1;
}

static struct twin_key *twin_of(struct twin_key **twins, const struct vt_alloc *a, int add)
{
	struct twin_key probe, *k;
	memset(&probe, 0, sizeof probe);
	probe.key.bytes = a->bytes;
	probe.key.stack_id = a->stack_id;
	probe.key.device = a->device;
	HASH_FIND(hh, *twins, &probe.key, sizeof probe.key, k);
	if (!k && add) {
		k = calloc(1, sizeof *k);
		if (!k)
			vt_nomem();
		k->key = probe.key;
		HASH_ADD(hh, *twins, key, sizeof k->key, k);
	}
	return k;
}

/* The category nine in ten of the twins share, or -1. */
static int twins_category(const struct twin_key *k)
{
	if (!k || k->n < 3)
		return -1;
	for (int cat = 0; cat < VT_CAT_COUNT; cat++)
		if (k->by_cat[cat] * 10 >= k->n * 9)
			return cat;
	return -1;
}

/* A folding model's groups of this process, twins like their records. */
static void twin_groups(const struct ctx *c, struct twin_key **twins)
{
	uint32_t ng;
	const struct vt_fold_group *g = vt_fold_groups(c->m, &ng);
	for (uint32_t i = 0; i < ng; i++) {
		if (g[i].proc != c->proc || !g[i].stack_id)
			continue;
		struct vt_alloc a = {
		    .bytes = g[i].bytes, .stack_id = g[i].stack_id, .device = g[i].device};
		struct twin_key *k = twin_of(twins, &a, 1);
		k->n += (uint32_t)g[i].count;
		k->by_cat[g[i].category] += (uint32_t)g[i].count;
	}
}

/* An allocation of the unfinished step takes the category of its recurring
 * twins from earlier steps: same site (stack), size and device. */
static void unfinished_step(struct ctx *c)
{
	struct twin_key *twins = NULL, *k, *tmp;
	int any = 0;
	/* the allocations of the last step come last: look there first, so a
	 * job that finished its steps pays nothing */
	for (uint32_t i = c->p->alloc_end; !any && i-- > c->p->alloc_begin;) {
		const struct facts *f = &c->f[i - c->p->alloc_begin];
		if (c->p->nsteps < 3 || f->born < (int)c->p->nsteps - 1)
			break;
		any = unfinished(c, &c->m->allocs[i], f);
	}
	if (!any)
		return;
	for (uint32_t i = c->p->alloc_begin; i < c->p->alloc_end; i++) {
		const struct vt_alloc *a = &c->m->allocs[i];
		if (!a->stack_id || !(a->flags & VT_AF_CHARGED) ||
		    unfinished(c, a, &c->f[i - c->p->alloc_begin]))
			continue;
		k = twin_of(&twins, a, 1);
		k->n++;
		k->by_cat[a->category]++;
	}
	twin_groups(c, &twins);
	for (uint32_t i = c->p->alloc_begin; i < c->p->alloc_end; i++) {
		struct vt_alloc *a = &c->m->allocs[i];
		struct facts *f = &c->f[i - c->p->alloc_begin];
		if (!(a->flags & VT_AF_CHARGED) || !unfinished(c, a, f) ||
		    a->category == VT_CAT_POOL)
			continue;
		int cat = twins_category(twin_of(&twins, a, 0));
		if (cat < 0 || cat == a->category || cat == VT_CAT_POOL)
			continue;
		set_cat(a, f, cat, 70, R_UNFINISHED);
	}
	HASH_ITER(hh, twins, k, tmp)
	{
		HASH_DEL(twins, k);
		free(k);
	}
}

static void classify_proc(struct vt_model *m, uint32_t pi)
{
	struct vt_proc *p = &m->procs[pi];
	uint32_t n = p->alloc_end - p->alloc_begin;
	if (!n)
		return;
	struct ctx c = {.m = m, .p = p, .proc = pi, .fe = vt_frame_evidence_new(m)};
	c.f = calloc(n, sizeof *c.f);
	uint32_t *ll = malloc(n * sizeof *ll);
	if (!c.f || !ll)
		vt_nomem();
	uint64_t first = m->allocs[p->alloc_begin].t_alloc;
	c.span_ns = p->last_t_ns > first ? p->last_t_ns - first : 1;
	for (uint32_t i = p->alloc_begin; i < p->alloc_end; i++)
		c.readbacks += vt_model_copies(m, &m->allocs[i])->d2h_copies;
	int devs[VT_MAX_DEVICES] = {0};
	c.proc_steps = (struct vt_step_table){p->step_t, p->nsteps, p->step_period_ns};
	own_steps(&c);
	gather(&c, devs);
	row_stores(&c);
	uint32_t ng;
	const struct vt_fold_group *g = vt_fold_groups(m, &ng);
	for (uint32_t i = 0; i < ng; i++)
		if (g[i].proc == pi)
			devs[g[i].device] = 1;
	arena_chunks(&c);
	for (int d = 0; d < VT_MAX_DEVICES; d++)
		c.caching_on[d] = devs[d] && caching_allocator_sizes(&c, d);
	allocator_regions(&c, devs, shows_caching_allocator, caching_segment, R_CACHING_SEGMENT);
	allocator_regions(&c, devs, growing_regions, growing_region, R_GROWING_REGION);
	mark_recurring(&c);
	for (int d = 0; d < VT_MAX_DEVICES; d++) {
		if (!devs[d])
			continue;
		/* the rules read the device's own steps where it has them */
		const struct vt_step_table *st = steps_of(&c, d);
		p->step_t = st->t;
		p->nsteps = st->n;
		p->step_period_ns = st->period_ns;
		classify_device(&c, d, ll);
		p->step_t = c.proc_steps.t;
		p->nsteps = c.proc_steps.n;
		p->step_period_ns = c.proc_steps.period_ns;
	}
	comm_buffers(&c);
	unfinished_step(&c);
	free_keys(&c);
	vt_frame_evidence_free(c.fe);
	free_own_steps(&c);
	free(ll);
	free(c.f);
}

void vt_classify(struct vt_model *m)
{
	if (m->stream) /* the rules read every allocation; it holds the live ones */
		return;
	vt_steps_find(m);
	for (uint32_t i = 0; i < m->nprocs; i++) {
		m->procs[i].pool_mode = 0;
		classify_proc(m, i);
	}
}
