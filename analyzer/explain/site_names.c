/* Site names (see site_names.h). */
#include "site_names.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model_internal.h"

#include "sites.h"
#include "nomem.h"
#include "model_query.h"

/* Frames inside these are the driver's, the runtime's or ours: skip them to
 * reach the caller (raw naming only; the sites part has its own rules). */
static int is_plumbing(const char *path)
{
	const char *base = strrchr(path, '/');
	base = base ? base + 1 : path;
	static const char *const libs[] = {"libcuda.so", "libcudart", "libvramtrace"};
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

/* A funnel: a frame more than half of the process's allocation stacks pass
 * through (the job's own allocator wrapper) says nothing about who asked.
 * Only with a few distinct stacks to compare. */
static int is_funnel(const struct vt_model *m, uint32_t proc, uint64_t ip)
{
	uint32_t n = m->procs[proc].alloc_stacks;
	return n >= 3 && vt_model_frame_fanin(m, proc, ip) >= n / 2 + 1;
}

/* "module+0xOFFSET" of the first frame past the plumbing and the funnels. */
static void raw_site(const struct vt_model *m, uint32_t proc, const struct vt_model_stack *s,
                     char *buf, size_t len)
{
	const struct vt_proc *p = &m->procs[proc];
	uint64_t ip = s->frames[0];
	const struct vt_module *mod = module_of(p, ip);
	for (uint16_t i = 0; i < s->depth; i++) {
		const struct vt_module *fm = module_of(p, s->frames[i]);
		if (fm && is_plumbing(fm->path))
			continue;
		ip = s->frames[i];
		mod = fm;
		if (i + 1 < s->depth && is_funnel(m, proc, ip))
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

/* Named entries of a stack, innermost first: each frame's inline chain,
 * deepest inline first, then the frame's own function. */
struct entry_walk {
	const struct vt_stack *s;
	uint32_t frame;          /* current frame */
	size_t entry;            /* current entry in it */
	struct vt_frame_names fn;
};

static int walk_load(struct vt_sites *sites, struct entry_walk *w)
{
	while (w->frame < w->s->depth) {
		vt_symbolize_frame(sites->sym, sites->store, &w->s->frames[w->frame], &w->fn);
		if (w->fn.status == VT_SYM_OK && w->entry < w->fn.n)
			return 1;
		w->frame++;
		w->entry = 0;
	}
	return 0;
}

static int walk_next(struct vt_sites *sites, struct entry_walk *w)
{
	w->entry++;
	if (w->entry < w->fn.n)
		return 1;
	w->frame++;
	w->entry = 0;
	return walk_load(sites, w);
}

static struct vt_site_funnel *funnel_entry(struct vt_model *m, int pop, const char *function,
                                           int add)
{
	struct vt_site_funnel *f;
	HASH_FIND_STR(m->site_funnels[pop], function, f);
	if (!f && add) {
		f = calloc(1, sizeof *f);
		if (!f || !(f->function = strdup(function)))
			vt_nomem();
		HASH_ADD_KEYPTR(hh, m->site_funnels[pop], f->function, strlen(f->function), f);
	}
	return f;
}

/* The first neighbour seen, or that there were several. */
static void note_neighbour(char **first, int *many, const char *function)
{
	if (!*first && !(*first = strdup(function)))
		vt_nomem();
	else if (strcmp(*first, function))
		*many = 1;
}

/* One stack into population pop (0 allocations, 1 copies). */
static void count_stack(struct vt_model *m, int pop, const struct vt_stack *s, uint32_t serial)
{
	struct vt_sites *sites = m->sites;
	struct entry_walk w = {.s = s};
	m->site_funnel_stacks[pop]++;
	struct vt_site_funnel *below = NULL;
	for (int ok = walk_load(sites, &w); ok; ok = walk_next(sites, &w)) {
		struct vt_site_funnel *f = funnel_entry(m, pop, w.fn.sym[w.entry].function, 1);
		if (f->last_stack != serial) {
			f->last_stack = serial;
			f->stacks++;
		}
		if (below) {
			note_neighbour(&f->inner, &f->many_inner, below->function);
			note_neighbour(&below->outer, &below->many_outer, f->function);
		}
		below = f;
	}
}

/* Count, over every stack that allocated (and, apart, every stack that
 * uploaded), the functions it passes through and what each one calls. */
static void count_funnels(struct vt_model *m)
{
	struct vt_sites *sites = m->sites;
	uint32_t serial = 0;
	m->site_funnels_ready = 1;
	for (uint32_t pi = 0; pi < m->nprocs; pi++) {
		struct vt_stack_entry *e, *tmp;
		HASH_ITER(hh, m->procs[pi].stacks, e, tmp) {
			if (!e->s.alloc_uses && !e->s.copy_uses)
				continue;
			uint32_t c = vt_stack_store_canonical(sites->store, pi, e->s.id);
			const struct vt_stack *s = vt_stack_store_stack(sites->store, c);
			if (!s)
				continue;
			if (e->s.alloc_uses)
				count_stack(m, 0, s, ++serial);
			if (e->s.copy_uses)
				count_stack(m, 1, s, ++serial);
		}
	}
}

/* A wrapper most allocations pass through, that always calls the same
 * function and is called from several: it names no site, its callers do.
 * Called from one place only, it is a path, not a wrapper: walking out
 * through such frames ended XLA's copies, all made on one worker thread,
 * at tsl::PThread::ThreadFn on an H200. */
static int is_funnel_fn(struct vt_model *m, int pop, const char *function)
{
	if (m->site_funnel_stacks[pop] < 3)
		return 0;
	struct vt_site_funnel *f = funnel_entry(m, pop, function, 0);
	return f && !f->many_inner && f->many_outer &&
	       f->stacks >= m->site_funnel_stacks[pop] / 2 + 1;
}

static void format_entry(struct vt_sites *sites, const struct entry_walk *w, char *buf, size_t len)
{
	const struct vt_symbol *s = &w->fn.sym[w->entry];
	if (s->file && s->line) {
		vt_format_symbol(s, buf, len);
		return;
	}
	const struct vt_frame *f = &w->s->frames[w->frame];
	const struct vt_module_info *mod = vt_stack_store_module(sites->store, f->module);
	snprintf(buf, len, "%s (%s)", s->function, mod ? vt_path_basename(mod->path) : "?");
}

/* The sites part names the entry its rules choose (past the driver, the
 * runtime, the shim, framework allocators); past the job's own wrappers we
 * name the first function out that is not one. */
static void symbolized_site(struct vt_model *m, uint32_t proc, uint32_t stack_id, char *buf,
                            size_t len)
{
	struct vt_sites *sites = m->sites;
	uint32_t canonical = vt_stack_store_canonical(sites->store, proc, stack_id);
	struct entry_walk w = {.s = vt_stack_store_stack(sites->store, canonical)};
	int i = vt_site_of_stack(sites->rules, sites->sym, sites->store, w.s, buf, len);
	if (i < 0)
		return;
	if (!m->site_funnels_ready)
		count_funnels(m);
	/* the entry the rules chose: first one of frame i they do not skip */
	w.frame = (uint32_t)i;
	if (!walk_load(sites, &w) || w.frame != (uint32_t)i)
		return;
	const struct vt_module_info *mod = vt_stack_store_module(sites->store, w.s->frames[i].module);
	while (w.entry + 1 < w.fn.n &&
	       vt_site_rules_skip(sites->rules, mod ? mod->path : NULL, &w.fn.sym[w.entry]))
		w.entry++;
	const struct vt_model_stack *own = vt_model_stack(m, proc, stack_id);
	int pop = own && !own->alloc_uses && own->copy_uses ? 1 : 0;
	int moved = 0;
	while (is_funnel_fn(m, pop, w.fn.sym[w.entry].function)) {
		if (!walk_next(sites, &w))
			break; /* not reached: the outermost entry has no caller, so no funnel */
		moved = 1;
	}
	if (moved)
		format_entry(sites, &w, buf, len);
}

static void name_site(const struct vt_model *m, uint32_t proc, uint32_t stack_id, char *buf,
                      size_t len)
{
	const struct vt_model_stack *s = vt_model_stack(m, proc, stack_id);
	if (m->sites && stack_id) {
		symbolized_site((struct vt_model *)m, proc, stack_id, buf, len);
		return;
	}
	if (!s || s->depth == 0)
		snprintf(buf, len, "(no stack)");
	else
		raw_site(m, proc, s, buf, len);
}

void vt_name_site(const struct vt_model *m, uint32_t proc, uint32_t stack_id, char *buf,
                    size_t len)
{
	if (proc >= m->nprocs || stack_id == 0) {
		snprintf(buf, len, "(no stack)");
		return;
	}
	/* names are cached on the model: symbolizing is the slow part */
	struct vt_model *mm = (struct vt_model *)m;
	struct vt_site_name probe, *e;
	memset(&probe, 0, sizeof probe);
	probe.key.proc = proc;
	probe.key.stack = stack_id;
	HASH_FIND(hh, mm->site_names, &probe.key, sizeof probe.key, e);
	if (!e) {
		char name[512];
		name_site(m, proc, stack_id, name, sizeof name);
		e = calloc(1, sizeof *e);
		if (!e || !(e->name = strdup(name)))
			vt_nomem();
		e->key = probe.key;
		HASH_ADD(hh, mm->site_names, key, sizeof e->key, e);
	}
	snprintf(buf, len, "%s", e->name);
}
