/* Accounting per device (see accounting.h). */
#include "accounting.h"

#include <stdio.h>
#include <string.h>

#include "model_query.h"

/* Libraries that allocate device memory for themselves, by file name. */
static const char *const library_prefixes[] = {
    "libnccl", "libcublasLt", "libcublas", "libcudnn", "libcufft", "libnvinfer",
};

static const char *base_name(const char *path)
{
	const char *b = strrchr(path, '/');
	return b ? b + 1 : path;
}

/* The library module of ip in process p, or NULL. */
static const char *library_at(const struct vt_proc *p, uint64_t ip)
{
	for (uint32_t i = 0; i < p->nmodules; i++) {
		const struct vt_module *mod = &p->modules[i];
		if (mod->event != VT_MODULE_LOAD || ip < mod->lo || ip >= mod->hi)
			continue;
		const char *name = base_name(mod->path);
		for (size_t k = 0; k < sizeof library_prefixes / sizeof library_prefixes[0]; k++)
			if (!strncmp(name, library_prefixes[k], strlen(library_prefixes[k])))
				return name;
		return NULL;
	}
	return NULL;
}

/* The library on an allocation's native stack, innermost first, or NULL. */
static const char *library_of(const struct vt_model *m, const struct vt_alloc *a)
{
	const struct vt_model_stack *st = vt_model_stack(m, a->proc, a->stack_id);
	for (uint16_t i = 0; st && i < st->depth; i++) {
		const char *lib = library_at(&m->procs[a->proc], st->frames[i]);
		if (lib)
			return lib;
	}
	return NULL;
}

static void add_library(struct vt_device_account *d, const char *module, uint64_t bytes)
{
	uint32_t i = 0;
	while (i < d->nlibs && strcmp(d->libs[i].module, module))
		i++;
	if (i == d->nlibs) {
		if (d->nlibs == VT_ACCOUNT_LIBS)
			i = VT_ACCOUNT_LIBS - 1; /* the last slot takes the rest */
		else
			snprintf(d->libs[d->nlibs++].module, sizeof d->libs[0].module, "%s",
			         module);
	}
	d->libs[i].bytes += bytes;
	d->library_bytes += bytes;
}

static int on_live(const struct vt_model *m, uint32_t idx, const struct vt_alloc *a, void *ctx)
{
	(void)idx;
	struct vt_device_account *d = ctx;
	const char *lib = library_of(m, a);
	if (a->kind == VT_ALLOC_VMM)
		d->vmm_bytes += a->bytes;
	else if (lib)
		add_library(d, lib, a->bytes);
	else if (a->category == VT_CAT_POOL)
		d->pool_bytes += a->bytes;
	else
		d->framework_bytes += a->bytes;
	return 0;
}

/* The last reading of dev, from any process; 0 if none. */
static int last_reading(const struct vt_model *m, int dev, const struct vt_meminfo **out,
                        uint32_t *proc)
{
	*out = NULL;
	for (uint32_t pi = 0; pi < m->nprocs; pi++)
		for (uint32_t i = 0; i < m->procs[pi].nmeminfo; i++) {
			const struct vt_meminfo *mi = &m->procs[pi].meminfo[i];
			if (mi->device == dev && mi->total_bytes &&
			    (!*out || mi->t_ns >= (*out)->t_ns)) {
				*out = mi;
				*proc = pi;
			}
		}
	return *out != NULL;
}

static void sort_libs(struct vt_device_account *d)
{
	for (uint32_t i = 1; i < d->nlibs; i++)
		for (uint32_t k = i; k > 0 && d->libs[k].bytes > d->libs[k - 1].bytes; k--) {
			struct vt_account_lib t = d->libs[k];
			d->libs[k] = d->libs[k - 1];
			d->libs[k - 1] = t;
		}
}

static uint64_t used_of(const struct vt_meminfo *mi)
{
	return mi->total_bytes > mi->free_bytes ? mi->total_bytes - mi->free_bytes : 0;
}

/* NVML's view the shim read right after the reading mi of process proc. */
static const struct vt_nvml_reading *nvml_beside(const struct vt_model *m, uint32_t proc,
                                                 const struct vt_meminfo *mi)
{
	const struct vt_proc *p = &m->procs[proc];
	for (uint32_t i = 0; i < p->nnvml; i++)
		if (p->nvml[i].reading_seq == mi->seq && p->nvml[i].device == mi->device)
			return &p->nvml[i];
	return NULL;
}

/* Is mi a higher reading than best (of process best_proc)? Of two with the
 * same used bytes (a mark and the shim's peak reading at the same state),
 * the one with NVML's view beside it tells more. */
static int higher(const struct vt_model *m, const struct vt_meminfo *mi, uint32_t proc,
                  const struct vt_meminfo *best, uint32_t best_proc)
{
	if (!best || used_of(mi) > used_of(best))
		return 1;
	return used_of(mi) == used_of(best) && !nvml_beside(m, best_proc, best) &&
	       nvml_beside(m, proc, mi);
}

/* The reading of dev with the most used bytes, from any process. */
static void highest_reading(const struct vt_model *m, int dev, const struct vt_meminfo **out,
                            uint32_t *proc)
{
	*out = NULL;
	for (uint32_t pi = 0; pi < m->nprocs; pi++)
		for (uint32_t i = 0; i < m->procs[pi].nmeminfo; i++) {
			const struct vt_meminfo *mi = &m->procs[pi].meminfo[i];
			if (mi->device == dev && mi->total_bytes &&
			    higher(m, mi, pi, *out, *proc)) {
				*out = mi;
				*proc = pi;
			}
		}
}

/* The other processes NVML named take their bytes out of the unexplained. */
static void split_other_processes(struct vt_device_account *d)
{
	if (!d->nvml)
		return;
	uint64_t others = d->nvml->others_bytes;
	d->other_processes_bytes = others < d->unexplained_bytes ? others : d->unexplained_bytes;
	d->unexplained_bytes -= d->other_processes_bytes;
}

static void account_at(const struct vt_model *m, int dev, const struct vt_meminfo *mi,
                       uint32_t proc, struct vt_device_account *d)
{
	d->device = dev;
	d->t_ns = mi->t_ns;
	d->reason = mi->reason;
	d->total_bytes = mi->total_bytes;
	d->used_bytes = used_of(mi);
	struct vt_moment at = vt_moment_at_seq(proc, mi->seq, mi->t_ns);
	vt_model_for_each_live(m, &at, dev, on_live, d);
	sort_libs(d);
	uint64_t tracked = d->framework_bytes + d->pool_bytes + d->vmm_bytes + d->library_bytes;
	if (tracked <= d->used_bytes)
		d->unexplained_bytes = d->used_bytes - tracked;
	else
		d->overcount_bytes = tracked - d->used_bytes;
	d->nvml = nvml_beside(m, proc, mi);
	split_other_processes(d);
}

void vt_accounting_build(const struct vt_model *m, struct vt_accounting *out)
{
	memset(out, 0, sizeof *out);
	for (int dev = 0; dev < VT_MAX_DEVICES; dev++) {
		const struct vt_meminfo *mi, *high;
		uint32_t proc, high_proc = 0;
		if (!last_reading(m, dev, &mi, &proc))
			continue;
		account_at(m, dev, mi, proc, &out->dev[out->ndev++]);
		highest_reading(m, dev, &high, &high_proc);
		if (high && high != mi)
			account_at(m, dev, high, high_proc, &out->peak[out->npeak++]);
	}
}
