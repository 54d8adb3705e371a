/* Stack frames as text (see export_stack.h). */
#include "export_stack.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "sites.h"

static const char *basename_of(const char *path)
{
	const char *b = strrchr(path, '/');
	return b ? b + 1 : path;
}

/* The latest module load covering ip (modules are recorded per process). */
static const struct vt_module *module_of(const struct vt_proc *p, uint64_t ip)
{
	const struct vt_module *best = NULL;
	for (uint32_t i = 0; i < p->nmodules; i++) {
		const struct vt_module *mod = &p->modules[i];
		if (mod->event == VT_MODULE_LOAD && ip >= mod->lo && ip < mod->hi)
			best = mod;
	}
	return best;
}

static int raw_frames(const struct vt_model *m, uint32_t proc, const struct vt_model_stack *s,
                      vt_frame_text_fn fn, void *ctx)
{
	char buf[512];
	for (uint16_t i = 0; i < s->depth; i++) {
		const struct vt_module *mod = module_of(&m->procs[proc], s->frames[i]);
		if (mod)
			snprintf(buf, sizeof buf, "%s+0x%" PRIx64,
			         *basename_of(mod->path) ? basename_of(mod->path) : "(main)",
			         s->frames[i] - mod->base);
		else
			snprintf(buf, sizeof buf, "0x%" PRIx64, s->frames[i]);
		fn(buf, ctx);
	}
	return s->depth;
}

static int symbolized_frames(const struct vt_model *m, uint32_t proc, uint32_t stack_id,
                             enum vt_frame_style style, vt_frame_text_fn fn, void *ctx)
{
	struct vt_sites *sites = m->sites;
	uint32_t c = vt_stack_store_canonical(sites->store, proc, stack_id);
	const struct vt_stack *s = vt_stack_store_stack(sites->store, c);
	if (!s)
		return -1;
	char buf[512];
	int n = 0;
	for (uint16_t i = 0; i < s->depth; i++) {
		struct vt_frame_names names;
		vt_symbolize_frame(sites->sym, sites->store, &s->frames[i], &names);
		if (names.status != VT_SYM_OK || names.n == 0) {
			vt_format_frame(&names, sites->store, &s->frames[i], buf, sizeof buf);
			fn(buf, ctx);
			n++;
			continue;
		}
		for (size_t e = 0; e < names.n; e++, n++) {
			if (style == VT_FRAME_LOCATION)
				vt_format_symbol(&names.sym[e], buf, sizeof buf);
			else
				snprintf(buf, sizeof buf, "%s", names.sym[e].function);
			fn(buf, ctx);
		}
	}
	return n;
}

int vt_export_stack_frames(const struct vt_model *m, uint32_t proc, uint32_t stack_id,
                           enum vt_frame_style style, vt_frame_text_fn fn, void *ctx)
{
	if (proc >= m->nprocs || stack_id == 0)
		return 0;
	if (m->sites) {
		int n = symbolized_frames(m, proc, stack_id, style, fn, ctx);
		if (n >= 0)
			return n;
	}
	const struct vt_model_stack *s = vt_model_stack(m, proc, stack_id);
	return s ? raw_frames(m, proc, s, fn, ctx) : 0;
}
