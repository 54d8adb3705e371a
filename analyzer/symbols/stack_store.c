/* Canonical stacks folded across threads and processes (stack_store.h). */
#define _GNU_SOURCE
#include "stack_store.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nomem.h" /* before <uthash.h>: its out-of-memory exit */
#include <uthash.h>

#include "vramtrace/format.h"

struct module_entry {
	struct vt_module_info info;
	char *path;
	UT_hash_handle hh; /* key: build id bytes + NUL + path */
	char *key;
	unsigned keylen;
};

struct live_module { /* one mapping in one log, sorted by lo */
	uint64_t lo, hi, base;
	uint32_t module;
};

struct log_state {
	struct live_module *live;
	size_t n, cap;
};

struct id_entry { /* (log, stack id) -> canonical */
	uint64_t key;
	uint32_t canonical;
	UT_hash_handle hh;
};

struct canon_entry {
	struct vt_stack stack;
	struct vt_frame *frames;
	uint64_t *py;
	uint64_t *key;
	UT_hash_handle hh;
};

struct vt_stack_store {
	struct module_entry *modules_by_key;
	struct module_entry **modules; /* index - 1 */
	size_t nmodules, modules_cap;
	struct log_state *logs;
	size_t nlogs;
	struct id_entry *ids;
	struct canon_entry *canon_by_key;
	struct canon_entry **canon; /* id - 1 */
	size_t ncanon, canon_cap;
	size_t records;
	struct vt_pystrs *pystrs; /* Python names, trace-wide ids */
};

struct vt_stack_store *vt_stack_store_new(void)
{
	struct vt_stack_store *st = vt_xcalloc(1, sizeof(struct vt_stack_store));
	st->pystrs = vt_pystrs_new();
	if (!st->pystrs) {
		vt_nomem();
	}
	return st;
}

void vt_stack_store_free(struct vt_stack_store *st)
{
	if (!st)
		return;
	struct module_entry *m, *mt;
	HASH_ITER(hh, st->modules_by_key, m, mt) {
		HASH_DEL(st->modules_by_key, m);
		free(m->path);
		free(m->key);
		free(m);
	}
	free(st->modules);
	for (size_t i = 0; i < st->nlogs; i++)
		free(st->logs[i].live);
	free(st->logs);
	struct id_entry *e, *et;
	HASH_ITER(hh, st->ids, e, et) {
		HASH_DEL(st->ids, e);
		free(e);
	}
	struct canon_entry *c, *ct;
	HASH_ITER(hh, st->canon_by_key, c, ct) {
		HASH_DEL(st->canon_by_key, c);
		free(c->frames);
		free(c->py);
		free(c->key);
		free(c);
	}
	free(st->canon);
	vt_pystrs_free(st->pystrs);
	free(st);
}

static struct log_state *log_state(struct vt_stack_store *st, uint32_t log_index)
{
	if (log_index >= st->nlogs) {
		size_t n = (size_t)log_index + 1;
		struct log_state *l = realloc(st->logs, n * sizeof *l);
		if (!l) {
			vt_nomem();
		}
		memset(l + st->nlogs, 0, (n - st->nlogs) * sizeof *l);
		st->logs = l;
		st->nlogs = n;
	}
	return &st->logs[log_index];
}

/* ---- modules ------------------------------------------------------------ */

static uint32_t intern_module(struct vt_stack_store *st, const char *path, size_t path_len,
			      const uint8_t *bid, uint8_t bid_len)
{
	unsigned keylen = (unsigned)(bid_len + 1 + path_len);
	char *key = vt_xcalloc(1, keylen);
	memcpy(key, bid, bid_len);
	memcpy(key + bid_len + 1, path, path_len);
	struct module_entry *m = NULL;
	HASH_FIND(hh, st->modules_by_key, key, keylen, m);
	if (m) {
		free(key);
		return m->info.index;
	}
	m = vt_xcalloc(1, sizeof *m);
	m->key = key;
	m->keylen = keylen;
	m->path = vt_xcalloc(1, path_len + 1);
	memcpy(m->path, path, path_len);
	m->info.path = m->path;
	memcpy(m->info.build_id, bid, bid_len);
	m->info.build_id_len = bid_len;
	st->modules =
	    vt_xgrow(st->modules, &st->modules_cap, st->nmodules + 1, sizeof *st->modules);
	st->modules[st->nmodules++] = m;
	m->info.index = (uint32_t)st->nmodules;
	HASH_ADD_KEYPTR(hh, st->modules_by_key, m->key, m->keylen, m);
	return m->info.index;
}

