/* Classification of allocations (see classify.h): the reasons a verdict
 * gives, and the order in which the rule families (classify_*.c) run over
 * a process and over each of its devices. */
#include "classify.h"

#include <stdlib.h>

#include "classify_ctx.h"
#include "classify_carried.h"
#include "classify_data_rows.h"
#include "classify_gradients.h"
#include "classify_early.h"
#include "classify_grown.h"
#include "classify_long_lived.h"
#include "classify_pools.h"
#include "classify_recurrence.h"
#include "classify_steps.h"
#include "classify_successors.h"
#include "classify_twins.h"
#include "classify_unfinished.h"
#include "frame_evidence.h"
#include "model_fold.h"
#include "model_query.h"
#include "steps.h"
#include "upload_sites.h"

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
                          "whose weights came from the host: memory it fills itself, most "
                          "often the requests' activations (an engine's workspace), or a "
                          "cache (a KV cache)",
                          {VT_CAT_UNKNOWN, VT_CAT_WEIGHTS}},
    [R_EARLY_WORKSPACE] = {"long-lived, made on the device before the first step, on a device "
                           "where no tensor shows a weight's evidence (a gradient twin, a "
                           "model loader, an upload): memory the job fills itself, a "
                           "working buffer or data it derives on the device",
                           {VT_CAT_WEIGHTS, VT_CAT_DATASET}},
    [R_EARLY_STATE] = {"long-lived, made on the device before the first step after a buffer "
                       "of its size, where sizes come again and again and no gradient "
                       "shows: the optimizer's state of a model made on the device "
                       "(optax's init(params))",
                       {VT_CAT_GRADIENTS, VT_CAT_WEIGHTS}},
    [R_SAMPLE_STORE] = {"long-lived, filled from the host, then written on the device in most "
                        "steps by copies from a batch the host sent: a store of the samples "
                        "the job streams in (a rollout or replay buffer)",
                        {VT_CAT_PREFETCH, VT_CAT_WEIGHTS}},
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
    [R_STAGED_UPLOAD] = {"filled from the host and freed before training, the size of "
                         "tensors made every step that the host never fills: a staging copy "
                         "of a loaded tensor (a checkpoint read onto the device, then copied "
                         "into the model), no batch",
                         {VT_CAT_DATASET, NO_ALT}},
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
    [R_TRAINING_COPY] = {"long-lived, the size of a weight, made in training after the "
                         "optimizer's slots of its size while its gradients come every step: "
                         "a copy of the weights updated without a gradient (an EMA)",
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
    [R_GROWN_ROWS] = {"made in most steps and kept to the end, after a batch and before "
                      "the step's gradients: state the model grows as ids come (rows of a "
                      "sparse embedding)",
                      {VT_CAT_OPTIMIZER, VT_CAT_UNKNOWN}},
    [R_KEPT_OUTPUTS] = {"made in most passes and kept to the end by a job that never trains "
                        "(no gradient, no optimizer state): the results of its passes (an "
                        "encoder's embeddings, kept until stacked), or a cache it grows",
                        {VT_CAT_UNKNOWN, NO_ALT}},
    [R_ONE_OFF_SCRATCH] = {"made once, not from the host, and freed within the step it was made "
                           "in: scratch of a pass of its own (an evaluation after the last "
                           "step, a one-off workspace), not state",
                           {VT_CAT_UNKNOWN, NO_ALT}},
    [R_GROWN_SLOTS] = {"made in most steps and kept to the end, after the step's gradients "
                       "(its update): the optimizer's state for what the model grew",
                       {VT_CAT_WEIGHTS, VT_CAT_UNKNOWN}},
    [R_DATA_IN_TRAINING] = {"filled from the host while the job trains (after its first step), "
                            "long-lived, no twin: data (an epoch's reshuffled set, a new "
                            "shard); a model is loaded before it trains",
                            {VT_CAT_WEIGHTS, NO_ALT}},
    [R_WARMED_CACHE] = {"long-lived, made on the device in the first steps, after which the "
                        "device allocates (almost) nothing more, the size of no weight: a "
                        "chunk an allocator took while it warmed up and keeps for the passes' "
                        "tensors (activations)",
                        {VT_CAT_UNKNOWN, VT_CAT_OPTIMIZER}},
    [R_ASSEMBLED_DATA] = {"long-lived, made on the device and filled by device-to-device copies "
                          "from a dataset array: the data reassembled where it lies (a table's "
                          "columns copied into one matrix)",
                          {VT_CAT_WEIGHTS, NO_ALT}},
    [R_UPDATED_STATE] = {"long-lived, filled from the host, then written on the device in most "
                         "steps by copies from tensors the job computed: state the job keeps "
                         "and updates (a memory bank of features, a queue), not data it reads",
                         {VT_CAT_DATASET, NO_ALT}},
    [R_VARIED_BATCHES] = {"filled from the host while the job trains, by a site that sent many "
                          "tensors, one every few steps or more often, few of them alive at "
                          "once: batches of sizes that vary (a sampled graph, a bucketed "
                          "sequence), each kept until the next",
                          {VT_CAT_DATASET, NO_ALT}},
    [R_BESIDE_MODEL] = {"filled from the host in one upload, long-lived, where nothing trains "
                        "and a model was loaded tensor by tensor: a part of the model loaded "
                        "apart (an embedding, an lm_head), or data the passes read; not "
                        "converted on the device as data often is",
                        {VT_CAT_DATASET, NO_ALT}},
    [R_DROPPED_WITH_MODEL] = {"filled from the host in one upload, long-lived, freed before "
                              "the job's end among the tensors of a model loaded tensor by "
                              "tensor: a part of that model uploaded on a path of its own (an "
                              "embedding before the layers), dropped with it; not sure",
                              {VT_CAT_DATASET, NO_ALT}},
    [R_SLOT_AFTER_GRADIENT] = {"long-lived, made during training while a gradient of its size "
                               "made earlier in the step was alive: the optimizer's state "
                               "(a momentum buffer) of a weight whose own tensor is not seen "
                               "(packed into a flat buffer)",
                               {VT_CAT_WEIGHTS, NO_ALT}},
    [R_REPLACES] = {"long-lived, made during training on the device, and the tensor it "
                    "replaced (smaller, freed right after it was made) was the model's: "
                    "a table grown by concatenation (new rows appended), a resized "
                    "embedding, a buffer reallocated larger",
                    {VT_CAT_UNKNOWN, NO_ALT}},
    [R_ROWS_EVERY_STEP] = {"filled from the host in one upload, long-lived, sent before the "
                           "model's weights, and a tensor made in most steps holds all of "
                           "its rows: data a full-batch job computes over every step (a "
                           "graph's node features)",
                           {VT_CAT_WEIGHTS, NO_ALT}},
    [R_FIRST_BEFORE_DATA] = {"filled from the host in one upload, long-lived, the job's first "
                             "tensor on the device, and a tensor four times larger came after "
                             "it from another call path: a model is made before its data is "
                             "loaded, so a part of the model (a grid, a table) more likely "
                             "than the whole dataset; not sure",
                             {VT_CAT_DATASET, NO_ALT}},
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
    [R_REPLICATED] = {"long-lived, filled by device-to-device copies from a weight of "
                      "another device: a parameter replicated to this device",
                      {VT_CAT_OPTIMIZER, NO_ALT}},
    [R_DATA_ROWS] = {"long-lived, made on the device after a dataset array was uploaded, its "
                     "bytes sharing that array's rows (a large odd factor of them) where a "
                     "weight's size would not: the dataset cast, normalised, padded or "
                     "cropped on the device",
                     {VT_CAT_WEIGHTS, NO_ALT}},
    [R_WEIGHT_COPY] = {"long-lived, filled by device-to-device copies from a weight of its "
                       "device: a copy of the model the job keeps (an EMA, lookahead's slow "
                       "weights)",
                       {VT_CAT_OPTIMIZER, NO_ALT}},
    [R_UPLOADED_WITH_DATA] = {"filled from the host right after a dataset array, through its "
                              "call path (the same conversion, or the same functions for an "
                              "array sharing its rows): an array of the data (its labels, its "
                              "graph's edges)",
                              {VT_CAT_WEIGHTS, NO_ALT}},
    [R_CONVERTED_DATA] = {"long-lived, made on the device while a dataset array lived, half, "
                          "1, 2 or 4 times its bytes, and outliving it: the dataset converted on "
                          "the device (a cast, a normalisation)",
                          {VT_CAT_WEIGHTS, NO_ALT}},
    [R_TEMP_BUFFER] = {"the step's largest allocation, made once a step, on a device with "
                       "optimizer state where no gradient shows: the temp buffer the "
                       "step's gradients and activations live in (XLA)",
                       {VT_CAT_ACTIVATIONS, VT_CAT_GRADIENTS}},
    [R_GRAD_BUFFER_EARLY] = {"long-lived, the size of a weight, made before training while "
                             "the optimizer made its state of that size in training: a "
                             "gradient buffer made with the model (DDP's, Megatron's)",
                             {VT_CAT_OPTIMIZER, VT_CAT_WEIGHTS}},
    [R_FLATTENED] = {"long-lived, filled by device-to-device copies from tensors the host "
                     "filled, which were freed before training: parameters flattened into "
                     "one buffer (FSDP, apex, Megatron)",
                     {VT_CAT_OPTIMIZER, NO_ALT}},
    [R_GROWING_REGION] = {"one of a device's allocations that each double the one before and "
                          "are kept to the end: an allocator growing its regions "
                          "(TensorFlow's BFC with allow_growth); tensors are carved out of it",
                          {VT_CAT_UNKNOWN, NO_ALT}},
    [R_SERVED_REGION] = {"a region of an allocator that grows its regions, never written from "
                         "the host, in a job that never trains: what its passes computed "
                         "(activations, outputs kept for the caller)",
                         {VT_CAT_POOL, NO_ALT}},
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

int vt_alloc_is_caching_segment(const struct vt_alloc *a)
{
	return a->reason == R_CACHING_SEGMENT;
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

/* Whether the job feeds device dev its batches from the host: a buffer made
 * every step and filled from the host, one refilled step after step (a
 * ring), or an allocator's region taking them: VT_STREAMED_BATCH_BYTES says
 * why it matters. */
static int folded_batches(const struct ctx *c, int dev)
{
	uint32_t ng;
	const struct vt_fold_group *g = vt_fold_groups(c->m, &ng);
	for (uint32_t i = 0; i < ng; i++) /* recurring, made from the era on */
		if (g[i].proc == c->proc && g[i].device == dev && g[i].h2d_copies &&
		    g[i].bytes >= VT_STREAMED_BATCH_BYTES)
			return 1;
	return 0;
}

/* Whether the uploads of a's size come in a good part of the steps (a
 * quarter at least): a batch stream, not an upload an epoch (a shuffled
 * index, one a pass) that shares a recurring size with the step's tensors. */
static int uploaded_often(const struct ctx *c, const struct facts *f)
{
	return c->p->nsteps < 8 || c->p->step_source != VT_STEPS_MARKERS ||
	       (uint64_t)c->keys[f->key]->uploaded_in_training * 4 >= c->p->nsteps;
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
		              ((f->recurring && a->t_alloc >= first_step && uploaded_often(c, f)) ||
		               vt_cls_refilled(c, a)))
			return 1;
	}
	return folded_batches(c, dev);
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

static void classify_device(struct ctx *c, int dev, uint32_t *ll_buf)
{
	c->dev = dev;
	vt_cls_carried_state(c, dev);
	uint32_t n = vt_cls_long_lived(c, dev, ll_buf);
	struct size_count *sizes = NULL;
	c->size_by_key = calloc(c->nkeys ? c->nkeys : 1, sizeof *c->size_by_key);
	if (!c->size_by_key)
		vt_nomem();
	vt_cls_count_sizes(c, dev, &sizes, ll_buf, n);
	/* a flat bucket is evidence of its own: the sum of a run of tensors,
	 * made every step; without steps, a tensor made again and again the
	 * size of a run of loaded weights is a coincidence (an inference job's
	 * scratch) */
	int flat = c->p->nsteps >= 3 && vt_cls_find_flat_bucket(c, sizes, ll_buf, n);
	if (flat || vt_cls_twins_believable(c, sizes, ll_buf, n)) {
		vt_cls_weights_by_kept_twins(c, sizes, ll_buf, n, !flat);
		vt_cls_weights_by_twin(c, sizes, ll_buf, n);
	}
	c->streams_batches = streams_batches(c, dev);
	c->sites = vt_upload_sites_count(c->m, c->proc, loaded_tensor, pool_region, c);
	c->loader_frees_n = UINT32_MAX;
	c->first_weight_known = 0;
	c->weights_loaded_t = vt_cls_weights_loaded_t(c, dev);
	c->trains = vt_cls_trains(sizes);
	vt_cls_rest_of_long_lived(c, sizes, ll_buf, n);
	vt_cls_converted_datasets(c, ll_buf, n);
	vt_upload_sites_free(c->sites);
	c->sites = NULL;
	free(c->loader_frees);
	c->loader_frees = NULL;
	vt_cls_serving_buffers(c, dev);
	vt_cls_unproven_weights(c, dev);
	vt_cls_flattened_parameter_sizes(c, dev, sizes);
	vt_cls_recurring_ones(c, dev, sizes);
	vt_cls_recurring_groups(c, dev, sizes);
	vt_cls_grown_state(c, dev);
	vt_cls_successors(c, dev);
	vt_cls_warmed_cache(c, dev);
	vt_cls_temp_buffers(c, dev, sizes);
	vt_cls_gradient_buckets(c, dev);
	vt_cls_data_rows(c, dev, ll_buf, n);
	free(c->size_by_key);
	c->size_by_key = NULL;
	vt_cls_free_sizes(&sizes);
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
		             : vt_cls_key_index(c, a->bytes, a->device);
		last = f->key;
		f->device = a->device;
		f->charged = (a->flags & VT_AF_CHARGED) != 0;
		f->freed = a->t_free != VT_T_NEVER;
		f->torn_down = f->freed && a->device != VT_DEVICE_UNKNOWN &&
		               a->t_free > c->last_alloc_t[a->device];
		uint64_t h2d = vt_model_copies(c->m, a)->h2d_bytes;
		f->host_filled = h2d > 0 && h2d * 2 >= a->bytes;
		const struct vt_step_table *st = vt_cls_steps_of(c, a->device);
		f->born = vt_cls_step_cursor(st, &cur[a->device], a->t_alloc);
		f->died = f->freed ? vt_cls_step_from(st, f->born, a->t_free) : (int)st->n;
		vt_cls_classify_pool(c, i, a, f);
		vt_cls_classify_ring(c, a, f);
	}
}

