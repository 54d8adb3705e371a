/* Stack frames as text (see export_stack.h). */
#include "export_stack.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pystack.h"
#include "sites.h"
#include "nomem.h"
#include "model_query.h"

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

/* One native frame: each inlined function its own entry, innermost first. */
static int native_entries(struct vt_sites *sites, const struct vt_frame *f,
                          enum vt_frame_style style, vt_frame_text_fn fn, void *ctx)
{
	char buf[512];
	struct vt_frame_names names;
	vt_symbolize_frame(sites->sym, sites->store, f, &names);
	if (names.status != VT_SYM_OK || names.n == 0) {
		vt_format_frame(&names, sites->store, f, buf, sizeof buf);
		fn(buf, ctx);
		return 1;
	}
	for (size_t e = 0; e < names.n; e++) {
		if (style == VT_FRAME_LOCATION)
			vt_format_symbol(&names.sym[e], buf, sizeof buf);
		else
			snprintf(buf, sizeof buf, "%s", names.sym[e].function);
		fn(buf, ctx);
	}
	return (int)names.n;
}

/* Python frames in place of the interpreter's eval-loop frames
 * they ran in (pystack.h): "function (file:line)", or "function"; the
 * interpreter's other frames (libpython, the python executable) left out. */
static int merged_entries(struct vt_sites *sites, const struct vt_stack *s,
                          enum vt_frame_style style, vt_frame_text_fn fn, void *ctx)
{
	struct vt_pyframe *py = calloc(s->py_depth, sizeof *py);
	uint8_t *roles = calloc(s->depth + 1u, 1);
	unsigned max = s->depth + s->py_depth;
	struct vt_merged_frame *order = calloc(max, sizeof *order);
	if (!py || !roles || !order)
		vt_nomem();
	vt_pystack_decode(vt_stack_store_pystrs(sites->store), s->py_words, s->py_depth, py);
	for (uint16_t i = 0; i < s->depth; i++) {
		const struct vt_module_info *mod = vt_stack_store_module(sites->store, s->frames[i].module);
		struct vt_frame_names names;
		vt_symbolize_frame(sites->sym, sites->store, &s->frames[i], &names);
		const char *func = names.status == VT_SYM_OK && names.n ? names.sym[names.n - 1].function
		                                                        : NULL;
		roles[i] = vt_pystack_native_role(mod ? mod->path : NULL, func);
	}
	/* the interpreter's own C frames between Python calls say nothing in a
	 * flame graph (py-spy hides them too); `report` full stacks keep them */
	unsigned k = vt_pystack_merge(py, s->py_depth, s->depth, roles, VT_MERGE_HIDE_INTERPRETER,
	                              order, max);
	int n = 0;
	char buf[1024];
	for (unsigned j = 0; j < k; j++) {
		if (!order[j].python) {
			n += native_entries(sites, &s->frames[order[j].index], style, fn, ctx);
			continue;
		}
		const struct vt_pyframe *f = &py[order[j].index];
		if (style == VT_FRAME_LOCATION)
			vt_pystack_format(f, buf, sizeof buf);
		else
			snprintf(buf, sizeof buf, "%s", f->func);
		fn(buf, ctx);
		n++;
	}
	free(py);
	free(roles);
	free(order);
	return n;
}

static int symbolized_frames(const struct vt_model *m, uint32_t proc, uint32_t stack_id,
                             enum vt_frame_style style, vt_frame_text_fn fn, void *ctx)
{
	struct vt_sites *sites = m->sites;
	uint32_t c = vt_stack_store_canonical(sites->store, proc, stack_id);
	const struct vt_stack *s = vt_stack_store_stack(sites->store, c);
	if (!s)
		return -1;
	if (s->py_depth)
		return merged_entries(sites, s, style, fn, ctx);
	int n = 0;
	for (uint16_t i = 0; i < s->depth; i++)
		n += native_entries(sites, &s->frames[i], style, fn, ctx);
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
