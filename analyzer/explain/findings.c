/* Findings and their advice (see findings.h). */
#include "findings.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "classify.h"
#include "frame_evidence.h"
#include "site_names.h"
#include "upload_sites.h"
#include "steps.h"
#include "units.h"
#include "nomem.h" /* before <uthash.h>: its out-of-memory exit */
#include "model_query.h"
#include <uthash.h>

#define MIB (1024ull * 1024ull)

static const char *const kind_names[VT_FINDING_KIND_COUNT] = {
    "whole_dataset_upload", "prefetch_depth",  "replicated_across_devices",
    "opaque_pool",          "growth_per_step",
};

const char *vt_finding_kind_name(int kind)
{
	return kind >= 0 && kind < VT_FINDING_KIND_COUNT ? kind_names[kind] : "unknown";
}

const char *vt_framework_name(int fw)
{
	switch (fw) {
	case VT_FW_TENSORFLOW:
		return "tensorflow";
	case VT_FW_JAX:
		return "jax";
	case VT_FW_PYTORCH:
		return "pytorch";
	case VT_FW_CUPY:
		return "cupy";
	default:
		return "none";
	}
}

int vt_framework_of(const struct vt_proc *p)
{
	static const struct {
		const char *needle;
		int fw;
	} signs[] = {
	    {"libtensorflow_framework", VT_FW_TENSORFLOW},
	    {"_pywrap_tensorflow", VT_FW_TENSORFLOW},
	    {"libtensorflow_cc", VT_FW_TENSORFLOW},
	    {"xla_extension", VT_FW_JAX},
	    {"jaxlib", VT_FW_JAX},
	    {"libtorch_cuda", VT_FW_PYTORCH},
	    {"libc10_cuda", VT_FW_PYTORCH},
	    {"cupy_backends", VT_FW_CUPY},
	    {"/cupy/", VT_FW_CUPY},
	};
	for (uint32_t i = 0; i < p->nmodules; i++)
		for (size_t s = 0; s < sizeof signs / sizeof signs[0]; s++)
			if (strstr(p->modules[i].path, signs[s].needle))
				return signs[s].fw;
	return VT_FW_NONE;
}

uint64_t vt_finding_bytes_max(const struct vt_finding *f)
{
	uint64_t b = 0;
	for (uint32_t i = 0; i < f->ndev; i++)
		if (f->bytes[i] > b)
			b = f->bytes[i];
	return b;
}

static struct vt_finding *new_flag(struct vt_findings *out, int kind, uint32_t proc)
{
	if (out->n == out->cap) {
		uint32_t cap = out->cap ? out->cap * 2 : 8;
		struct vt_finding *v = realloc(out->v, cap * sizeof *v);
		if (!v)
			vt_nomem();
		out->v = v;
		out->cap = cap;
	}
	struct vt_finding *f = &out->v[out->n++];
	memset(f, 0, sizeof *f);
	f->kind = kind;
	f->proc = proc;
	return f;
}

/* Add bytes on a device, keeping devices ascending. */
static void add_device(struct vt_finding *f, uint8_t dev, uint64_t bytes)
{
	uint32_t i = 0;
	while (i < f->ndev && f->devices[i] < dev)
		i++;
	if (i < f->ndev && f->devices[i] == dev) {
		f->bytes[i] += bytes;
		return;
	}
	memmove(&f->devices[i + 1], &f->devices[i], f->ndev - i);
	memmove(&f->bytes[i + 1], &f->bytes[i], (f->ndev - i) * sizeof f->bytes[0]);
	f->devices[i] = dev;
	f->bytes[i] = bytes;
	f->ndev++;
}

/* ---- one scan: what the flags look at, and the per-step upload ---------- */

struct scan {
	uint64_t step_h2d[VT_MAX_DEVICES]; /* host-to-device bytes per step */
	uint32_t *idx;                     /* datasets, pools, prefetch buffers */
	uint32_t n;
	struct vt_frame_evidence *fe; /* what the upload stacks' names say */
};

/* Whether the stack that filled bytes names a framework path that makes
 * something other than data (a model loaded, optimizer state restored, a
 * batch pinned and copied): no whole-dataset finding, whatever its size
 * and shape. Only a CONTEXT rule counts; a conversion any caller uses
 * (a MECHANISM rule) says nothing about what the bytes are. */
static int stack_says_not_data(const struct scan *ds, uint32_t proc, uint32_t stack_id)
{
	struct vt_frame_hint h = vt_frame_hint(ds->fe, proc, stack_id);
	return h.strength == VT_FRAME_CONTEXT && h.category != VT_CAT_DATASET;
}

/* What the copies into a pool region brought during training (batches
 * land in the region, so they count in the per-step upload too): blocks
 * refilled, and what was first copied from the second step on. */
static uint64_t uploads_in_training(const struct vt_model *m, const struct vt_proc *p, uint32_t idx)
{
	uint32_t n = 0;
	const struct vt_copy_range *r =
	    m->allocs[idx].flags & VT_AF_PARTIAL_COPIES ? vt_model_ranges(m, idx, &n) : NULL;
	uint64_t sum = 0;
	/* from the second step: a step found without markers may start before
	 * the dataset's own upload */
	uint64_t from = p->step_t[p->nsteps >= 2 ? 1 : 0];
	for (uint32_t i = 0; i < n; i++)
		if (r[i].t_first >= from)
			sum += r[i].total_bytes;
		else if (r[i].copies > 1) /* refilled: all but the first copy */
			sum += r[i].total_bytes - r[i].bytes;
	return sum;
}

/* The same for a tensor, whatever its category (a batch the classifier got
 * wrong still counts): all of it when first filled from the second step on,
 * else its refills. */
static uint64_t tensor_uploads_in_training(const struct vt_model *m, const struct vt_proc *p,
                                           const struct vt_alloc *a)
{
	const struct vt_alloc_copies *cp = vt_model_copies(m, a);
	uint64_t from = p->step_t[p->nsteps >= 2 ? 1 : 0];
	if (cp->t_first_h2d >= from)
		return cp->h2d_bytes;
	return cp->h2d_bytes > a->bytes ? cp->h2d_bytes - a->bytes : 0;
}

