/* Python frames in the analyzer (see pystack.h). */
#define _GNU_SOURCE
#include "pystack.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nomem.h" /* before <uthash.h>: its out-of-memory exit */
#include <uthash.h>

/* text -> global id */
struct text_entry {
	uint32_t gid;
	char *text;
	UT_hash_handle hh;
};

/* (log, PYSTR id) -> global id */
struct id_key {
	uint32_t log_index;
	uint32_t id;
};
struct id_entry {
	struct id_key key;
	uint32_t gid;
	UT_hash_handle hh;
};

struct vt_pystrs {
	struct text_entry *by_text;
	struct id_entry *by_id;
	char **texts; /* texts[gid - 1] */
	size_t ntexts, cap;
};

struct vt_pystrs *vt_pystrs_new(void)
{
	return calloc(1, sizeof(struct vt_pystrs));
}

void vt_pystrs_free(struct vt_pystrs *ps)
{
	if (!ps)
		return;
	struct text_entry *t, *tt;
	HASH_ITER(hh, ps->by_text, t, tt)
	{
		HASH_DEL(ps->by_text, t);
		free(t);
	}
	struct id_entry *e, *et;
	HASH_ITER(hh, ps->by_id, e, et)
	{
		HASH_DEL(ps->by_id, e);
		free(e);
	}
	for (size_t i = 0; i < ps->ntexts; i++)
		free(ps->texts[i]);
	free(ps->texts);
	free(ps);
}

static uint32_t intern_text(struct vt_pystrs *ps, const char *text, size_t len)
{
	struct text_entry *t;
	HASH_FIND(hh, ps->by_text, text, len, t);
	if (t)
		return t->gid;
	if (ps->ntexts == ps->cap) {
		size_t cap = ps->cap ? 2 * ps->cap : 64;
		char **grown = realloc(ps->texts, cap * sizeof *grown);
		if (!grown)
			return 0;
		ps->texts = grown;
		ps->cap = cap;
	}
	t = calloc(1, sizeof *t);
	char *copy = malloc(len + 1);
	if (!t || !copy) {
		free(t);
		free(copy);
		return 0;
	}
	memcpy(copy, text, len);
	copy[len] = 0;
	ps->texts[ps->ntexts++] = copy;
	t->gid = (uint32_t)ps->ntexts;
	t->text = copy;
	HASH_ADD_KEYPTR(hh, ps->by_text, copy, len, t);
	return t->gid;
}

int vt_pystrs_add(struct vt_pystrs *ps, uint32_t log_index, const struct vt_record_view *rec,
                  char *err, size_t errlen)
{
	if (rec->type != VT_REC_PYSTR)
		return 0;
	const struct vt_pystr_rec *r = rec->data;
	if (rec->size < sizeof *r || r->len > rec->size - sizeof *r || r->id == 0) {
		if (errlen)
			snprintf(err, errlen, "malformed python string record at offset %llu",
			         (unsigned long long)rec->offset);
		return -1;
	}
	uint32_t gid = intern_text(ps, r->text, r->len);
	if (!gid)
		return 0;
	struct id_key key = {log_index, r->id};
	struct id_entry *e;
	HASH_FIND(hh, ps->by_id, &key, sizeof key, e);
	if (e)
		return 0; /* ids are unique per process: a repeat is the same string */
	e = calloc(1, sizeof *e);
	if (!e)
		return 0;
	e->key = key;
	e->gid = gid;
	HASH_ADD(hh, ps->by_id, key, sizeof key, e);
	return 0;
}

struct load_ctx {
	struct vt_pystrs *ps;
	uint32_t log_index;
	unsigned bad;
};

static int load_one(const struct vt_record_view *rec, void *p)
{
	struct load_ctx *ctx = p;
	char err[160];
	if (vt_pystrs_add(ctx->ps, ctx->log_index, rec, err, sizeof err)) {
		fprintf(stderr, "vramtrace: %s\n", err);
		ctx->bad++;
	}
	return 0;
}

