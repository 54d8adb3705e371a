/* One finding and the list of them (findings.h makes them): what each
 * kind holds, the names of kinds and frameworks, and what the finding
 * rules do to a finding as they go (append one, add a device's bytes). */
#ifndef VT_FINDING_H
#define VT_FINDING_H

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

const char *vt_finding_kind_name(int kind);
int vt_framework_of(const struct vt_proc *p);
const char *vt_framework_name(int fw);
/* The largest bytes over a flag's devices. */
uint64_t vt_finding_bytes_max(const struct vt_finding *f);

/* A new zeroed finding of kind for process proc, at the end of out. */
struct vt_finding *vt_findings_new(struct vt_findings *out, int kind, uint32_t proc);

/* Add bytes on a device, keeping devices ascending. */
void vt_finding_add_device(struct vt_finding *f, uint8_t dev, uint64_t bytes);

int vt_finding_on_device(const struct vt_finding *f, uint8_t dev);

#endif