static void scan_allocs(const struct vt_model *m, struct scan *ds)
{
	uint64_t h2d[VT_MAX_DEVICES] = {0};
	uint32_t steps[VT_MAX_DEVICES] = {0}, cap = 0;
	memset(ds, 0, sizeof *ds);
	for (uint32_t i = 0; i < m->nallocs; i++) {
		const struct vt_alloc *a = &m->allocs[i];
		int c = a->category;
		if (c == VT_CAT_DATASET || c == VT_CAT_POOL || c == VT_CAT_PREFETCH) {
			if (ds->n == cap) {
				cap = cap ? cap * 2 : 64;
				uint32_t *v = realloc(ds->idx, cap * sizeof *v);
				if (!v)
					vt_nomem();
				ds->idx = v;
			}
			ds->idx[ds->n++] = i;
		}
		uint64_t h2d_bytes = vt_model_copies(m, a)->h2d_bytes;
		if (a->device == VT_DEVICE_UNKNOWN || !h2d_bytes)
			continue;
		const struct vt_proc *p = &m->procs[a->proc];
		if (p->nsteps > steps[a->device])
			steps[a->device] = p->nsteps;
		if (c == VT_CAT_POOL && p->nsteps)
			h2d[a->device] += uploads_in_training(m, p, i);
		else if (p->nsteps)
			h2d[a->device] += tensor_uploads_in_training(m, p, a);
		else if (c == VT_CAT_PREFETCH || c == VT_CAT_ACTIVATIONS || c == VT_CAT_GRADIENTS)
			h2d[a->device] += h2d_bytes;
	}
	for (int d = 0; d < VT_MAX_DEVICES; d++)
		ds->step_h2d[d] = steps[d] ? h2d[d] / steps[d] : 0;
}

static int big_enough(const struct vt_model *m, const struct scan *ds, uint8_t dev, uint64_t bytes)
{
	uint64_t total = vt_model_device_total(m, dev);
	if (bytes < MIB)
		return 0;
	return bytes >= 4 * ds->step_h2d[dev] || (total && bytes * 10 >= total);
}

/* ---- advice -------------------------------------------------------------- */

static void dataset_advice(struct vt_finding *f, const char *size)
{
	switch (f->framework) {
	case VT_FW_TENSORFLOW:
		snprintf(
		    f->advice, sizeof f->advice,
		    "The whole dataset (%s) was copied to the GPU as one constant. From TensorFlow "
		    "2.6, tf.data.Dataset.from_tensor_slices(numpy) and model.fit(numpy) convert "
		    "the "
		    "whole array with convert_to_tensor and the _EagerConst op places it on the "
		    "default GPU. Build the dataset under tf.device('/CPU:0'), or feed it with "
		    "tf.data.Dataset.from_generator or a file-backed pipeline (TFRecord). "
		    "set_memory_growth and prefetch(1) do not make this allocation fit.",
		    size);
		break;
	case VT_FW_JAX:
		snprintf(
		    f->advice, sizeof f->advice,
		    "The whole dataset (%s) lives on the GPU. Keep the array on the host (numpy) "
		    "and move one batch at a time with jax.device_put inside the input loop.",
		    size);
		break;
	case VT_FW_PYTORCH:
		snprintf(f->advice, sizeof f->advice,
		         "The whole dataset (%s) lives on the GPU. Keep the tensor on the CPU (a "
		         "DataLoader with pin_memory=True) and move each batch with "
		         ".to('cuda', non_blocking=True).",
		         size);
		break;
	default:
		snprintf(
		    f->advice, sizeof f->advice,
		    "The whole dataset (%s) was uploaded to the device. Keep it in host memory "
		    "(pinned) and upload one batch per step, double-buffered "
		    "(cuMemcpyHtoDAsync on a second stream), or stream it from disk.",
		    size);
	}
}

static void prefetch_advice(struct vt_finding *f)
{
	char batch[32], all[32];
	vt_format_bytes(f->batch_bytes, batch, sizeof batch);
	vt_format_bytes(f->batch_bytes * f->depth, all, sizeof all);
	const char *how = f->framework == VT_FW_TENSORFLOW ? "dataset.prefetch(N) with a smaller N"
	                  : f->framework == VT_FW_PYTORCH  ? "a smaller DataLoader prefetch_factor"
	                  : f->framework == VT_FW_JAX
	                      ? "a smaller prefetch buffer in the input iterator"
	                      : "a smaller prefetch buffer";
	if (f->depth > 2)
		snprintf(
		    f->advice, sizeof f->advice,
		    "Prefetch holds %u batches of %s (%s) per device. If memory is tight, %s frees "
		    "%s per batch dropped; 2 usually keeps the device busy.",
		    f->depth, batch, all, how, batch);
	else
		snprintf(
		    f->advice, sizeof f->advice,
		    "Prefetch holds %u batch%s of %s (%s) per device: not what fills the device.",
		    f->depth, f->depth == 1 ? "" : "es", batch, all);
}

static void replicated_advice(struct vt_finding *f)
{
	char each[32], total[32];
	uint64_t sum = 0;
	for (uint32_t i = 0; i < f->ndev; i++)
		sum += f->bytes[i];
	vt_format_bytes(vt_finding_bytes_max(f), each, sizeof each);
	vt_format_bytes(sum, total, sizeof total);
	const char *how =
	    f->framework == VT_FW_TENSORFLOW
	        ? "A mirrored strategy only needs per-replica batches: create the dataset under "
	          "tf.device('/CPU:0') and distribute it with experimental_distribute_dataset."
	    : f->framework == VT_FW_PYTORCH
	        ? "Each replica only needs its batches: keep the data on the CPU and use a "
	          "DistributedSampler."
	        : "Each replica only needs its own batches: keep one copy on the host and send "
	          "each device its batches.";
	snprintf(f->advice, sizeof f->advice,
	         "The same %s dataset is held on each of %u devices "
	         "(%s in all). %s",
	         each, f->ndev, total, how);
}

