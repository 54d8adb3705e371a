/* The long-lived allocations the twin rules left, see classify_long_lived.h. */
#include "classify_long_lived.h"

#include <stdlib.h>

#include "call_path.h"
#include "classify_data_rows.h"
#include "classify_twins.h"
#include "frame_evidence.h"
#include "model_fold.h"
#include "model_query.h"
#include "sorted_u64.h"
#include "upload_sites.h"

/* Undecided long-lived allocations of one device, in time order. */
uint32_t vt_cls_long_lived(const struct ctx *c, int dev, uint32_t *out)
{
	uint32_t n = 0;
	for (uint32_t i = c->p->alloc_begin; i < c->p->alloc_end; i++) {
		const struct facts *f = &c->f[i - c->p->alloc_begin];
		if (f->device == dev && f->charged && !f->decided && !f->recurring)
			out[n++] = i;
	}
	return n;
}

/* A tensor made once on the device and freed within the step it was made
 * in lived through no step boundary: not state the job keeps (a cache, a
 * slot, a leak live at the end) but a pass's scratch. Under markers the
 * last step runs to the end of the trace, so an evaluation after training
 * lands in it: its big one-off tensors are this. Frees after the job's
 * last allocation are its teardown, which frees state too. */
static int one_off_scratch(const struct ctx *c, const struct vt_alloc *a)
{
	const struct vt_proc *p = c->p;
	if (a->t_free == VT_T_NEVER || p->nsteps < 3 || p->alloc_end == p->alloc_begin ||
	    a->t_free >= c->last_alloc_any_t)
		return 0;
	int s = vt_step_of(p, a->t_alloc);
	return s >= 0 && s == vt_step_of(p, a->t_free);
}

/* A weight this pass decided (loaded, frozen, named by its stack) counts
 * for the tensors after it of its size, as the twins' weights do: a
 * training job's optimizer slots for a table with sparse gradients (no
 * dense twin) are made after it at the first step. Only where the job
 * trains: an inference job's buffers the size of a weight are its own. */
