/* Findings and their advice (see findings.h). */
#include "findings.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "classify.h"
#include "findings_scan.h"
#include "findings_dataset.h"
#include "frame_evidence.h"
#include "steps.h"
#include "units.h"
#include "nomem.h"
#include "model_query.h"

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
		struct vt_finding *f = vt_findings_new(out, VT_FINDING_GROWTH, g.v[i].proc);
		vt_finding_add_device(f, g.v[i].device, g.v[i].kept_bytes);
		f->stack_id = g.v[i].stack_id;
		f->t_ns = g.v[i].t_first_ns;
		f->confidence = g.v[i].confidence;
		f->framework = vt_framework_of(&m->procs[g.v[i].proc]);
		f->growth = g.v[i];
		growth_advice(f);
	}
	vt_growths_free(&g);
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

static struct batch_shape batch_shape(const struct vt_model *m, const struct vt_findings_scan *ds,
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
#define MIN_BATCH_BYTES 1024

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
	const struct vt_findings_scan *ds;
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
static void prefetch_on(const struct vt_model *m, const struct vt_findings_scan *ds, uint32_t proc,
                        uint8_t dev, struct vt_findings *out)
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
	/* Several "batches" of a few bytes each are constants uploaded per
	 * call (a normalisation's mean and std), not a prefetcher's buffer:
	 * advice to drop one would free nothing. One is still reported, as
	 * what the step's input is. */
	if (best > 1 && batch < MIN_BATCH_BYTES)
		return;
	struct vt_finding *f = vt_findings_new(out, VT_FINDING_PREFETCH_DEPTH, proc);
	vt_finding_add_device(f, dev, batch * (uint64_t)best);
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
			vt_finding_add_device(f, a->device, a->bytes);
			f->copies += h2d_copies;
			pool_advice(f);
			return;
		}
	}
	struct vt_finding *f = vt_findings_new(out, VT_FINDING_OPAQUE_POOL, a->proc);
	vt_finding_add_device(f, a->device, a->bytes);
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
	struct vt_findings_scan ds;
	vt_findings_scan_make(m, &ds);
	ds.fe = vt_frame_evidence_new(m);
	uint32_t first = out->n;
	vt_findings_datasets(m, &ds, out);
	uint32_t ndatasets = out->n;
	for (uint32_t i = first; i < ndatasets; i++) {
		char size[32];
		vt_format_bytes(vt_finding_bytes_max(&out->v[i]), size, sizeof size);
		dataset_advice(&out->v[i], size);
		if (out->v[i].ndev < 2)
			continue;
		struct vt_finding copy = out->v[i];
		struct vt_finding *r = vt_findings_new(out, VT_FINDING_REPLICATED, copy.proc);
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