static void pool_advice(struct vt_finding *f)
{
	const char *how =
	    f->framework == VT_FW_TENSORFLOW ? " (it sets TF_GPU_ALLOCATOR=cuda_malloc_async)"
	    : f->framework == VT_FW_JAX ? " (it sets XLA_PYTHON_CLIENT_ALLOCATOR=platform; each "
	                                  "buffer then takes at least 2 MiB, the VMM granularity "
	                                  "seen on an H200)"
	    : f->framework == VT_FW_PYTORCH ? " (it sets PYTORCH_NO_CUDA_MEMORY_CACHING=1)"
	                                    : "";
	char size[32];
	vt_format_bytes(vt_finding_bytes_max(f), size, sizeof size);
	snprintf(f->advice, sizeof f->advice,
	         "An allocator holds %s in an opaque region; only copies into it show what it "
	         "contains. Rerun with `vramtrace run --per-tensor`%s to see each tensor.",
	         size, how);
}

/* Likely causes of memory kept every step, for the framework: the evidence
 * (rate, steps, site) is in the finding's own line. */
static void growth_advice(struct vt_finding *f)
{
	char rate[32];
	vt_format_bytes(f->growth.bytes_per_step, rate, sizeof rate);
	const char *causes =
	    f->framework == VT_FW_PYTORCH
	        ? "a tensor kept every step in a Python list or dict without .detach() or "
	          ".item() (losses.append(loss) also keeps each step's autograd graph), a "
	          "cache or memo that never evicts, or a hook or closure that captures a "
	          "tensor. Keep Python numbers (.item()), or .detach().cpu() what you keep, "
	          "and bound caches"
	    : f->framework == VT_FW_TENSORFLOW
	        ? "a tensor kept every step in a Python list (outputs or losses not turned "
	          "into numpy), tf.Variables or constants created inside the step, a "
	          "tf.function retraced for new shapes, or a cache that never evicts. Keep "
	          ".numpy() values, create variables once, and fix input shapes"
	    : f->framework == VT_FW_JAX
	        ? "a jax.Array kept every step in a Python list (losses or metrics not "
	          "fetched with jax.device_get or float()), a jit cache growing with new "
	          "shapes or static arguments, or a closure that captures device arrays. "
	          "Fetch what you keep to the host, and fix shapes"
	        : "a buffer allocated every step and never freed (a free missed on one "
	          "path), a cache without eviction, or a result kept per step. Free it, "
	          "reuse one buffer, or bound the cache";
	snprintf(f->advice, sizeof f->advice,
	         "%u of %u steps after the warm-up each left about %s live from this site. "
	         "Likely causes: %s.",
	         f->growth.steps_kept, f->growth.steps_counted, rate, causes);
}

static void growth_flags(const struct vt_model *m, struct vt_findings *out)
{
	struct vt_growths g;
	vt_growth_find(m, VT_T_NEVER, &g);
	for (uint32_t i = 0; i < g.n; i++) {
		struct vt_finding *f = new_flag(out, VT_FINDING_GROWTH, g.v[i].proc);
		add_device(f, g.v[i].device, g.v[i].kept_bytes);
		f->stack_id = g.v[i].stack_id;
		f->t_ns = g.v[i].t_first_ns;
		f->confidence = g.v[i].confidence;
		f->framework = vt_framework_of(&m->procs[g.v[i].proc]);
		f->growth = g.v[i];
		growth_advice(f);
	}
	vt_growths_free(&g);
}

/* ---- whole-dataset uploads ------------------------------------------------ */

/* Whether finding f names device dev. */
static int on_device(const struct vt_finding *f, uint8_t dev)
{
	for (uint32_t k = 0; k < f->ndev; k++)
		if (f->devices[k] == dev)
			return 1;
	return 0;
}

/* The flag already made for the same dataset on another device: same proc,
 * same size and site. */
static struct vt_finding *same_dataset(struct vt_findings *out, uint32_t first, uint32_t proc,
                                       uint32_t stack_id, uint64_t bytes, uint8_t dev)
{
	for (uint32_t i = first; i < out->n; i++) {
		struct vt_finding *f = &out->v[i];
		if (f->kind != VT_FINDING_WHOLE_DATASET || f->proc != proc ||
		    f->stack_id != stack_id || f->bytes[0] != bytes)
			continue;
		if (!on_device(f, dev))
			return f;
	}
	return NULL;
}

/* -> the index of the finding made or grown */
static uint32_t note_dataset(const struct vt_model *m, struct vt_findings *out, uint32_t first,
                             uint32_t proc, uint32_t stack, uint8_t dev, uint64_t bytes,
                             uint64_t copies, uint64_t t, int confidence)
{
	struct vt_finding *f = same_dataset(out, first, proc, stack, bytes, dev);
	if (!f) {
		f = new_flag(out, VT_FINDING_WHOLE_DATASET, proc);
		f->stack_id = stack;
		f->t_ns = t;
		f->confidence = confidence;
		f->framework = vt_framework_of(&m->procs[proc]);
	}
	add_device(f, dev, bytes);
	f->copies += copies;
	if (t < f->t_ns)
		f->t_ns = t;
	return (uint32_t)(f - out->v);
}

/* The whole-dataset finding of this process and device uploaded through
 * call path `stack` (and first at time t; VT_T_NEVER: any time), or NULL. */
static struct vt_finding *finding_of_stack(struct vt_findings *out, uint32_t first, uint32_t proc,
                                           uint8_t dev, uint32_t stack, uint64_t t)
{
	for (uint32_t i = first; i < out->n; i++) {
		struct vt_finding *f = &out->v[i];
		if (f->kind == VT_FINDING_WHOLE_DATASET && f->proc == proc && on_device(f, dev) &&
		    f->stack_id == stack && (t == VT_T_NEVER || f->t_ns == t))
			return f;
	}
	return NULL;
}

/* The finding that big dataset array b opened: the one of its call path
 * first uploaded when b was (a job that uploads a new array each epoch
 * through one path has a finding for each); else the path's. */
static struct vt_finding *finding_of_array(const struct vt_model *m, struct vt_findings *out,
                                           uint32_t first, const struct vt_alloc *b)
{
	uint32_t stack = vt_alloc_fill_stack(m, b);
	struct vt_finding *f = finding_of_stack(out, first, b->proc, b->device, stack,
	                                        vt_model_copies(m, b)->t_first_h2d);
	return f ? f : finding_of_stack(out, first, b->proc, b->device, stack, VT_T_NEVER);
}