unsigned vt_pystrs_load_trace(struct vt_pystrs *ps, const struct vt_trace *t)
{
	struct load_ctx ctx = {ps, 0, 0};
	for (size_t i = 0; i < t->nlogs; i++) {
		ctx.log_index = (uint32_t)i;
		/* a whole pass over the log for strings only Python jobs write:
		 * skipped when the index saw none (most traces) */
		if (vt_log_may_hold(t->logs[i], VT_REC_PYSTR))
			vt_log_for_each(t->logs[i], load_one, &ctx);
	}
	return ctx.bad;
}

uint32_t vt_pystrs_global(const struct vt_pystrs *ps, uint32_t log_index, uint32_t id)
{
	struct id_key key = {log_index, id};
	struct id_entry *e;
	HASH_FIND(hh, ps->by_id, &key, sizeof key, e);
	return e ? e->gid : 0;
}

const char *vt_pystrs_text(const struct vt_pystrs *ps, uint32_t gid)
{
	return gid && gid <= ps->ntexts ? ps->texts[gid - 1] : "?";
}

size_t vt_pystrs_count(const struct vt_pystrs *ps)
{
	return ps->ntexts;
}

/* ---- frames -------------------------------------------------------------- */

void vt_pystack_globalize(const struct vt_pystrs *ps, uint32_t log_index, const uint64_t *in,
                          unsigned n, uint64_t *out)
{
	for (unsigned i = 0; i < n; i++) {
		uint64_t w0 = in[2 * i];
		uint32_t file = vt_pystrs_global(ps, log_index, (uint32_t)(w0 >> 32));
		uint32_t func = vt_pystrs_global(ps, log_index, (uint32_t)w0);
		out[2 * i] = (uint64_t)file << 32 | func;
		out[2 * i + 1] = in[2 * i + 1];
	}
}

unsigned vt_pystack_decode(const struct vt_pystrs *ps, const uint64_t *words, unsigned n,
                           struct vt_pyframe *out)
{
	for (unsigned i = 0; i < n; i++) {
		uint64_t w0 = words[2 * i], w1 = words[2 * i + 1];
		out[i].file_gid = (uint32_t)(w0 >> 32);
		out[i].func_gid = (uint32_t)w0;
		out[i].file = vt_pystrs_text(ps, out[i].file_gid);
		out[i].func = vt_pystrs_text(ps, out[i].func_gid);
		out[i].line = (uint32_t)(w1 >> 32);
		out[i].eval_ord = (uint16_t)(w1 >> 16);
		out[i].native_index = (uint16_t)w1;
	}
	return n;
}

/* ---- merging ------------------------------------------------------------- */

static int has_prefix(const char *s, const char *prefix)
{
	return !strncmp(s, prefix, strlen(prefix));
}

uint8_t vt_pystack_native_role(const char *module_path, const char *function)
{
	if (function && has_prefix(function, "_PyEval_EvalFrameDefault"))
		return VT_NATIVE_EVAL; /* also the compiler's .cold part */
	if (module_path) {
		const char *slash = strrchr(module_path, '/');
		const char *base = slash ? slash + 1 : module_path;
		if (has_prefix(base, "libpython3") || has_prefix(base, "python3"))
			return VT_NATIVE_INTERPRETER;
	}
	return VT_NATIVE_PLAIN;
}

/* Native slot of Python frame i: its recorded eval frame, else the
 * eval_ord-th native frame with role EVAL, else past the end. */
static unsigned slot_of(const struct vt_pyframe *f, unsigned ndepth, const uint8_t *roles)
{
	if (f->native_index != VT_PYSTACK_NIDX_UNKNOWN && f->native_index < ndepth)
		return f->native_index;
	if (roles) {
		unsigned seen = 0;
		for (unsigned i = 0; i < ndepth; i++)
			if (roles[i] == VT_NATIVE_EVAL && seen++ == f->eval_ord)
				return i;
	}
	return ndepth;
}

