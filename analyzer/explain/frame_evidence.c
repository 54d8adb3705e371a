/* Frame evidence (see frame_evidence.h). */
#include "frame_evidence.h"

#include <stdlib.h>
#include <string.h>

#include "nomem.h" /* before <uthash.h>: its out-of-memory exit */
#include <uthash.h>

#include "pystack.h"
#include "sites.h"
#include "stack_store.h"
#include "symbolize.h"

enum rule_kind { PY_FUNC, PY_FILE, NATIVE };

static const struct frame_rule {
	uint8_t kind, category, strength;
	const char *text;
} rules[] = {
#define CONTEXT VT_FRAME_CONTEXT
#define MECHANISM VT_FRAME_MECHANISM
#define FRAME_RULE(kind, text, category, strength) {kind, category, strength, text},
#include "frame_rules.def"
#undef FRAME_RULE
#undef MECHANISM
#undef CONTEXT
};
#define NRULES (sizeof rules / sizeof rules[0])

static const struct vt_frame_hint no_hint = {VT_CAT_COUNT, VT_FRAME_NONE, NULL};

/* The first row of `kind` that the name matches, or NULL. */
static const struct frame_rule *match(enum rule_kind kind, const char *name)
{
	if (!name)
		return NULL;
	for (size_t i = 0; i < NRULES; i++) {
		const struct frame_rule *r = &rules[i];
		if (r->kind != kind)
			continue;
		if (kind == PY_FUNC ? !strcmp(name, r->text) : strstr(name, r->text) != NULL)
			return r;
	}
	return NULL;
}

/* Folds frames, innermost first: the first CONTEXT match ends the walk, the
 * first MECHANISM match is kept in case none comes. */
struct hint_walk {
	struct vt_frame_hint best;
	int done;
};

static void consider(struct hint_walk *w, const struct frame_rule *r)
{
	if (!r || w->done)
		return;
	if (r->strength == VT_FRAME_CONTEXT) {
		w->best = (struct vt_frame_hint){r->category, r->strength, r->text};
		w->done = 1;
	} else if (w->best.strength == VT_FRAME_NONE) {
		w->best = (struct vt_frame_hint){r->category, r->strength, r->text};
	}
}

/* A Python frame: its file's rule first (torch/optim/optimizer.py's
 * load_state_dict is the optimizer's), then its function's. */
static void consider_py(struct hint_walk *w, const char *func, const char *file)
{
	const struct frame_rule *r = match(PY_FILE, file);
	consider(w, r ? r : match(PY_FUNC, func));
}

struct vt_frame_hint vt_frame_hint_of_names(const char *const *py_funcs,
                                            const char *const *py_files, unsigned n_py,
                                            const char *const *native, unsigned n_native)
{
	struct hint_walk w = {no_hint, 0};
	for (unsigned i = 0; i < n_py; i++)
		consider_py(&w, py_funcs[i], py_files ? py_files[i] : NULL);
	for (unsigned i = 0; i < n_native; i++)
		consider(&w, match(NATIVE, native[i]));
	return w.best;
}

struct cached_hint {
	struct {
		uint32_t proc, stack;
	} key;
	struct vt_frame_hint hint;
	int trains; /* vt_frame_trains */
	UT_hash_handle hh;
};

/* Python functions a training loop runs under: an estimator's or Keras'
 * `fit` (what it allocates while its steps run: `train_function` calls a
 * compiled step, whose own frames Python never sees) and a step's entry
 * point. */
static const char *const training_funcs[] = {"fit", "train_step", "training_step", "train_function",
                                             "apply_gradients"};

static int training_func(const char *func)
{
	for (size_t i = 0; func && i < sizeof training_funcs / sizeof *training_funcs; i++)
		if (!strcmp(func, training_funcs[i]))
			return 1;
	return 0;
}

int vt_frame_names_train(const char *const *py_funcs, unsigned n_py)
{
	for (unsigned i = 0; i < n_py; i++)
		if (training_func(py_funcs[i]))
			return 1;
	return 0;
}

struct vt_frame_evidence {
	const struct vt_model *m;
	struct cached_hint *cache;
};