/* The finding of the big array allocated right before or after allocation
 * idx of its process, on its device: `device_put(x); device_put(y)`, one
 * conversion after the other, before training or between its steps (a
 * continual trainer's next day of data). A big array's upload can take
 * longer than half a step, so time alone would miss the label array that
 * follows it. */
static struct vt_finding *next_to(const struct vt_model *m, const struct scan *ds,
                                  struct vt_findings *out, uint32_t first, uint32_t idx)
{
	const struct vt_alloc *a = &m->allocs[idx];
	const struct vt_proc *p = &m->procs[a->proc];
	/* with a step begun after it: a batch made right after the data, in a
	 * step the job did not finish (an out-of-memory death), is no label
	 * array */
	if (p->nsteps < 3 || a->t_alloc >= p->step_t[p->nsteps - 1])
		return NULL;
	for (int d = -1; d <= 1; d += 2) {
		uint32_t j = idx + (uint32_t)d;
		if ((d < 0 && idx == p->alloc_begin) || j >= p->alloc_end)
			continue;
		const struct vt_alloc *b = &m->allocs[j];
		if (b->category != VT_CAT_DATASET || b->confidence < VT_CONFIDENT ||
		    b->device != a->device || !big_enough(m, ds, b->device, b->bytes))
			continue;
		struct vt_finding *f = finding_of_array(m, out, first, b);
		if (f)
			return f;
	}
	return NULL;
}

/* The finding a small dataset array a joins, or NULL: the one on its
 * device uploaded through the same call path (the conversion that made x
 * made y). Its caller then tries next_to. Time alone ties nothing: what a
 * job uploads right after its data may be a model it loads to score it. */
static struct vt_finding *companion_of(const struct vt_model *m, struct vt_findings *out,
                                       uint32_t first, const struct vt_alloc *a)
{
	return finding_of_stack(out, first, a->proc, a->device, vt_alloc_fill_stack(m, a),
	                        VT_T_NEVER);
}

/* An upload that opened or joined a whole-dataset finding (a tensor, or a
 * run of a pool region's ranges): the companion pass takes the next upload
 * on its device after it. */
struct noted_run {
	uint32_t alloc;   /* the tensor or the region */
	uint64_t lo, hi;  /* offsets in it */
	uint64_t t_last;  /* the last copy's time */
	uint32_t finding; /* index in out->v */
};

struct noted_runs {
	struct noted_run *v;
	uint32_t n, cap;
};

static void note_run(struct noted_runs *runs, uint32_t alloc, uint64_t lo, uint64_t hi,
                     uint64_t t_last, uint32_t finding)
{
	if (runs->n == runs->cap) {
		runs->cap = runs->cap ? runs->cap * 2 : 16;
		struct noted_run *v = realloc(runs->v, runs->cap * sizeof *v);
		if (!v)
			vt_nomem();
		runs->v = v;
	}
	runs->v[runs->n++] = (struct noted_run){alloc, lo, hi, t_last, finding};
}

/* Whether pool range r was filled whole twice, in a process with no steps
 * or at least four steps for each fill: the same array converted again by
 * a second call (Keras `evaluate` then `predict`, cuML `fit` then
 * `kneighbors`, each converting the numpy array it is given), its new
 * tensor placed where the first one was freed. A batch slot is refilled
 * every step; a staging buffer of a job with no steps more than twice. */
static int converted_again(const struct vt_proc *p, const struct vt_copy_range *r)
{
	return r->copies == 2 && r->total_bytes == 2 * r->bytes &&
	       (p->nsteps == 0 || p->nsteps >= 8);
}

/* a's host copies, when they all landed on one range that was converted
 * again (converted_again): that range, else NULL. */
static const struct vt_copy_range *converted_again_whole(const struct vt_model *m,
                                                         const struct vt_alloc *a)
{
	const struct vt_copy_range *r = vt_alloc_only_range(m, a);
	return r && converted_again(&m->procs[a->proc], r) ? r : NULL;
}

/* The small confident dataset arrays of one call path on one device: a
 * table uploaded column by column (cuDF's from_pandas), each column too
 * small to be flagged alone, the table as large as any dataset. */
struct column_site {
	uint64_t key; /* proc << 40 | device << 32 | stack */
	uint64_t bytes;
	uint64_t last_upload, first_free; /* alive together: first_free > last_upload */
	uint32_t opener;                  /* the first column's allocation */
	UT_hash_handle hh;
};

static int small_data(const struct vt_model *m, const struct scan *ds, const struct vt_alloc *a)
{
	return a->category == VT_CAT_DATASET && a->confidence >= VT_CONFIDENT &&
	       !big_enough(m, ds, a->device, a->bytes) &&
	       !stack_says_not_data(ds, a->proc, vt_alloc_fill_stack(m, a));
}

/* Open a finding with the first column of each call path whose columns,
 * alive together, are as large as a dataset and joined no finding yet;
 * the companion pass adds the other columns (same call path). -> the
 * allocations that opened one (their caller skips them), or NULL. */
static uint8_t *tables_by_column(const struct vt_model *m, const struct scan *ds,
                                 struct vt_findings *out, uint32_t first)
{
	struct column_site *sites = NULL, *s, *tmp;
	for (uint32_t k = 0; k < ds->n; k++) {
		const struct vt_alloc *a = &m->allocs[ds->idx[k]];
		if (!small_data(m, ds, a))
			continue;
		uint64_t key =
		    (uint64_t)a->proc << 40 | (uint64_t)a->device << 32 | vt_alloc_fill_stack(m, a);
		HASH_FIND(hh, sites, &key, sizeof key, s);
		if (!s) {
			s = calloc(1, sizeof *s);
			if (!s)
				vt_nomem();
			*s = (struct column_site){
			    .key = key, .first_free = VT_T_NEVER, .opener = ds->idx[k]};
			HASH_ADD(hh, sites, key, sizeof s->key, s);
		}
		uint64_t t = vt_model_copies(m, a)->t_first_h2d;
		s->bytes += a->bytes;
		s->last_upload = t > s->last_upload ? t : s->last_upload;
		s->first_free = a->t_free < s->first_free ? a->t_free : s->first_free;
	}
	uint8_t *opened = NULL;
	HASH_ITER(hh, sites, s, tmp)
	{
		const struct vt_alloc *a = &m->allocs[s->opener];
		uint32_t stack = (uint32_t)s->key;
		if (s->first_free > s->last_upload && big_enough(m, ds, a->device, s->bytes) &&
		    !finding_of_stack(out, first, a->proc, a->device, stack, VT_T_NEVER)) {
			const struct vt_alloc_copies *c = vt_model_copies(m, a);
			note_dataset(m, out, first, a->proc, stack, a->device, a->bytes,
			             c->h2d_copies, c->t_first_h2d, a->confidence);
			if (!opened && !(opened = calloc(m->nallocs, 1)))
				vt_nomem();
			opened[s->opener] = 1;
		}
		HASH_DEL(sites, s);
		free(s);
	}
	return opened;
}