unsigned vt_pystack_merge(const struct vt_pyframe *py, unsigned npy, unsigned ndepth,
                          const uint8_t *roles, unsigned flags, struct vt_merged_frame *out,
                          unsigned max)
{
	unsigned n = 0, p = 0, floor = 0;
	for (unsigned i = 0; i <= ndepth && n < max; i++) {
		int replaced = 0;
		/* Python frames that sit at native slot i (slots never go inward:
		 * a later frame is never placed inside an earlier one) */
		while (p < npy && n < max) {
			unsigned s = slot_of(&py[p], ndepth, roles);
			if (s < floor)
				s = floor;
			if (s != i)
				break;
			floor = s;
			out[n++] = (struct vt_merged_frame){1, p++};
			replaced = 1;
		}
		if (i == ndepth || replaced || n >= max)
			continue;
		if ((flags & VT_MERGE_HIDE_INTERPRETER) && roles &&
		    (roles[i] == VT_NATIVE_INTERPRETER || roles[i] == VT_NATIVE_EVAL))
			continue;
		out[n++] = (struct vt_merged_frame){0, i};
	}
	return n;
}

/* ---- sites --------------------------------------------------------------- */

static const char *const library_markers[] = {
    "/site-packages/", "/dist-packages/", "/lib/python3",
    "/lib64/python3",  "<frozen ",        "<built-in>",
};

static int env_list_matches(const char *var, const char *file)
{
	const char *list = getenv(var);
	if (!list || !*list)
		return 0;
	const char *p = list;
	while (*p) {
		const char *end = strchr(p, ':');
		size_t len = end ? (size_t)(end - p) : strlen(p);
		if (len && memmem(file, strlen(file), p, len))
			return 1;
		if (!end)
			break;
		p = end + 1;
	}
	return 0;
}

int vt_pystack_is_library_file(const char *file)
{
	if (!file)
		return 1;
	if (env_list_matches("VRAMTRACE_PY_USER_PATHS", file))
		return 0;
	if (env_list_matches("VRAMTRACE_PY_LIBRARY_PATHS", file))
		return 1;
	for (size_t i = 0; i < sizeof library_markers / sizeof library_markers[0]; i++)
		if (strstr(file, library_markers[i]))
			return 1;
	return 0;
}

int vt_pystack_site(const struct vt_pyframe *py, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		if (!vt_pystack_is_library_file(py[i].file))
			return (int)i;
	return n ? 0 : -1;
}

int vt_pystack_format(const struct vt_pyframe *f, char *buf, size_t len)
{
	if (f->line)
		return snprintf(buf, len, "%s (%s:%u)", f->func, f->file, f->line);
	return snprintf(buf, len, "%s (%s)", f->func, f->file);
}

int vt_pystack_site_text(const struct vt_pystrs *ps, const uint64_t *words, unsigned n, char *buf,
                         size_t len, unsigned *native_index)
{
	if (!n)
		return -1;
	struct vt_pyframe *frames = calloc(n, sizeof *frames);
	if (!frames)
		return -1;
	vt_pystack_decode(ps, words, n, frames);
	int site = vt_pystack_site(frames, n);
	if (site >= 0) {
		vt_pystack_format(&frames[site], buf, len);
		if (native_index)
			*native_index = frames[site].native_index;
	}
	free(frames);
	return site;
}

int vt_pystack_site_of_record(const struct vt_pystrs *ps, uint32_t log_index,
                              const uint64_t *py_words, unsigned py_depth, char *buf, size_t len)
{
	if (!py_depth)
		return -1;
	uint64_t *words = calloc(2 * (size_t)py_depth, sizeof *words);
	if (!words)
		return -1;
	vt_pystack_globalize(ps, log_index, py_words, py_depth, words);
	int site = vt_pystack_site_text(ps, words, py_depth, buf, len, NULL);
	free(words);
	return site;
}
