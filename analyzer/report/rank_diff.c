/* Two jobs' ranks matched and compared (rank_diff.h). */
#include "rank_diff.h"

#include <stdlib.h>
#include <string.h>

static uint64_t magnitude(int64_t v)
{
	return v < 0 ? (uint64_t)-v : (uint64_t)v;
}

uint64_t vt_rank_change_size(const struct vt_rank_change *c)
{
	uint64_t peak = magnitude(c->peak_delta);
	uint64_t cat = c->top_category >= 0 ? magnitude(c->cat_delta[c->top_category]) : 0;
	return peak > cat ? peak : cat;
}

static void compare(struct vt_rank_change *c)
{
	static const uint64_t none[VT_CAT_COUNT];
	const uint64_t *b = c->base ? c->base->cats : none, *n = c->new_ ? c->new_->cats : none;
	uint64_t pb = c->base ? c->base->peak_bytes : 0, pn = c->new_ ? c->new_->peak_bytes : 0;
	c->peak_delta = (int64_t)(pn - pb);
	c->top_category = -1;
	for (int k = 0; k < VT_CAT_COUNT; k++) {
		c->cat_delta[k] = (int64_t)(n[k] - b[k]);
		if (c->cat_delta[k] &&
		    (c->top_category < 0 ||
		     magnitude(c->cat_delta[k]) > magnitude(c->cat_delta[c->top_category])))
			c->top_category = k;
	}
}

/* The row of new_ that pairs with base's row i, or NULL. */
static const struct vt_rank_row *partner(const struct vt_job *base, const struct vt_job *new_,
                                         uint32_t i, int by_rank)
{
	if (by_rank)
		return vt_job_find_rank(new_, base->rows[i].rank);
	return i < new_->nrows ? &new_->rows[i] : NULL;
}

/* Is new_'s row i paired already (with some row of base)? */
static int paired(const struct vt_job *base, const struct vt_job *new_, uint32_t i, int by_rank)
{
	if (by_rank)
		return vt_job_find_rank(base, new_->rows[i].rank) != NULL;
	return i < base->nrows;
}

int vt_rank_diff_build(struct vt_rank_diff *d, const struct vt_job *base, const struct vt_job *new_)
{
	memset(d, 0, sizeof *d);
	d->most = -1;
	d->by_rank = base->all_ranked && new_->all_ranked;
	d->v = calloc(base->nrows + new_->nrows + 1, sizeof *d->v);
	if (!d->v)
		return -1;
	for (uint32_t i = 0; i < base->nrows; i++) {
		struct vt_rank_change *c = &d->v[d->n++];
		c->base = &base->rows[i];
		c->new_ = partner(base, new_, i, d->by_rank);
	}
	for (uint32_t i = 0; i < new_->nrows; i++)
		if (!paired(base, new_, i, d->by_rank))
			d->v[d->n++].new_ = &new_->rows[i];
	for (uint32_t i = 0; i < d->n; i++) {
		compare(&d->v[i]);
		uint64_t size = vt_rank_change_size(&d->v[i]);
		if (size && (d->most < 0 || size > vt_rank_change_size(&d->v[d->most])))
			d->most = (int32_t)i;
	}
	return 0;
}

void vt_rank_diff_free(struct vt_rank_diff *d)
{
	free(d->v);
	memset(d, 0, sizeof *d);
}