static void datasets_per_tensor(const struct vt_model *m, const struct scan *ds,
                                struct vt_findings *out, uint32_t first, struct noted_runs *runs)
{
	for (uint32_t k = 0; k < ds->n; k++) {
		const struct vt_alloc *a = &m->allocs[ds->idx[k]];
		if (a->category != VT_CAT_DATASET || a->confidence < VT_CONFIDENT ||
		    !big_enough(m, ds, a->device, a->bytes))
			continue;
		const struct vt_alloc_copies *c = vt_model_copies(m, a);
		uint32_t stack = vt_alloc_fill_stack(m, a);
		if (stack_says_not_data(ds, a->proc, stack))
			continue;
		/* the data's bytes: an allocator's region holding it may be larger */
		uint64_t bytes = vt_alloc_data_bytes(m, a);
		const struct vt_copy_range *again = converted_again_whole(m, a);
		uint32_t f = note_dataset(m, out, first, a->proc, stack, a->device, bytes,
		                          again ? 1 : c->h2d_copies, c->t_first_h2d, a->confidence);
		note_run(runs, ds->idx[k], 0, a->bytes, again ? c->t_first_h2d : c->t_last_h2d, f);
		if (again) { /* the same mistake made twice: two uploads to move off */
			f = note_dataset(m, out, first, a->proc, stack, a->device, bytes, 1,
			                 again->t_last, a->confidence);
			note_run(runs, ds->idx[k], 0, a->bytes, again->t_last, f);
		}
	}
	/* The arrays that come with a big one (its labels y beside x, a
	 * validation pair) are the same mistake, however small: one finding
	 * with all of them, so that its bytes are what moving the data off the
	 * device frees. Only confident dataset verdicts uploaded through the
	 * same call path (the conversion that made x made y), never alone: a
	 * batch buffer of a step cut short is no companion. */
	uint8_t *opened = tables_by_column(m, ds, out, first);
	for (uint32_t k = 0; k < ds->n; k++) {
		const struct vt_alloc *a = &m->allocs[ds->idx[k]];
		if (a->category != VT_CAT_DATASET || a->confidence < VT_CONFIDENT ||
		    big_enough(m, ds, a->device, a->bytes) || (opened && opened[ds->idx[k]]))
			continue;
		const struct vt_alloc_copies *c = vt_model_copies(m, a);
		struct vt_finding *f = companion_of(m, out, first, a);
		if (!f)
			f = next_to(m, ds, out, first, ds->idx[k]);
		if (!f)
			continue;
		add_device(f, a->device, a->bytes);
		f->copies += c->h2d_copies;
	}
	free(opened);
}

/* In a pool: contiguous ranges copied once each, from one site, close in
 * time, are one upload; a big one is a dataset, unless its site made
 * VT_LOADER_TENSORS uploads or more (a model loaded tensor by tensor, a
 * batch feeder): then each range alone, never a run (a loop loading a
 * model's tensors side by side), and only one that is most of what its site
 * filled (upload_sites.h). */
static void datasets_in_pool(const struct vt_model *m, const struct scan *ds,
                             struct vt_findings *out, uint32_t first, uint32_t idx,
                             const struct vt_upload_sites *sites, struct noted_runs *runs)
{
	const struct vt_alloc *a = &m->allocs[idx];
	const struct vt_proc *p = &m->procs[a->proc];
	uint32_t n;
	const struct vt_copy_range *r = vt_model_ranges(m, idx, &n);
	uint64_t window = p->step_period_ns ? p->step_period_ns / 2 : UINT64_MAX;
	for (uint32_t i = 0; i < n;) {
		uint32_t j = i + 1;
		uint64_t bytes = r[i].bytes;
		int many = vt_upload_site_tensors(sites, r[i].stack_id) >= VT_LOADER_TENSORS;
		if (r[i].copies == 1 &&
		    (!many || !vt_upload_site_is_loader(sites, r[i].stack_id, r[i].bytes))) {
			while (!many && j < n && r[j].copies == 1 &&
			       r[j].stack_id == r[i].stack_id &&
			       r[j].offset == r[j - 1].offset + r[j - 1].bytes &&
			       r[j].t_first - r[i].t_first < window) {
				bytes += r[j].bytes;
				j++;
			}
			if (big_enough(m, ds, a->device, bytes) &&
			    !stack_says_not_data(ds, a->proc, r[i].stack_id)) {
				uint32_t f =
				    note_dataset(m, out, first, a->proc, r[i].stack_id, a->device,
				                 bytes, j - i, r[i].t_first, 70);
				note_run(runs, idx, r[i].offset, r[j - 1].offset + r[j - 1].bytes,
				         r[j - 1].t_first, f);
			}
		} else if (converted_again(p, &r[i]) && !many &&
		           big_enough(m, ds, a->device, bytes) &&
		           !stack_says_not_data(ds, a->proc, r[i].stack_id)) {
			uint32_t f = note_dataset(m, out, first, a->proc, r[i].stack_id, a->device,
			                          bytes, 1, r[i].t_first, 70);
			note_run(runs, idx, r[i].offset, r[i].offset + r[i].bytes, r[i].t_first, f);
			f = note_dataset(m, out, first, a->proc, r[i].stack_id, a->device, bytes, 1,
			                 r[i].t_last, 70);
			note_run(runs, idx, r[i].offset, r[i].offset + r[i].bytes, r[i].t_last, f);
		}
		i = j;
	}
}