static int training_category(int cat)
{
	return cat == VT_CAT_GRADIENTS || cat == VT_CAT_OPTIMIZER;
}

/* Whether the process trains, from its verdicts: a period found in an
 * inference job is a pass over its requests, not an optimizer step, and the
 * report says so. */
static int trains(const struct vt_model *m, uint32_t pi)
{
	const struct vt_proc *p = &m->procs[pi];
	for (uint32_t i = p->alloc_begin; i < p->alloc_end; i++)
		if (training_category(m->allocs[i].category))
			return 1;
	uint32_t ng;
	const struct vt_fold_group *g = vt_fold_groups(m, &ng);
	for (uint32_t i = 0; i < ng; i++)
		if (g[i].proc == pi && training_category(g[i].category))
			return 1;
	return 0;
}

/* Whether a stack of the process says it trains (vt_frame_trains): an
 * allocator's regions hide the gradients and slots a verdict would show
 * (TensorFlow's BFC allocator), but the op that made a region grow was
 * called under `fit` all the same. */
static int trains_by_frames(struct ctx *c)
{
	uint32_t last = 0;
	for (uint32_t i = c->p->alloc_begin; i < c->p->alloc_end; i++) {
		const struct vt_alloc *a = &c->m->allocs[i];
		uint32_t stacks[2] = {a->stack_id, vt_model_copies(c->m, a)->h2d_stack_id};
		for (int k = 0; k < 2; k++) {
			if (!stacks[k] || stacks[k] == last)
				continue;
			last = stacks[k];
			if (vt_frame_trains(c->fe, c->proc, last))
				return 1;
		}
	}
	/* and the folded allocations' stacks, as their records would give them */
	uint32_t ng;
	const struct vt_fold_group *g = vt_fold_groups(c->m, &ng);
	for (uint32_t i = 0; i < ng; i++)
		if (g[i].proc == c->proc && (vt_frame_trains(c->fe, c->proc, g[i].stack_id) ||
		                             vt_frame_trains(c->fe, c->proc, g[i].h2d_stack_id)))
			return 1;
	return 0;
}