struct vt_frame_evidence *vt_frame_evidence_new(const struct vt_model *m)
{
	struct vt_frame_evidence *fe = calloc(1, sizeof *fe);
	if (!fe)
		vt_nomem();
	fe->m = m;
	return fe;
}

void vt_frame_evidence_free(struct vt_frame_evidence *fe)
{
	if (!fe)
		return;
	struct cached_hint *e, *tmp;
	HASH_ITER(hh, fe->cache, e, tmp)
	{
		HASH_DEL(fe->cache, e);
		free(e);
	}
	free(fe);
}

/* Python frames first: where a Python job's intent is written. All of
 * them are read for *trains (vt_frame_trains), the rules until the first
 * CONTEXT match. */
static void walk_python(struct hint_walk *w, const struct vt_stack_store *store,
                        const struct vt_stack *s, int *trains)
{
	enum { MAX_PY = 128 };
	struct vt_pyframe py[MAX_PY];
	unsigned n = s->py_depth < MAX_PY ? s->py_depth : MAX_PY;
	n = vt_pystack_decode(vt_stack_store_pystrs(store), s->py_words, n, py);
	for (unsigned i = 0; i < n; i++) {
		if (!w->done)
			consider_py(w, py[i].func, py[i].file);
		*trains |= training_func(py[i].func);
	}
}

static void walk_native(struct hint_walk *w, struct vt_sites *sites, const struct vt_stack *s)
{
	for (uint32_t i = 0; i < s->depth && !w->done; i++) {
		struct vt_frame_names fn;
		if (vt_symbolize_frame(sites->sym, sites->store, &s->frames[i], &fn) != VT_SYM_OK)
			continue;
		for (size_t e = 0; e < fn.n && !w->done; e++)
			consider(w, match(NATIVE, fn.sym[e].function));
	}
}

static struct vt_frame_hint hint_of_stack(struct vt_sites *sites, uint32_t proc, uint32_t stack_id,
                                          int *trains)
{
	uint32_t c = vt_stack_store_canonical(sites->store, proc, stack_id);
	const struct vt_stack *s = vt_stack_store_stack(sites->store, c);
	struct hint_walk w = {no_hint, 0};
	*trains = 0;
	if (!s)
		return no_hint;
	walk_python(&w, sites->store, s, trains);
	walk_native(&w, sites, s);
	return w.best;
}

static const struct cached_hint *cached(struct vt_frame_evidence *fe, uint32_t proc,
                                        uint32_t stack_id)
{
	struct cached_hint probe, *e;
	memset(&probe, 0, sizeof probe);
	probe.key.proc = proc;
	probe.key.stack = stack_id;
	HASH_FIND(hh, fe->cache, &probe.key, sizeof probe.key, e);
	if (!e) {
		e = calloc(1, sizeof *e);
		if (!e)
			vt_nomem();
		e->key = probe.key;
		e->hint = hint_of_stack(fe->m->sites, proc, stack_id, &e->trains);
		HASH_ADD(hh, fe->cache, key, sizeof e->key, e);
	}
	return e;
}

struct vt_frame_hint vt_frame_hint(struct vt_frame_evidence *fe, uint32_t proc, uint32_t stack_id)
{
	if (!fe || !fe->m->sites || stack_id == 0)
		return no_hint;
	return cached(fe, proc, stack_id)->hint;
}

int vt_frame_trains(struct vt_frame_evidence *fe, uint32_t proc, uint32_t stack_id)
{
	if (!fe || !fe->m->sites || stack_id == 0)
		return 0;
	const struct cached_hint *e = cached(fe, proc, stack_id);
	return e->trains ||
	       (e->hint.strength == VT_FRAME_CONTEXT &&
	        (e->hint.category == VT_CAT_OPTIMIZER || e->hint.category == VT_CAT_GRADIENTS));
}

int vt_frame_context_is(struct vt_frame_evidence *fe, uint32_t proc, uint32_t stack_id,
                        int category)
{
	struct vt_frame_hint h = vt_frame_hint(fe, proc, stack_id);
	return h.strength == VT_FRAME_CONTEXT && h.category == category;
}