static int in_noted_run(const struct noted_runs *runs, uint32_t alloc, uint64_t offset)
{
	for (uint32_t k = 0; k < runs->n; k++)
		if (runs->v[k].alloc == alloc && offset >= runs->v[k].lo && offset < runs->v[k].hi)
			return 1;
	return 0;
}

/* Whether process proc made an upload to device dev, other than one of
 * the noted runs, first at a time in (t0, t1): a tensor's first copy or
 * a pool range's. */
static int upload_between(const struct vt_model *m, const struct noted_runs *runs, uint32_t proc,
                          uint8_t dev, uint64_t t0, uint64_t t1)
{
	const struct vt_proc *p = &m->procs[proc];
	for (uint32_t i = p->alloc_begin; i < p->alloc_end; i++) {
		const struct vt_alloc *a = &m->allocs[i];
		if (a->device != dev)
			continue;
		if (!(a->flags & VT_AF_PARTIAL_COPIES)) {
			uint64_t t = vt_model_copies(m, a)->t_first_h2d;
			if (t > t0 && t < t1 && !in_noted_run(runs, i, 0))
				return 1;
			continue;
		}
		uint32_t n;
		const struct vt_copy_range *r = vt_model_ranges(m, i, &n);
		for (uint32_t k = 0; k < n; k++)
			if (r[k].t_first > t0 && r[k].t_first < t1 &&
			    !in_noted_run(runs, i, r[k].offset))
				return 1;
	}
	return 0;
}

/* The finding uploaded through range r's call path whose upload r
 * directly follows on its device (nothing else uploaded between), or -1:
 * x and y converted one after the other by one conversion, y placed
 * wherever the allocator had room. The call path is what ties them: the
 * next upload alone may be anything (a model loaded right after the data
 * it will score lands right after it). */
static int64_t pool_companion_of(const struct vt_model *m, const struct vt_findings *out,
                                 const struct noted_runs *runs, const struct vt_alloc *a,
                                 const struct vt_copy_range *r)
{
	int64_t best = -1;
	uint64_t best_t = 0;
	for (uint32_t k = 0; k < runs->n; k++) {
		const struct noted_run *run = &runs->v[k];
		const struct vt_finding *f = &out->v[run->finding];
		if (f->proc != a->proc || !on_device(f, a->device) || run->t_last >= r->t_first ||
		    f->stack_id != r->stack_id)
			continue;
		if (best < 0 || run->t_last > best_t) {
			best = run->finding;
			best_t = run->t_last;
		}
	}
	if (best >= 0 && upload_between(m, runs, a->proc, a->device, best_t, r->t_first))
		return -1;
	return best;
}

/* A pool range that may be a dataset's companion, for the time order. */
struct candidate {
	uint32_t region;
	const struct vt_copy_range *r;
};

static int by_first_copy(const void *x, const void *y)
{
	uint64_t a = ((const struct candidate *)x)->r->t_first;
	uint64_t b = ((const struct candidate *)y)->r->t_first;
	return a < b ? -1 : a > b;
}

/* The pool ranges of process proc that may join a finding: copied once
 * (a batch slot is refilled: under XLA or a helper that makes every copy,
 * batches come through the data's call path too), from a site that never
 * had VT_MODEL_TENSORS alive at once (a model loader), not a finding's own (one as large as a
 * dataset, from a site that filled several, is not flagged alone); in the order of their first
 * copy. */
static struct candidate *companion_candidates(const struct vt_model *m, const struct scan *ds,
                                              uint32_t proc, const struct vt_upload_sites *sites,
                                              const struct noted_runs *runs, uint32_t *count)
{
	struct candidate *v = NULL;
	uint32_t n = 0, cap = 0;
	for (uint32_t k = 0; k < ds->n; k++) {
		uint32_t region = ds->idx[k], nr;
		const struct vt_alloc *a = &m->allocs[region];
		if (!vt_alloc_is_pool(a) || a->proc != proc)
			continue;
		const struct vt_copy_range *r = vt_model_ranges(m, region, &nr);
		for (uint32_t i = 0; i < nr; i++) {
			if (!r[i].stack_id ||   /* no call path: nothing ties it */
			    r[i].copies != 1 || /* refilled: a batch slot */
			    vt_upload_site_most_alive(sites, r[i].stack_id) >= VT_MODEL_TENSORS ||
			    in_noted_run(runs, region, r[i].offset))
				continue;
			if (n == cap) {
				cap = cap ? cap * 2 : 16;
				struct candidate *w = realloc(v, cap * sizeof *w);
				if (!w)
					vt_nomem();
				v = w;
			}
			v[n++] = (struct candidate){region, &r[i]};
		}
	}
	if (n > 1)
		qsort(v, n, sizeof *v, by_first_copy);
	*count = n;
	return v;
}

/* The arrays uploaded with a dataset into a pool (its labels, converted
 * right after it by the same call; x, y and a teacher's logits one after
 * the other): one finding with them, as datasets_per_tensor does for
 * tensors. Each the next upload on the device after the dataset's or
 * after a companion's, through the dataset's call path, from a site that
 * is no model loader. A label array may land
 * in any region of the process, a caching segment too. */
static void pool_companions(const struct vt_model *m, const struct scan *ds,
                            struct vt_findings *out, uint32_t proc,
                            const struct vt_upload_sites *sites, struct noted_runs *runs)
{
	uint32_t n;
	struct candidate *v = companion_candidates(m, ds, proc, sites, runs, &n);
	for (uint32_t i = 0; i < n; i++) {
		const struct vt_alloc *a = &m->allocs[v[i].region];
		const struct vt_copy_range *r = v[i].r;
		int64_t f = pool_companion_of(m, out, runs, a, r);
		if (f < 0)
			continue;
		add_device(&out->v[f], a->device, r->bytes);
		out->v[f].copies++;
		note_run(runs, v[i].region, r->offset, r->offset + r->bytes, r->t_first,
		         (uint32_t)f);
	}
	free(v);
}

/* What the upload sites count here: every allocation filled from the host
 * outside a pool (weights, datasets, batches alike: a site that filled
 * several is no one-off upload), and every copy into a pool region. */
static int uploaded_tensor(const struct vt_model *m, uint32_t i, void *arg)
{
	(void)arg;
	return m->allocs[i].category != VT_CAT_POOL && vt_model_copies(m, &m->allocs[i])->h2d_bytes;
}

