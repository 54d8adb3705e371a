/* Upload sites (see upload_sites.h). */
#include "upload_sites.h"

#include <stdlib.h>

#include "nomem.h" /* before <uthash.h>: its out-of-memory exit */
#include "model_hash.h"
#include <uthash.h>

#include "model_query.h"

struct site {
	uint32_t stack_id, tensors;
	uint64_t bytes;
	UT_hash_handle hh;
};

struct vt_upload_sites {
	struct site *by_stack;
};

static void note(struct vt_upload_sites *s, uint32_t stack_id, uint32_t n, uint64_t bytes)
{
	if (!stack_id)
		return;
	struct site *e;
	HASH_FIND(hh, s->by_stack, &stack_id, sizeof stack_id, e);
	if (!e) {
		e = calloc(1, sizeof *e);
		if (!e)
			vt_nomem();
		e->stack_id = stack_id;
		HASH_ADD(hh, s->by_stack, stack_id, sizeof e->stack_id, e);
	}
	e->tensors += n;
	e->bytes += bytes;
}

struct vt_upload_sites *
vt_upload_sites_count(const struct vt_model *m, uint32_t proc,
                      int (*counts)(const struct vt_model *, uint32_t, void *),
                      int (*pool)(const struct vt_model *, uint32_t, void *), void *arg)
{
	struct vt_upload_sites *s = calloc(1, sizeof *s);
	if (!s)
		vt_nomem();
	const struct vt_proc *p = &m->procs[proc];
	for (uint32_t i = p->alloc_begin; i < p->alloc_end; i++) {
		const struct vt_alloc *a = &m->allocs[i];
		if (!(a->flags & VT_AF_COPIES))
			continue;
		if (pool && pool(m, i, arg)) {
			uint32_t n = 0;
			const struct vt_copy_range *r =
			    a->flags & VT_AF_PARTIAL_COPIES ? vt_model_ranges(m, i, &n) : NULL;
			for (uint32_t k = 0; k < n; k++)
				if (r[k].copies == 1)
					note(s, r[k].stack_id, 1, r[k].bytes);
		} else if (counts(m, i, arg)) {
			note(s, vt_model_copies(m, a)->h2d_stack_id, 1, a->bytes);
		}
	}
	return s;
}

static const struct site *find(const struct vt_upload_sites *s, uint32_t stack_id)
{
	struct site *e = NULL;
	if (s && stack_id)
		HASH_FIND(hh, s->by_stack, &stack_id, sizeof stack_id, e);
	return e;
}

uint32_t vt_upload_site_tensors(const struct vt_upload_sites *s, uint32_t stack_id)
{
	const struct site *e = find(s, stack_id);
	return e ? e->tensors : 0;
}

int vt_upload_site_is_loader(const struct vt_upload_sites *s, uint32_t stack_id, uint64_t bytes)
{
	const struct site *e = find(s, stack_id);
	if (!e || e->tensors < VT_LOADER_TENSORS)
		return 0;
	uint64_t rest = e->bytes > bytes ? e->bytes - bytes : 0;
	return rest * 4 >= bytes;
}

int vt_upload_sites_model_loaded(const struct vt_upload_sites *s)
{
	const struct site *e, *tmp;
	HASH_ITER(hh, s->by_stack, e, tmp)
	{
		if (e->tensors >= VT_MODEL_TENSORS)
			return 1;
	}
	return 0;
}

void vt_upload_sites_free(struct vt_upload_sites *s)
{
	if (!s)
		return;
	struct site *e, *tmp;
	HASH_ITER(hh, s->by_stack, e, tmp)
	{
		HASH_DEL(s->by_stack, e);
		free(e);
	}
	free(s);
}
