/* Folded-stack export (see export_folded.h). */
#include "export_folded.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "nomem.h" /* before <uthash.h>: its out-of-memory exit */
#include <uthash.h>

#include "export_stack.h"

struct folded_key {
	uint32_t device, proc, stack, category;
};

struct folded_entry {
	struct folded_key key;
	uint64_t bytes;
	UT_hash_handle hh;
};

/* Frames go outermost first, but arrive innermost first: keep them. */
struct frame_list {
	char **text;
	size_t n, cap;
};

static void keep_frame(const char *text, void *ctx)
{
	struct frame_list *l = ctx;
	if (l->n == l->cap) {
		l->cap = l->cap ? l->cap * 2 : 32;
		char **t = realloc(l->text, l->cap * sizeof *t);
		if (!t)
			vt_nomem();
		l->text = t;
	}
	if (!(l->text[l->n++] = strdup(text)))
		vt_nomem();
}

/* ';' separates frames and the last space the count: neither may appear
 * inside a frame, nor a line break. */
static void put_frame(FILE *out, const char *s)
{
	fputc(';', out);
	for (; *s; s++)
		fputc(*s == ';' ? ':' : (*s == '\n' || *s == '\r') ? ' ' : *s, out);
}

static void write_line(const struct vt_export *x, const struct folded_entry *e, FILE *out)
{
	struct frame_list l = {0};
	vt_export_stack_frames(x->m, e->key.proc, e->key.stack, VT_FRAME_FUNCTION, keep_frame, &l);
	fprintf(out, "GPU %u", e->key.device);
	if (l.n == 0)
		put_frame(out, "(no stack)");
	for (size_t i = l.n; i-- > 0;) {
		put_frame(out, l.text[i]);
		free(l.text[i]);
	}
	free(l.text);
	fprintf(out, ";[%s] %" PRIu64 "\n", vt_category_name((int)e->key.category), e->bytes);
}

static int entry_cmp(const void *pa, const void *pb)
{
	const struct folded_entry *a = *(struct folded_entry *const *)pa;
	const struct folded_entry *b = *(struct folded_entry *const *)pb;
	if (a->key.device != b->key.device)
		return a->key.device < b->key.device ? -1 : 1;
	if (a->bytes != b->bytes)
		return a->bytes > b->bytes ? -1 : 1;
	return memcmp(&a->key, &b->key, sizeof a->key);
}

int vt_export_folded(const struct vt_export *x, FILE *out)
{
	struct folded_entry *all = NULL, *e, *tmp;
	for (uint32_t i = 0; i < x->m->nallocs; i++) {
		const struct vt_alloc *a = &x->m->allocs[i];
		if (!vt_export_live(x, a))
			continue;
		struct folded_key k = {a->device, a->proc, a->stack_id,
		                       a->category < VT_CAT_COUNT ? a->category : VT_CAT_UNKNOWN};
		HASH_FIND(hh, all, &k, sizeof k, e);
		if (!e) {
			if (!(e = calloc(1, sizeof *e)))
				vt_nomem();
			e->key = k;
			HASH_ADD(hh, all, key, sizeof e->key, e);
		}
		e->bytes += a->bytes;
	}
	size_t n = HASH_COUNT(all), k = 0;
	struct folded_entry **sorted = malloc((n ? n : 1) * sizeof *sorted);
	if (!sorted)
		vt_nomem();
	HASH_ITER(hh, all, e, tmp) sorted[k++] = e;
	qsort(sorted, n, sizeof *sorted, entry_cmp);
	for (k = 0; k < n; k++)
		write_line(x, sorted[k], out);
	free(sorted);
	HASH_ITER(hh, all, e, tmp) {
		HASH_DEL(all, e);
		free(e);
	}
	return ferror(out) ? -1 : 0;
}