static int pool_region(const struct vt_model *m, uint32_t i, void *arg)
{
	(void)arg;
	return m->allocs[i].category == VT_CAT_POOL;
}

/* ---- prefetch depth --------------------------------------------------------- */

/* A birth or a death of a prefetch buffer; which of the two, its array
 * says. With a buffer a step, these were a fifth of a long trace's peak
 * memory while each said which and named its allocation too. */
struct edge {
	uint64_t t, seq;
};

static int edge_cmp(const void *x, const void *y)
{
	const struct edge *a = x, *b = y;
	if (a->t != b->t)
		return a->t < b->t ? -1 : 1;
	if (a->seq != b->seq)
		return a->seq < b->seq ? -1 : 1;
	return 0;
}

/* Births come in allocation order and deaths nearly always in time order:
 * sort only when they are not (threads racing for the clock). */
static void sort_if_needed(struct edge *e, uint32_t n)
{
	for (uint32_t i = 1; i < n; i++)
		if (edge_cmp(&e[i - 1], &e[i]) > 0) {
			qsort(e, n, sizeof *e, edge_cmp);
			return;
		}
}

/* What one batch is: the prefetch buffers a step makes (x and y, inputs
 * and masks), as most steps make them, and their bytes. One array each
 * when the process has no steps or its steps disagree. */
struct batch_shape {
	uint32_t arrays;
	uint64_t bytes;
};

static struct batch_shape batch_shape(const struct vt_model *m, const struct scan *ds,
                                      uint32_t proc, uint8_t dev)
{
	const struct vt_proc *p = &m->procs[proc];
	struct batch_shape one = {1, 0};
	if (p->nsteps < 3)
		return one;
	uint32_t *count = calloc(p->nsteps, sizeof *count);
	uint64_t *bytes = calloc(p->nsteps, sizeof *bytes);
	if (!count || !bytes)
		vt_nomem();
	for (uint32_t k = 0; k < ds->n; k++) {
		const struct vt_alloc *a = &m->allocs[ds->idx[k]];
		if (a->category != VT_CAT_PREFETCH || a->proc != proc || a->device != dev)
			continue;
		int s = vt_step_of(p, a->t_alloc);
		if (s >= 0) {
			count[s]++;
			bytes[s] += a->bytes;
		}
	}
	/* the count most steps that made any share: the batch's arrays */
	uint32_t hist[9] = {0}, steps = 0;
	for (uint32_t s = 0; s < p->nsteps; s++)
		if (count[s]) {
			steps++;
			hist[count[s] < 8 ? count[s] : 8]++;
		}
	uint32_t mode = 1;
	for (uint32_t c = 1; c < 8; c++)
		if (hist[c] > hist[mode])
			mode = c;
	struct batch_shape shape = one;
	if (mode > 1 && hist[mode] * 2 > steps) {
		shape.arrays = mode;
		for (uint32_t s = 0; s < p->nsteps; s++)
			if (count[s] == mode && bytes[s] > shape.bytes)
				shape.bytes = bytes[s];
	}
	free(count);
	free(bytes);
	return shape;
}

#define MAX_PREFETCH_DEPTH 8

static int is_prefetch_of(const struct vt_alloc *a, uint32_t proc, uint8_t dev)
{
	return a->category == VT_CAT_PREFETCH && a->proc == proc && a->device == dev;
}

/* The prefetch buffers' births in (t, seq) order: read from the scan when
 * it holds them in that order (nearly always: records are kept in the
 * order they were made), else from a sorted copy. A copy of every birth
 * was 7 % of a long trace's peak memory, with a buffer a step. */
struct births {
	const struct vt_model *m;
	const struct scan *ds;
	uint32_t proc, at; /* at: the scan's next entry */
	uint8_t dev;
	struct edge *sorted; /* NULL: from the scan */
	uint32_t i, n;
};

/* The next birth into *out; 0 when none is left. */
static int next_birth(struct births *b, struct edge *out)
{
	if (b->i == b->n)
		return 0;
	if (b->sorted) {
		*out = b->sorted[b->i++];
		return 1;
	}
	const struct vt_alloc *a;
	do
		a = &b->m->allocs[b->ds->idx[b->at++]];
	while (!is_prefetch_of(a, b->proc, b->dev));
	*out = (struct edge){a->t_alloc, a->seq_alloc};
	b->i++;
	return 1;
}

/* The most buffers live at once (births and deaths merged in (t, seq,
 * frees first) order) and when that was first reached. */
static int most_live(struct births *b, const struct edge *deaths, uint32_t nd, uint64_t *when)
{
	int live = 0, best = 0;
	struct edge birth;
	int more = next_birth(b, &birth);
	for (uint32_t j = 0; more || j < nd;) {
		int death = j < nd && (!more || edge_cmp(&deaths[j], &birth) <= 0);
		uint64_t t = death ? deaths[j++].t : birth.t;
		if (!death)
			more = next_birth(b, &birth);
		live += death ? -1 : 1;
		if (live > best) {
			best = live;
			*when = t;
		}
	}
	return best;
}