/* First live mapping with hi > addr (binary search on the sorted list). */
static size_t live_search(const struct log_state *l, uint64_t addr)
{
	size_t lo = 0, hi = l->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (l->live[mid].hi <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static void live_remove_overlaps(struct log_state *l, uint64_t lo, uint64_t hi)
{
	size_t keep = 0;
	for (size_t i = 0; i < l->n; i++)
		if (l->live[i].hi <= lo || l->live[i].lo >= hi)
			l->live[keep++] = l->live[i];
	l->n = keep;
}

static void live_add(struct log_state *l, const struct live_module *m)
{
	/* a new mapping replaces whatever the log still thought was there */
	live_remove_overlaps(l, m->lo, m->hi);
	l->live = vt_xgrow(l->live, &l->cap, l->n + 1, sizeof *l->live);
	size_t at = live_search(l, m->lo);
	memmove(&l->live[at + 1], &l->live[at], (l->n - at) * sizeof *l->live);
	l->live[at] = *m;
	l->n++;
}

static int add_module(struct vt_stack_store *st, uint32_t log_index,
		      const struct vt_record_view *rec, char *err, size_t errlen)
{
	const struct vt_module_rec *m = rec->data;
	if (rec->size < sizeof *m || m->path_len > rec->size - sizeof *m ||
	    m->build_id_len > sizeof m->build_id || m->lo > m->hi || m->event > VT_MODULE_UNLOAD) {
		snprintf(err, errlen, "malformed module record at offset %llu",
			 (unsigned long long)rec->offset);
		return -1;
	}
	struct log_state *l = log_state(st, log_index);
	if (m->event == VT_MODULE_UNLOAD) {
		size_t keep = 0;
		for (size_t i = 0; i < l->n; i++)
			if (!(l->live[i].base == m->base && l->live[i].lo == m->lo))
				l->live[keep++] = l->live[i];
		l->n = keep;
		return 0;
	}
	if (m->hi == m->lo)
		return 0; /* nothing mapped */
	struct live_module lm = {m->lo, m->hi, m->base,
				 intern_module(st, m->path, m->path_len, m->build_id, m->build_id_len)};
	live_add(l, &lm);
	return 0;
}

/* ---- stacks ------------------------------------------------------------- */

static void rebase(const struct log_state *l, uint64_t addr, struct vt_frame *f)
{
	f->addr = addr;
	f->module = 0;
	f->offset = addr;
	if (!l)
		return;
	size_t i = live_search(l, addr);
	if (i < l->n && l->live[i].lo <= addr) {
		f->module = l->live[i].module;
		f->offset = addr - l->live[i].base;
	}
}

static struct canon_entry *intern_stack(struct vt_stack_store *st, uint32_t log_index,
					const struct vt_stack_rec *s, struct vt_frame *frames)
{
	/* key: depth word, space (log index if any frame is unknown, else all
	 * ones), (module, offset) pairs, Python words */
	size_t nkey = 2 + 2 * (size_t)s->depth + 2 * (size_t)s->py_depth;
	uint64_t *key = vt_xcalloc(nkey, sizeof *key);
	int unknown = 0;
	key[0] = s->depth | (uint64_t)s->py_depth << 16;
	for (unsigned i = 0; i < s->depth; i++) {
		key[2 + 2 * i] = frames[i].module;
		key[3 + 2 * i] = frames[i].offset;
		unknown |= frames[i].module == 0;
	}
	key[1] = unknown ? log_index : UINT64_MAX;
	/* Python words with trace-wide name ids: PYSTR ids are per
	 * process, so equal ids in two logs may name different texts */
	vt_pystack_globalize(st->pystrs, log_index, s->frames + s->depth, s->py_depth,
			     key + 2 + 2 * s->depth);

	struct canon_entry *c = NULL;
	unsigned keybytes = (unsigned)(nkey * sizeof *key);
	HASH_FIND(hh, st->canon_by_key, key, keybytes, c);
	if (c) {
		free(key);
		free(frames);
		return c;
	}
	c = vt_xcalloc(1, sizeof *c);
	c->key = key;
	c->frames = frames;
	c->py = vt_xcalloc(2 * (size_t)s->py_depth, sizeof *c->py);
	memcpy(c->py, key + 2 + 2 * s->depth, 2 * s->py_depth * sizeof *c->py);
	st->canon = vt_xgrow(st->canon, &st->canon_cap, st->ncanon + 1, sizeof *st->canon);
	st->canon[st->ncanon++] = c;
	c->stack = (struct vt_stack){(uint32_t)st->ncanon, s->depth, s->py_depth, c->frames,
				     c->py, log_index, 0};
	HASH_ADD_KEYPTR(hh, st->canon_by_key, c->key, keybytes, c);
	return c;
}

static int add_stack(struct vt_stack_store *st, uint32_t log_index,
		     const struct vt_record_view *rec, char *err, size_t errlen)
{
	const struct vt_stack_rec *s = rec->data;
	if (rec->size < sizeof *s || s->stack_id == 0 || s->depth > VT_MAX_FRAMES ||
	    (size_t)s->depth + 2 * (size_t)s->py_depth > (rec->size - sizeof *s) / 8) {
		snprintf(err, errlen, "malformed stack record at offset %llu",
			 (unsigned long long)rec->offset);
		return -1;
	}
	uint64_t idkey = (uint64_t)log_index << 32 | s->stack_id;
	struct id_entry *e = NULL;
	HASH_FIND(hh, st->ids, &idkey, sizeof idkey, e);
	if (e)
		return 0; /* ids are process-unique: a repeat is a duplicate */
	struct log_state *l = log_index < st->nlogs ? &st->logs[log_index] : NULL;
	struct vt_frame *frames = vt_xcalloc(s->depth, sizeof *frames);
	for (unsigned i = 0; i < s->depth; i++)
		rebase(l, s->frames[i], &frames[i]);
	struct canon_entry *c = intern_stack(st, log_index, s, frames);
	c->stack.records++;
	e = vt_xcalloc(1, sizeof *e);
	e->key = idkey;
	e->canonical = c->stack.id;
	HASH_ADD(hh, st->ids, key, sizeof e->key, e);
	st->records++;
	return 0;
}

int vt_stack_store_add(struct vt_stack_store *st, uint32_t log_index,
		       const struct vt_record_view *rec, char *err, size_t errlen)
{
	if (errlen)
		err[0] = '\0';
	if (rec->type == VT_REC_STACK)
		return add_stack(st, log_index, rec, err, errlen);
	if (rec->type == VT_REC_MODULE)
		return add_module(st, log_index, rec, err, errlen);
	if (rec->type == VT_REC_PYSTR)
		return vt_pystrs_add(st->pystrs, log_index, rec, err, errlen);
	return 0;
}

struct load_ctx {
	struct vt_stack_store *st;
	uint32_t log_index;
	const char *path;
	unsigned bad;
};

static int load_one(const struct vt_record_view *rec, void *p)
{
	struct load_ctx *ctx = p;
	char err[256];
	if (rec->type == VT_REC_PYSTR)
		return 0; /* read by the first pass */
	if (vt_stack_store_add(ctx->st, ctx->log_index, rec, err, sizeof err) != 0) {
		if (ctx->bad++ < 10)
			fprintf(stderr, "vramtrace: %s: %s (skipped)\n", ctx->path, err);
	}
	return 0;
}

unsigned vt_stack_store_load_trace(struct vt_stack_store *st, const struct vt_trace *t)
{
	/* Python names first: another thread's string record may come after a
	 * stack that uses it (the reader orders threads by their events). */
	unsigned bad = vt_stack_store_load_pystrs(st, t);
	for (size_t i = 0; i < t->nlogs; i++) {
		struct load_ctx ctx = {st, (uint32_t)i, vt_log_path(t->logs[i]), 0};
		vt_log_for_each(t->logs[i], load_one, &ctx);
		bad += ctx.bad;
	}
	return bad;
}

uint32_t vt_stack_store_canonical(const struct vt_stack_store *st, uint32_t log_index,
				  uint32_t stack_id)
{
	uint64_t idkey = (uint64_t)log_index << 32 | stack_id;
	struct id_entry *e = NULL;
	HASH_FIND(hh, st->ids, &idkey, sizeof idkey, e);
	return e ? e->canonical : 0;
}

const struct vt_stack *vt_stack_store_stack(const struct vt_stack_store *st, uint32_t canonical)
{
	if (canonical == 0 || canonical > st->ncanon)
		return NULL;
	return &st->canon[canonical - 1]->stack;
}

const struct vt_module_info *vt_stack_store_module(const struct vt_stack_store *st,
						   uint32_t module_index)
{
	if (module_index == 0 || module_index > st->nmodules)
		return NULL;
	return &st->modules[module_index - 1]->info;
}

size_t vt_stack_store_count(const struct vt_stack_store *st)
{
	return st->ncanon;
}

size_t vt_stack_store_module_count(const struct vt_stack_store *st)
{
	return st->nmodules;
}

size_t vt_stack_store_records(const struct vt_stack_store *st)
{
	return st->records;
}

const struct vt_pystrs *vt_stack_store_pystrs(const struct vt_stack_store *st)
{
	return st->pystrs;
}

unsigned vt_stack_store_load_pystrs(struct vt_stack_store *st, const struct vt_trace *t)
{
	return vt_pystrs_load_trace(st->pystrs, t);
}
