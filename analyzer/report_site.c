/* Raw site names (see report_site.h). */
#include "report_site.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

/* Frames inside these are the driver's, the runtime's or ours: skip them to
 * reach the caller. */
static int is_plumbing(const char *path)
{
	const char *base = strrchr(path, '/');
	base = base ? base + 1 : path;
	static const char *const libs[] = {"libcuda.so", "libcudart", "libvramtrace", "libcuda_sim"};
	for (size_t i = 0; i < sizeof libs / sizeof libs[0]; i++)
		if (!strncmp(base, libs[i], strlen(libs[i])))
			return 1;
	return 0;
}

static const struct vt_module *module_of(const struct vt_proc *p, uint64_t ip)
{
	const struct vt_module *best = NULL;
	for (uint32_t i = 0; i < p->nmodules; i++) {
		const struct vt_module *mod = &p->modules[i];
		if (mod->event == VT_MODULE_LOAD && ip >= mod->lo && ip < mod->hi)
			best = mod; /* the latest load covering ip */
	}
	return best;
}

void vt_report_site(const struct vt_model *m, uint32_t proc, uint32_t stack_id, char *buf,
                    size_t len)
{
	const struct vt_model_stack *s = vt_model_stack(m, proc, stack_id);
	if (!s || s->depth == 0) {
		snprintf(buf, len, "(no stack)");
		return;
	}
	const struct vt_proc *p = &m->procs[proc];
	uint64_t ip = s->frames[0];
	const struct vt_module *mod = module_of(p, ip);
	/* a funnel: a frame more than half of the allocation stacks pass
	 * through (the job's own allocator wrapper) says nothing about who
	 * asked; only with a few distinct stacks to compare */
	uint32_t funnel = p->alloc_stacks >= 3 ? p->alloc_stacks / 2 + 1 : UINT32_MAX;
	for (uint16_t i = 0; i < s->depth; i++) {
		const struct vt_module *fm = module_of(p, s->frames[i]);
		if (fm && is_plumbing(fm->path))
			continue;
		ip = s->frames[i];
		mod = fm;
		if (i + 1 < s->depth && vt_model_frame_fanin(m, proc, ip) >= funnel)
			continue;
		break;
	}
	if (!mod) {
		snprintf(buf, len, "0x%" PRIx64, ip);
		return;
	}
	const char *base = strrchr(mod->path, '/');
	base = base ? base + 1 : mod->path;
	snprintf(buf, len, "%s+0x%" PRIx64, *base ? base : "(main)", ip - mod->base);
}
