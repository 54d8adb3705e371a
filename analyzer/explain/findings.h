/* Findings a person can act on, from a classified model (the JSON and the
 * text call them "flags"):
 *   whole_dataset_upload       host-to-device copies filled long-lived memory
 *                              that is many times the per-step upload, or a
 *                              large share of the device, and acts as data
 *   prefetch_depth             how many batch buffers are alive at once
 *   replicated_across_devices  the same dataset held on several devices
 *   opaque_pool                an allocator region whose tensors are hidden
 *   growth_per_step            a site whose allocations of step after step
 *                              stay live (growth.h)
 * Each with the devices, bytes per device, copies, site, time, confidence
 * and advice that is true for the framework that made the trace
 * (recognised from its loaded modules). */
#ifndef VT_FINDINGS_H
#define VT_FINDINGS_H

#include "growth.h"
#include "model.h"

enum vt_finding_kind {
	VT_FINDING_WHOLE_DATASET = 0,
	VT_FINDING_PREFETCH_DEPTH,
	VT_FINDING_REPLICATED,
	VT_FINDING_OPAQUE_POOL,
	VT_FINDING_GROWTH,
	VT_FINDING_KIND_COUNT
};

enum vt_framework {
	VT_FW_NONE = 0, /* a plain CUDA program, or not recognised */
	VT_FW_TENSORFLOW,
	VT_FW_JAX,
	VT_FW_PYTORCH,
	VT_FW_CUPY,
};

struct vt_finding {
	int kind;          /* enum vt_finding_kind */
	uint32_t proc;     /* process of the site */
	uint32_t stack_id; /* site's stack in that process */
	uint32_t ndev;
	uint8_t devices[VT_MAX_DEVICES]; /* ordinals, ascending */
	uint64_t bytes[VT_MAX_DEVICES];  /* bytes on devices[i] */
	uint64_t copies;                 /* host-to-device copies involved */
	uint64_t t_ns;                   /* first upload / when it was reached */
	uint32_t depth;                  /* prefetch_depth: batches alive at once */
	uint64_t batch_bytes;            /* prefetch_depth: one batch */
	struct vt_growth growth;         /* growth_per_step: the rate and when it fills */
	int confidence;                  /* 0..100 */
	int framework;                   /* enum vt_framework */
	char advice[1024];
};

struct vt_findings {
	struct vt_finding *v;
	uint32_t n, cap;
};

/* Needs vt_classify() first. */
void vt_findings_find(const struct vt_model *m, struct vt_findings *out);
void vt_findings_free(struct vt_findings *f);

const char *vt_finding_kind_name(int kind);
int vt_framework_of(const struct vt_proc *p);
const char *vt_framework_name(int fw);
/* The largest bytes over a flag's devices. */
uint64_t vt_finding_bytes_max(const struct vt_finding *f);

#endif