/* The prefetch buffers of one process on one device, from the scan. */
static void prefetch_on(const struct vt_model *m, const struct scan *ds, uint32_t proc, uint8_t dev,
                        struct vt_findings *out)
{
	struct births b = {.m = m, .ds = ds, .proc = proc, .dev = dev};
	int in_order = 1;
	struct edge last = {0, 0};
	for (uint32_t k = 0; k < ds->n; k++) {
		const struct vt_alloc *a = &m->allocs[ds->idx[k]];
		if (!is_prefetch_of(a, proc, dev))
			continue;
		struct edge e = {a->t_alloc, a->seq_alloc};
		in_order &= !b.n++ || edge_cmp(&last, &e) <= 0;
		last = e;
	}
	if (b.n < 3)
		return;
	struct edge *deaths = malloc((in_order ? 1 : 2) * b.n * sizeof *deaths);
	if (!deaths)
		vt_nomem();
	b.sorted = in_order ? NULL : deaths + b.n;
	uint32_t k = 0, nd = 0;
	uint64_t copies = 0, batch = 0;
	uint32_t stack = 0;
	for (uint32_t x = 0; x < ds->n; x++) {
		const struct vt_alloc *a = &m->allocs[ds->idx[x]];
		if (!is_prefetch_of(a, proc, dev))
			continue;
		if (b.sorted)
			b.sorted[k++] = (struct edge){a->t_alloc, a->seq_alloc};
		if (a->t_free != VT_T_NEVER)
			deaths[nd++] = (struct edge){a->t_free, a->seq_free};
		copies += vt_model_copies(m, a)->h2d_copies;
		if (a->bytes > batch) {
			batch = a->bytes;
			stack = vt_alloc_fill_stack(m, a);
		}
	}
	if (b.sorted)
		sort_if_needed(b.sorted, k);
	sort_if_needed(deaths, nd);
	uint64_t when = 0;
	int best = most_live(&b, deaths, nd, &when);
	free(deaths);
	struct batch_shape shape = batch_shape(m, ds, proc, dev);
	if (shape.arrays > 1) { /* x and y of one batch are one batch */
		best = (best + (int)shape.arrays - 1) / (int)shape.arrays;
		batch = shape.bytes;
	}
	/* A device prefetcher holds a few batches (DataLoader's prefetch_factor,
	 * tf.data's prefetch(2), a DALI ring): more "batches" live at once are
	 * tensors filled from the host mistaken for batches (a model's segments
	 * loaded during inference), no evidence for advice. */
	if (best > MAX_PREFETCH_DEPTH)
		return;
	struct vt_finding *f = new_flag(out, VT_FINDING_PREFETCH_DEPTH, proc);
	add_device(f, dev, batch * (uint64_t)best);
	f->depth = (uint32_t)best;
	f->batch_bytes = batch;
	f->copies = copies;
	f->stack_id = stack;
	f->t_ns = when;
	f->confidence = 80;
	f->framework = vt_framework_of(&m->procs[proc]);
	prefetch_advice(f);
}

/* ---- pools ----------------------------------------------------------------- */

static void pool_flag(const struct vt_model *m, uint32_t idx, struct vt_findings *out)
{
	const struct vt_alloc *a = &m->allocs[idx];
	uint32_t h2d_copies = vt_model_copies(m, a)->h2d_copies;
	for (uint32_t i = 0; i < out->n; i++) { /* one flag per process and site */
		struct vt_finding *f = &out->v[i];
		if (f->kind == VT_FINDING_OPAQUE_POOL && f->proc == a->proc &&
		    f->stack_id == a->stack_id) {
			add_device(f, a->device, a->bytes);
			f->copies += h2d_copies;
			pool_advice(f);
			return;
		}
	}
	struct vt_finding *f = new_flag(out, VT_FINDING_OPAQUE_POOL, a->proc);
	add_device(f, a->device, a->bytes);
	f->copies = h2d_copies;
	f->stack_id = a->stack_id;
	f->t_ns = a->t_alloc;
	f->confidence = a->confidence;
	f->framework = vt_framework_of(&m->procs[a->proc]);
	pool_advice(f);
}

void vt_findings_find(const struct vt_model *m, struct vt_findings *out)
{
	memset(out, 0, sizeof *out);
	struct scan ds;
	scan_allocs(m, &ds);
	ds.fe = vt_frame_evidence_new(m);
	uint32_t first = out->n;
	struct noted_runs runs = {0};
	datasets_per_tensor(m, &ds, out, first, &runs);
	for (uint32_t pi = 0; pi < m->nprocs; pi++) {
		struct vt_upload_sites *sites = NULL;
		for (uint32_t k = 0; k < ds.n; k++) {
			const struct vt_alloc *a = &m->allocs[ds.idx[k]];
			/* a caching segment holds tensors of up to 10 MiB, each as
			 * the allocator packed it: an upload into it is one tensor
			 * (a model's buffer), and an array larger than that has a
			 * segment of its own, which the per-tensor rules read */
			if (!vt_alloc_is_pool(a) || a->proc != pi || vt_alloc_is_caching_segment(a))
				continue;
			if (!sites)
				sites = vt_upload_sites_count(m, pi, uploaded_tensor, pool_region,
				                              NULL);
			datasets_in_pool(m, &ds, out, first, ds.idx[k], sites, &runs);
		}
		if (runs.n) {
			if (!sites)
				sites = vt_upload_sites_count(m, pi, uploaded_tensor, pool_region,
				                              NULL);
			pool_companions(m, &ds, out, pi, sites, &runs);
		}
		vt_upload_sites_free(sites);
	}
	free(runs.v);
	uint32_t ndatasets = out->n;
	for (uint32_t i = first; i < ndatasets; i++) {
		char size[32];
		vt_format_bytes(vt_finding_bytes_max(&out->v[i]), size, sizeof size);
		dataset_advice(&out->v[i], size);
		if (out->v[i].ndev < 2)
			continue;
		struct vt_finding copy = out->v[i];
		struct vt_finding *r = new_flag(out, VT_FINDING_REPLICATED, copy.proc);
		*r = copy;
		r->kind = VT_FINDING_REPLICATED;
		replicated_advice(r);
	}
	for (uint32_t pi = 0; pi < m->nprocs; pi++) {
		uint8_t has[VT_MAX_DEVICES] = {0};
		for (uint32_t k = 0; k < ds.n; k++) {
			const struct vt_alloc *a = &m->allocs[ds.idx[k]];
			if (a->category == VT_CAT_PREFETCH && a->proc == pi &&
			    a->device != VT_DEVICE_UNKNOWN)
				has[a->device] = 1;
		}
		for (int d = 0; d < VT_MAX_DEVICES; d++)
			if (has[d])
				prefetch_on(m, &ds, pi, (uint8_t)d, out);
	}
	/* a pool the classifier only guessed (a step's temp buffer) gets no
	 * advice: classify.h's rule for findings on guesses */
	for (uint32_t k = 0; k < ds.n; k++)
		if (vt_alloc_is_pool(&m->allocs[ds.idx[k]]) &&
		    m->allocs[ds.idx[k]].confidence >= VT_CONFIDENT)
			pool_flag(m, ds.idx[k], out);
	free(ds.idx);
	vt_frame_evidence_free(ds.fe);
	growth_flags(m, out);
}

void vt_findings_free(struct vt_findings *f)
{
	free(f->v);
	memset(f, 0, sizeof *f);
}
