/* Findings and their advice (see findings.h). */
#include "findings.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "classify.h"
#include "findings_scan.h"
#include "findings_dataset.h"
#include "findings_prefetch.h"
#include "frame_evidence.h"
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
	uint32_t nprefetch = out->n;
	vt_findings_prefetch(m, &ds, out);
	for (uint32_t i = nprefetch; i < out->n; i++)
		prefetch_advice(&out->v[i]);
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