/* When each device's last allocation was, and the process's: a record's,
 * or a folded one's made after it (the same order: seq). */
static void last_allocations(struct ctx *c)
{
	uint64_t seq[VT_MAX_DEVICES] = {0}, any_seq = 0;
	for (uint32_t i = c->p->alloc_begin; i < c->p->alloc_end; i++) {
		const struct vt_alloc *a = &c->m->allocs[i];
		if (a->device != VT_DEVICE_UNKNOWN) {
			c->last_alloc_t[a->device] = a->t_alloc;
			seq[a->device] = a->seq_alloc;
		}
	}
	c->last_alloc_any_t = c->m->allocs[c->p->alloc_end - 1].t_alloc;
	any_seq = c->m->allocs[c->p->alloc_end - 1].seq_alloc;
	for (int d = 0; d < VT_MAX_DEVICES; d++) {
		const struct vt_fold_dev *fd = vt_fold_dev_of(c->m, c->proc, (uint8_t)d);
		if (fd && fd->last_seq > seq[d])
			c->last_alloc_t[d] = fd->last_t_alloc;
		if (fd && fd->last_seq > any_seq) {
			any_seq = fd->last_seq;
			c->last_alloc_any_t = fd->last_t_alloc;
		}
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
	uint64_t first_seq = m->allocs[p->alloc_begin].seq_alloc;
	c.span_events = p->last_seq > first_seq ? p->last_seq - first_seq : 1;
	for (uint32_t i = p->alloc_begin; i < p->alloc_end; i++)
		c.readbacks += vt_model_copies(m, &m->allocs[i])->d2h_copies;
	last_allocations(&c);
	int devs[VT_MAX_DEVICES] = {0};
	c.proc_steps = (struct vt_step_table){p->step_t, p->nsteps, p->step_period_ns};
	vt_cls_own_steps(&c);
	gather(&c, devs);
	vt_cls_row_stores(&c);
	uint32_t ng;
	const struct vt_fold_group *g = vt_fold_groups(m, &ng);
	for (uint32_t i = 0; i < ng; i++)
		if (g[i].proc == pi)
			devs[g[i].device] = 1;
	vt_cls_arena_chunks(&c);
	for (int d = 0; d < VT_MAX_DEVICES; d++)
		c.caching_on[d] = devs[d] && vt_cls_caching_allocator_sizes(&c, d);
	vt_cls_allocator_regions(&c, devs, vt_cls_shows_caching_allocator, vt_cls_caching_segment,
	                         R_CACHING_SEGMENT);
	vt_cls_allocator_regions(&c, devs, vt_cls_growing_regions, vt_cls_growing_region,
	                         R_GROWING_REGION);
	vt_cls_mark_recurring(&c);
	for (int d = 0; d < VT_MAX_DEVICES; d++) {
		if (!devs[d])
			continue;
		/* the rules read the device's own steps where it has them */
		const struct vt_step_table *st = vt_cls_steps_of(&c, d);
		p->step_t = st->t;
		p->nsteps = st->n;
		p->step_period_ns = st->period_ns;
		classify_device(&c, d, ll);
		p->step_t = c.proc_steps.t;
		p->nsteps = c.proc_steps.n;
		p->step_period_ns = c.proc_steps.period_ns;
	}
	vt_cls_comm_buffers(&c);
	vt_cls_unfinished_step(&c);
	p->trains = trains(m, pi) || trains_by_frames(&c);
	if (!p->trains)
		vt_cls_served_regions(&c);
	vt_cls_free_keys(&c);
	vt_frame_evidence_free(c.fe);
	vt_cls_free_own_steps(&c);
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