static void count_weight(const struct ctx *c, struct size_count *s, const struct vt_alloc *a)
{
	if (c->trains && a->category == VT_CAT_WEIGHTS)
		s->weights++;
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

/* When the device's weights were filled from the host (a checkpoint, a
 * model file) the last time, 0 if never: trained weights the twin rules
 * found, or tensors of a site that loaded several. */
uint64_t vt_cls_weights_loaded_t(const struct ctx *c, int dev)
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
int vt_cls_trains(struct size_count *sizes)
{
	struct size_count *s, *tmp;
	HASH_ITER(hh, sizes, s, tmp)
	{
		if (s->weights || s->gradient_size || s->kept)
			return 1;
	}
	return 0;
}

/* How far a conversion lies from the array it read: a cast or a
 * normalisation follows its source at once, and the bound keeps the pass
 * linear in the allocations. */
#define CONVERT_LOOKBACK 16

/* Whether a is src converted on the device: made while src lived, half,
 * once, twice or four times the bytes of its data (float32 to half, a
 * normalised copy, uint8 images to half or float32), and outliving it (the
 * job dropped the original). The data's bytes, not the region's: a pool
 * grown by doubling makes regions of one, two and four times the first
 * whatever they hold. */
static int converts(const struct ctx *c, const struct vt_alloc *src, const struct vt_alloc *a)
{
	if (src->device != a->device || src->t_free == VT_T_NEVER || src->t_free <= a->t_alloc ||
	    src->t_free >= a->t_free)
		return 0;
	uint64_t d = vt_alloc_data_bytes(c->m, src);
	return a->bytes * 2 == d || a->bytes == d || a->bytes == 2 * d || a->bytes == 4 * d;
}

/* Whether long-lived allocation j is dataset array i converted on the
 * device. */
static int converted_from(const struct ctx *c, uint32_t j, uint32_t i)
{
	const struct vt_alloc *src = &c->m->allocs[i];
	return src->category == VT_CAT_DATASET && c->f[i - c->p->alloc_begin].host_filled &&
	       converts(c, src, &c->m->allocs[j]);
}

/* Records i..j of the process are the full model's too: no allocation a
 * folding model folded was made between them (else it says so). */
static void window_whole(const struct ctx *c, uint32_t i, uint32_t j)
{
	if (vt_fold_made_between(c->m, c->proc, c->m->allocs[i].seq_alloc,
	                         c->m->allocs[j].seq_alloc))
		vt_fold_set_inexact(c->m, "a rule's window of allocations holds folded ones");
}

/* Whether host-filled allocation i was converted on the device by one of
 * the allocations after it, not from the host: data cast or normalised
 * where it lies (a model's tensors are used as loaded). */
static int converted_to(const struct ctx *c, uint32_t i)
{
	uint32_t j = i + 1;
	for (; j < c->p->alloc_end && j - i <= CONVERT_LOOKBACK; j++)
		if (!c->f[j - c->p->alloc_begin].host_filled &&
		    converts(c, &c->m->allocs[i], &c->m->allocs[j]))
			break;
	window_whole(c, i, j < c->p->alloc_end ? j : c->p->alloc_end - 1);
	return j < c->p->alloc_end && j - i <= CONVERT_LOOKBACK;
}

/* How far ahead the job's first upload looks for the data. */
#define FIRST_LOOKAHEAD 1024

/* Whether host-filled allocation i is the first allocation on its device
 * and a tensor at least four times larger was filled from the host after
 * it in one upload from another call path (vt_same_call_path: not the
 * same functions for an array sharing its rows): a job builds or moves its
 * model before it loads its data (torch-ngp's hash grid, then its
 * preloaded images), so the job's first tensor, dwarfed by what came after
 * it, is no whole dataset; the dense features a job converts right before
 * the sparse ids of the same rows are data like them. */
static int first_before_data(const struct ctx *c, uint32_t i)
{
	const struct vt_alloc *a = &c->m->allocs[i];
	for (uint32_t j = c->p->alloc_begin; j < i; j++)
		if (c->m->allocs[j].device == a->device)
			return 0;
	uint32_t site = vt_model_copies(c->m, a)->h2d_stack_id;
	for (uint32_t j = i + 1; j < c->p->alloc_end && j - i <= FIRST_LOOKAHEAD; j++) {
		const struct vt_alloc *b = &c->m->allocs[j];
		const struct facts *g = &c->f[j - c->p->alloc_begin];
		if (b->device == a->device && g->host_filled && !g->recurring &&
		    b->bytes >= 4 * a->bytes &&
		    !vt_same_call_path(c->m, c->proc, site, vt_model_copies(c->m, b)->h2d_stack_id,
		                       b->bytes, a->bytes)) {
			window_whole(c, c->p->alloc_begin, j); /* first, and within reach */
			return 1;
		}
	}
	return 0;
}

/* Frees of a model dropped in one go (`del text_encoder`) lie within this
 * many events of each other. */
#define DROP_WINDOW 256

/* When the device's host-filled tensors from loader sites were freed
 * (their seq, sorted): made once a device, so that each candidate costs a
 * binary search, not a walk over every allocation. */
static void make_loader_frees(struct ctx *c)
{
	uint32_t n = 0, cap = 0;
	uint64_t *v = NULL;
	for (uint32_t j = c->p->alloc_begin; j < c->p->alloc_end; j++) {
		const struct vt_alloc *b = &c->m->allocs[j];
		const struct facts *g = &c->f[j - c->p->alloc_begin];
		if (b->device != c->dev || !g->host_filled || !g->freed ||
		    !vt_upload_site_is_loader(c->sites, vt_model_copies(c->m, b)->h2d_stack_id,
		                              b->bytes))
			continue;
		if (n == cap) {
			cap = cap ? 2 * cap : 64;
			v = realloc(v, cap * sizeof *v);
			if (!v)
				vt_nomem();
		}
		v[n++] = b->seq_free;
	}
	if (n)
		qsort(v, n, sizeof *v, vt_cmp_u64);
	c->loader_frees = v;
	c->loader_frees_n = n;
}

/* Whether host-filled allocation i was freed, before the job's teardown,
 * among VT_LOADER_TENSORS tensors or more from a site that loaded a model
 * tensor by tensor: a part of that model uploaded through a path of its
 * own (a text encoder's token embedding before its layers), dropped with
 * it once the job was done with it. A dataset outlives the model it
 * trains, or dies with the process. */
static int dropped_with_model(struct ctx *c, uint32_t i, const struct facts *f)
{
	const struct vt_alloc *a = &c->m->allocs[i];
	if (!f->freed || f->torn_down)
		return 0;
	if (c->loader_frees_n == UINT32_MAX)
		make_loader_frees(c);
	uint64_t lo = a->seq_free > DROP_WINDOW ? a->seq_free - DROP_WINDOW : 0;
	uint32_t from = vt_lower_bound_u64(c->loader_frees, c->loader_frees_n, lo);
	uint32_t to =
	    vt_lower_bound_u64(c->loader_frees, c->loader_frees_n, a->seq_free + DROP_WINDOW + 1);
	/* a itself is no loader site's (its site filled no other tensor) */
	return to - from >= VT_LOADER_TENSORS;
}

/* A long-lived tensor filled from the host in one upload, no gradient twin,
 * and nothing in the stacks' names: data or frozen weights, which the
 * events tell apart only by how the job uses them. Batches copied out of it
 * on the device say data. In a job that streams its batches from the
 * host, an upload made while the model was loaded from the host (before its
 * last weight upload: frozen layers beside trained ones, a fine-tune's
 * checkpoint) or on a device where nothing trains (an inference server)
 * makes weights the better guess, data the alternative: not confident. So
 * does an upload beside a model loaded tensor by tensor where nothing
 * trains and nothing converts it, one dropped with such a model, and the
 * job's first tensor dwarfed by a later upload. Otherwise data: TensorFlow's numpy path uploads the
 * whole dataset when training starts, after the model, and streams its batches too. */
static void data_or_frozen_weights(struct ctx *c, struct vt_alloc *a, struct facts *f)
{
	uint32_t i = (uint32_t)(a - c->m->allocs);
	const struct vt_alloc_copies *cp = vt_model_copies(c->m, a);
	/* slices: copies of part of it (a batch); whole copies out every step
	 * are a parameter broadcast to another rank (ZeRO's _sync_params) */
	int slices = cp->d2d_out_copies && cp->d2d_out_bytes / cp->d2d_out_copies < a->bytes;
	if (cp->d2d_out_copies >= 2 && slices && c->p->nsteps >= 2)
		set_cat(a, f, VT_CAT_DATASET, 90, R_DATASET_SLICED);
	else if (vt_cls_rows_every_step(c, i))
		set_cat(a, f, VT_CAT_DATASET, 70, R_ROWS_EVERY_STEP);
	else if (c->streams_batches && (!c->trains || cp->t_first_h2d < c->weights_loaded_t))
		set_cat(a, f, VT_CAT_WEIGHTS, 60, R_FROZEN_WEIGHTS);
	else if (!c->trains && vt_upload_sites_model_loaded(c->sites) && !converted_to(c, i))
		set_cat(a, f, VT_CAT_WEIGHTS, 60, R_BESIDE_MODEL);
	else if (dropped_with_model(c, i, f))
		set_cat(a, f, VT_CAT_WEIGHTS, 60, R_DROPPED_WITH_MODEL);
	else if (first_before_data(c, i))
		set_cat(a, f, VT_CAT_WEIGHTS, 60, R_FIRST_BEFORE_DATA);
	else
		set_cat(a, f, VT_CAT_DATASET, 75, R_DATASET);
}

/* For an allocation filled from the host and then written on the device
 * by copies in most steps: the allocation the first of those copies came
 * from; VT_NO_INDEX otherwise. A frozen weight is never written again; a
 * weight kept in step with another rank's is written from that rank's
 * weights. */
static uint32_t rewritten_from(const struct ctx *c, const struct vt_alloc *a, const struct facts *f)
{
	if (!f->host_filled || !vt_cls_rewritten_on_device(c, a))
		return VT_NO_INDEX;
	return vt_cls_d2d_source(c, a);
}

/* Rewritten from a batch the host sent (a tensor filled from the host and
 * freed): a store of the samples the job streams in, a row per step (a
 * rollout or replay buffer: `obs[step] = next_obs`). Its initial value came
 * from the host (zeros uploaded whole) or from the device (skrl's
 * `RandomMemory` made with `torch.zeros(..., device=...)`); either way what
 * arrived whole was no data: not confident, so no whole-dataset finding. */
static int sample_store(const struct ctx *c, const struct vt_alloc *a)
{
	if (!vt_cls_rewritten_on_device(c, a))
		return 0;
	uint32_t src = vt_cls_d2d_source(c, a);
	if (src == VT_NO_INDEX)
		return 0;
	const struct facts *sf = &c->f[src - c->p->alloc_begin];
	return sf->host_filled && sf->freed && !sf->torn_down;
}

/* Rewritten from a tensor the device computed (neither from the host nor a
 * weight): state the job updates, whatever its first value was (NPID's
 * memory bank of features, `memory.index_copy_(0, y, updated)`). Data is
 * read, never written. */
static int updated_state(const struct ctx *c, const struct vt_alloc *a, const struct facts *f)
{
	uint32_t src = rewritten_from(c, a, f);
	if (src == VT_NO_INDEX)
		return 0;
	return !c->f[src - c->p->alloc_begin].host_filled &&
	       c->m->allocs[src].category != VT_CAT_WEIGHTS;
}

/* Whether long-lived allocation i (not from the host) is a copy of a
 * weight: nine tenths of it filled by device-to-device copies whose first
 * source is a weight. On another device, a parameter replicated (a
 * single-process data-parallel job copies its parameters from its first
 * device to the others: jax.device_put_replicated, nn.DataParallel's
 * replicate; devices are classified in order, so the source's verdict is
 * read where replication goes from a lower ordinal to a higher one). On
 * its own device, a copy of the model the job keeps, tensor by tensor
 * (timm's ModelEmaV2 and Lookahead's slow weights are `deepcopy`/`clone`
 * of the parameters):
 * an optimizer's slots start as zeros, not as the weights. R_REPLICATED,
 * R_WEIGHT_COPY, or 0. */
static enum reason weight_copy(const struct ctx *c, uint32_t i, const struct facts *f)
{
	const struct vt_alloc *a = &c->m->allocs[i];
	uint32_t from = vt_cls_d2d_filled_from(c, a);
	if (f->host_filled || from == VT_NO_INDEX)
		return 0;
	const struct vt_alloc *src = &c->m->allocs[from];
	if (src->category != VT_CAT_WEIGHTS)
		return 0;
	if (src->device != a->device)
		return R_REPLICATED;
	/* a copy of one tensor is its size; under a caching allocator, a
	 * segment copied into holds whatever was carved from it */
	return src->bytes == a->bytes && !c->caching_on[a->device] ? R_WEIGHT_COPY : 0;
}

/* Whether upload site `stack` feeds batches: VT_MODEL_TENSORS tensors or
 * more, one every 4 steps or more often, never VT_LOADER_TENSORS alive at
 * once (or a feeder whatever its pace, vt_upload_site_is_feeder: the
 * passes of an evaluation after training are longer than its steps, and
 * steps found while a job encodes its data are no steps of its loop),
 * whose sizes vary from step to step (a sampled graph's edge index, a
 * layer-wise inference's rows), so that no per-step twin shows them. Data
 * uploaded during training comes a day or an epoch at a time: a handful of
 * tensors, hundreds of steps apart. */
static int feeds_batches(const struct ctx *c, uint32_t stack)
{
	uint32_t n = vt_upload_site_tensors(c->sites, stack);
	if (n < VT_MODEL_TENSORS || vt_upload_site_most_alive(c->sites, stack) >= VT_LOADER_TENSORS)
		return 0;
	return vt_upload_site_is_feeder(c->sites, stack) ||
	       vt_upload_site_span_ns(c->sites, stack) <=
	           (uint64_t)(n - 1) * 4 * c->p->step_period_ns;
}

/* What the twin rules left: optimizer slots (a weight's size, made after
 * it), datasets (host-filled, no twin), weights without a visible twin. */
void vt_cls_rest_of_long_lived(struct ctx *c, struct size_count *sizes, const uint32_t *ll,
                               uint32_t n)
{
	uint64_t first_step = c->p->nsteps ? c->p->step_t[0] : VT_T_NEVER;
	for (uint32_t i = 0; i < n; i++) {
		struct vt_alloc *a = &c->m->allocs[ll[i]];
		struct facts *f = &c->f[ll[i] - c->p->alloc_begin];
		if (f->decided)
			continue;
		struct size_count *s = vt_cls_size_find(sizes, a->bytes);
		uint32_t stack = vt_model_copies(c->m, a)->h2d_stack_id;
		if (by_name(c, a, f, stack)) {
			count_weight(c, s, a);
			continue;
		}
		if (vt_cls_flattened_weights(c, ll[i], f)) {
			set_cat(a, f, VT_CAT_WEIGHTS, 80, R_FLATTENED);
			vt_cls_size_find(sizes, a->bytes)->weights++; /* count_sizes made it */
			continue;
		}
		enum reason copy = weight_copy(c, ll[i], f);
		if (copy)
			set_cat(a, f, VT_CAT_WEIGHTS, 70, copy);
		else if (sample_store(c, a))
			set_cat(a, f, VT_CAT_DATASET, 60, R_SAMPLE_STORE);
		else if (updated_state(c, a, f))
			set_cat(a, f, VT_CAT_UNKNOWN, 60, R_UPDATED_STATE);
		else if (f->kept && !f->host_filled)
			set_cat(a, f, VT_CAT_ACTIVATIONS, 50, R_KEPT_PER_STEP);
		else if (s->weights > 0 && !f->host_filled && a->t_alloc < first_step &&
		         s->ll_during >= 2 * s->weights)
			set_cat(a, f, VT_CAT_GRADIENTS, 60, R_GRAD_BUFFER_EARLY);
		else if (s->weights > 0 && !f->host_filled)
			set_cat(a, f, VT_CAT_OPTIMIZER, 85, R_OPTIMIZER);
		else if (f->host_filled && c->trains && feeds_batches(c, stack))
			set_cat(a, f, VT_CAT_PREFETCH, 60, R_VARIED_BATCHES);
		else if (f->host_filled && vt_upload_site_is_loader(c->sites, stack, a->bytes))
			set_cat(a, f, VT_CAT_WEIGHTS, 60, R_LOADED_WEIGHTS);
		else if (f->host_filled && c->trains && f->born >= 1)
			set_cat(a, f, VT_CAT_DATASET, 70, R_DATA_IN_TRAINING);
		else if (f->host_filled)
			data_or_frozen_weights(c, a, f);
		else if (a->t_alloc < first_step)
			set_cat(a, f, VT_CAT_WEIGHTS, 50, R_EARLY_WEIGHTS);
		else if (c->caching_on[c->dev])
			set_cat(a, f, VT_CAT_ACTIVATIONS, 50, R_CACHED_ACTIVATIONS);
		else if (one_off_scratch(c, a))
			set_cat(a, f, VT_CAT_ACTIVATIONS, 45, R_ONE_OFF_SCRATCH);
		else
			set_cat(a, f, VT_CAT_UNKNOWN, 30, R_LONG_UNKNOWN);
		count_weight(c, s, a);
	}
}

void vt_cls_converted_datasets(struct ctx *c, const uint32_t *ll, uint32_t n)
{
	for (uint32_t k = 0; k < n; k++) {
		uint32_t j = ll[k];
		struct vt_alloc *a = &c->m->allocs[j];
		if (a->reason != R_EARLY_WEIGHTS && a->reason != R_LONG_UNKNOWN)
			continue;
		/* who wrote the bytes: copies out of a dataset array (cuML's
		 * column-major matrix from a cuDF table's columns) */
		uint32_t from = vt_cls_d2d_filled_from(c, a);
		if (from != VT_NO_INDEX && c->m->allocs[from].category == VT_CAT_DATASET) {
			set_cat(a, &c->f[j - c->p->alloc_begin], VT_CAT_DATASET, 60,
			        R_ASSEMBLED_DATA);
			continue;
		}
		uint32_t lo = j - c->p->alloc_begin >= CONVERT_LOOKBACK ? j - CONVERT_LOOKBACK
		                                                        : c->p->alloc_begin;
		window_whole(c, lo, j);
		for (uint32_t i = j; i > c->p->alloc_begin && j - i < CONVERT_LOOKBACK;) {
			if (converted_from(c, j, --i)) {
				set_cat(a, &c->f[j - c->p->alloc_begin], VT_CAT_DATASET, 60,
				        R_CONVERTED_DATA);
				break;
			}
		}
	}
}

/* A device where nothing trains (no gradient, no optimizer slot; requests
 * of a server may still repeat like steps) whose weights came from the
 * host (inference, a server; copied from another device's counts): a
 * long-lived buffer made on the device and never filled from the host is
 * not a weight (a model is loaded, not made, where it is not trained) but
 * memory the job fills itself. Of the size of a weight loaded before it:
 * state made to mirror the weights (optax's `zeros_like(params)` before
 * training, the gradients inside XLA's temp buffer, so no gradient shows),
 * optimizer state with weights the alternative. Read back by the host
 * again and again: each request's output (activations). Otherwise most
 * often the requests' activation memory (a TensorRT execution context's,
 * buffers preallocated for the largest batch), though a cache (a KV cache,
 * a library's scratch) shows the same events: activations, not confident,
 * a cache the alternative. */
struct loaded_size {
	uint64_t bytes;
	uint64_t t_first; /* when the first weight of this size was made */
	UT_hash_handle hh;
};

static int loaded_weight(const struct ctx *c, uint32_t i, int dev)
{
	const struct facts *f = &c->f[i - c->p->alloc_begin];
	const struct vt_alloc *a = &c->m->allocs[i];
	return f->device == dev && (f->host_filled || a->reason == R_REPLICATED) &&
	       a->category == VT_CAT_WEIGHTS;
}

void vt_cls_serving_buffers(struct ctx *c, int dev)
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
			set_cat(a, f, VT_CAT_ACTIVATIONS, 55, R_SERVING_BUFFER);
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
void vt_cls_flattened_parameter_sizes(struct ctx *c, int dev, struct size_count *sizes)
{
	uint64_t first_step = c->p->nsteps ? c->p->step_t[0] : VT_T_NEVER;
	int flat = 0;
	for (uint32_t i = c->p->alloc_begin; i < c->p->alloc_end && !flat; i++)
		flat = c->m->allocs[i].device == dev && c->m->allocs[i].reason == R_FLATTENED;
	for (uint32_t i = c->p->alloc_begin; flat && i < c->p->alloc_end; i++) {
		struct size_count *s;
		if (!flattened_parameter(c, i, first_step) ||
		    !(s = vt_cls_size_find(sizes, c->m->allocs[i].bytes)) || s->weights)
			continue;
		s->gradient_size = 1;
		s->params_flattened++;
	}
	struct size_count *s, *tmp;
	HASH_ITER(hh, sizes, s, tmp)
	if (s->params_flattened && !s->grads_per_step)
		s->grads_per_step = s->params_flattened;
}

/* The steps in which a folding model folded allocations of dev: made
 * there too. 0 when it cannot say which. */
static int folded_steps(const struct ctx *c, int dev, uint8_t *made, uint32_t nsteps)
{
	const struct vt_fold_dev *fd = vt_fold_dev_of(c->m, c->proc, (uint8_t)dev);
	if (!fd)
		return 1;
	if (fd->lost)
		return 0;
	for (uint32_t r = 0; r < fd->nruns; r++)
		for (int s = fd->runs[r].first; s <= fd->runs[r].last && (uint32_t)s < nsteps; s++)
			made[s] = 1;
	return 1;
}

/* The first step of device dev in which it allocated nothing (nsteps when
 * every step allocated), and *later the steps after it that allocated;
 * nsteps + 1 when a folding model cannot say. */
static uint32_t warm_from(const struct ctx *c, int dev, uint32_t *later)
{
	uint32_t nsteps = c->p->nsteps;
	uint8_t *made = calloc(nsteps, 1);
	if (!made)
		vt_nomem();
	for (uint32_t i = c->p->alloc_begin; i < c->p->alloc_end; i++) {
		const struct facts *f = &c->f[i - c->p->alloc_begin];
		if (f->device == dev && f->charged && f->born >= 0 && (uint32_t)f->born < nsteps)
			made[f->born] = 1;
	}
	if (!folded_steps(c, dev, made, nsteps)) {
		free(made);
		*later = 0;
		return nsteps + 1;
	}
	uint32_t warm = 0;
	while (warm < nsteps && made[warm])
		warm++;
	*later = 0;
	for (uint32_t s = warm; s < nsteps; s++)
		*later += made[s];
	free(made);
	return warm;
}

#define WARM_MIN_STEPS 8

void vt_cls_warmed_cache(struct ctx *c, int dev)
{
	uint32_t nsteps = c->p->nsteps, later;
	if (nsteps < WARM_MIN_STEPS)
		return;
	uint32_t warm = warm_from(c, dev, &later);
	/* a per-tensor job allocates in every step (its batches, its
	 * activations); a warm allocator in a step or two after (an evaluation
	 * pass that needs a larger chunk) */
	if (warm == nsteps || (warm < nsteps && later * 4 > nsteps - warm))
		return;
	for (uint32_t i = c->p->alloc_begin; i < c->p->alloc_end; i++) {
		struct vt_alloc *a = &c->m->allocs[i];
		struct facts *f = &c->f[i - c->p->alloc_begin];
		if (f->device != dev || a->reason != R_LONG_UNKNOWN || f->host_filled ||
		    f->born < 0 || (uint32_t)f->born >= warm)
			continue;
		if (warm > nsteps) { /* the folded steps are not known */
			vt_fold_set_inexact(c->m, "the steps of folded allocations are not known");
			return;
		}
		set_cat(a, f, VT_CAT_ACTIVATIONS, 45, R_WARMED_CACHE);
	}
}
