/* One finding and the list of them (see finding.h). */
#include "finding.h"

#include <stdlib.h>
#include <string.h>

#include "nomem.h"

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

struct vt_finding *vt_findings_new(struct vt_findings *out, int kind, uint32_t proc)
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
void vt_finding_add_device(struct vt_finding *f, uint8_t dev, uint64_t bytes)
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

int vt_finding_on_device(const struct vt_finding *f, uint8_t dev)
{
	for (uint32_t k = 0; k < f->ndev; k++)
		if (f->devices[k] == dev)
			return 1;
	return 0;
}
