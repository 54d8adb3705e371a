/* Data derived on the device, by its rows (see classify_data_rows.h). */
#include "classify_data_rows.h"

#include "call_path.h"
#include "gcd.h"
#include "model_query.h"

/* The least odd part of an anchor's bytes: 1,875 is 10,000 images of
 * three channels; a weight's size rarely holds as much of it (a
 * 1,000-class head's odd part is 125, a 4,096-wide layer's 1). */
#define DATA_ROWS_ODD_MIN 1000
/* An upload under a MiB anchors nothing: one request's audio or a label
 * vector shares its decimal factors (16 kHz, 10,000 rows) with too many
 * activations. */
#define DATA_ROWS_ANCHOR_MIN (1ull << 20)
#define DATA_ROWS_MAX_ANCHORS 8
/* A derived copy is the data for a stretch of the run (an epoch's crop, the
 * normalised set): a tensor the size of N rows made and dropped in one
 * pass (the test set's logits, 10,000 x 10 halves, are 50,000 floats) is
 * not. Without steps, a stretch is an eighth of the run. */
#define DATA_ROWS_STEPS 2
#define DATA_ROWS_LIFE_DIV 8

static int lives_a_stretch(const struct ctx *c, const struct vt_alloc *a, const struct facts *f)
{
	if (c->p->nsteps >= 3)
		return f->died - f->born >= DATA_ROWS_STEPS;
	return lifetime(c->m, a) * DATA_ROWS_LIFE_DIV >= c->span_ns;
}

uint64_t vt_shared_odd_rows(uint64_t a, uint64_t b)
{
	uint64_t g = vt_gcd_u64(a, b); /* gcd(a, 0) is a: the odd part of a alone */
	while (g && !(g & 1))
		g >>= 1;
	return g;
}

/* An uploaded array the classifier is sure is data. */
static int anchor(const struct ctx *c, uint32_t i)
{
	const struct vt_alloc *a = &c->m->allocs[i];
	const struct facts *f = &c->f[i - c->p->alloc_begin];
	return f->device == c->dev && f->host_filled && !f->recurring &&
	       a->category == VT_CAT_DATASET && a->confidence >= 70 &&
	       a->bytes >= DATA_ROWS_ANCHOR_MIN;
}

/* Verdicts made from a size alone, which the data's rows outweigh. */
static int size_verdict(int reason)
{
	return reason == R_TWIN || reason == R_OPTIMIZER || reason == R_GRAD_BUFFER_EARLY ||
	       reason == R_EARLY_WEIGHTS || reason == R_LONG_UNKNOWN;
}

/* Whether the job made a tensor of this size in most steps: a weight
 * trained with a dense gradient, or its slot. A table with a row per
 * sample (a node embedding) shares the data's rows and is the model's. */
static int trained_size(const struct ctx *c, const struct facts *f)
{
	const struct key_count *k = c->keys[f->key];
	return c->p->nsteps >= 3 && k->steps_seen >= 3 && k->steps_seen * 2 >= c->p->nsteps;
}

static int derived(const struct ctx *c, uint32_t j, const uint32_t *anchors, uint32_t nanchors)
{
	const struct vt_alloc *a = &c->m->allocs[j];
	const struct facts *f = &c->f[j - c->p->alloc_begin];
	if (f->host_filled || f->recurring || a->category == VT_CAT_DATASET ||
	    !size_verdict(a->reason) || trained_size(c, f))
		return 0;
	if (!lives_a_stretch(c, a, f))
		return 0;
	/* all of the anchor's odd part: its rows (and its channels) */
	for (uint32_t k = 0; k < nanchors; k++) {
		const struct vt_alloc *src = &c->m->allocs[anchors[k]];
		uint64_t rows = vt_shared_odd_rows(vt_alloc_data_bytes(c->m, src), 0);
		if (src->t_alloc < a->t_alloc && rows >= DATA_ROWS_ODD_MIN &&
		    vt_shared_odd_rows(a->bytes, rows) == rows)
			return 1;
	}
	return 0;
}

/* Verdicts of weights that an upload's pattern or a size made: the call
 * path and the rows of the data uploaded right before outweigh them; a
 * frame's name does not yield. */
static int weight_by_pattern(const struct vt_alloc *a)
{
	return a->category == VT_CAT_WEIGHTS && a->reason != R_WEIGHTS_BY_NAME;
}

/* The allocation made on device dev right before j in its process, or
 * VT_NO_INDEX. */
static uint32_t previous_on_device(const struct ctx *c, uint32_t j, int dev)
{
	while (j-- > c->p->alloc_begin)
		if (c->m->allocs[j].device == dev)
			return j;
	return VT_NO_INDEX;
}

/* Whether upload j rides with the data uploaded right before it (on its
 * device, nothing made between): filled in one copy before the first
 * step, through the data's call path (vt_same_call_path: one stack, one
 * conversion, whatever the array; or the same functions from another line
 * for an array that shares the rows of `head`, the first array of the
 * run). */
static int rides_with(const struct ctx *c, uint32_t j, uint32_t prev, uint32_t head)
{
	const struct vt_alloc *a = &c->m->allocs[j], *p = &c->m->allocs[prev];
	uint64_t first_step = c->p->nsteps ? c->p->step_t[0] : VT_T_NEVER;
	if (!c->f[j - c->p->alloc_begin].host_filled || vt_model_copies(c->m, a)->h2d_copies != 1 ||
	    a->t_alloc >= first_step)
		return 0;
	return vt_same_call_path(c->m, c->proc, vt_alloc_fill_stack(c->m, p),
	                         vt_alloc_fill_stack(c->m, a),
	                         vt_alloc_data_bytes(c->m, &c->m->allocs[head]), a->bytes);
}

/* The arrays uploaded right after a confident dataset array, one after
 * the other, through its call path (a graph's node years, labels and edge
 * lists after its node features), that a size or an upload's pattern read
 * as weights: the data's, confidence 70, so that they join its finding or
 * make their own. */
static void uploaded_with_data(struct ctx *c, int dev, const uint32_t *ll, uint32_t n)
{
	for (uint32_t k = 0; k < n; k++) {
		uint32_t head = ll[k];
		if (c->m->allocs[head].device != dev || !anchor(c, head))
			continue;
		uint32_t prev = head;
		for (uint32_t i = k + 1; i < n; i++) {
			uint32_t j = ll[i];
			struct vt_alloc *a = &c->m->allocs[j];
			if (a->device != dev)
				continue;
			if (previous_on_device(c, j, dev) != prev || !weight_by_pattern(a) ||
			    !rides_with(c, j, prev, head))
				break;
			set_cat(a, &c->f[j - c->p->alloc_begin], VT_CAT_DATASET, 70,
			        R_UPLOADED_WITH_DATA);
			prev = j;
		}
	}
}

void vt_cls_data_rows(struct ctx *c, int dev, const uint32_t *ll, uint32_t n)
{
	uploaded_with_data(c, dev, ll, n);
	uint32_t anchors[DATA_ROWS_MAX_ANCHORS], nanchors = 0;
	for (uint32_t i = 0; i < n && nanchors < DATA_ROWS_MAX_ANCHORS; i++)
		if (c->m->allocs[ll[i]].device == dev && anchor(c, ll[i]))
			anchors[nanchors++] = ll[i];
	for (uint32_t i = 0; i < n && nanchors; i++)
		if (c->m->allocs[ll[i]].device == dev && derived(c, ll[i], anchors, nanchors))
			set_cat(&c->m->allocs[ll[i]], &c->f[ll[i] - c->p->alloc_begin],
			        VT_CAT_DATASET, 60, R_DATA_ROWS);
}

/* When the first of the device's weights decided by the first call came
 * from the host (the twin rules decided the trained ones before any upload
 * is weighed as data); VT_T_NEVER when none. One walk a device. */
static uint64_t first_weight_upload(struct ctx *c)
{
	if (c->first_weight_known)
		return c->first_weight_h2d;
	uint64_t first = VT_T_NEVER;
	for (uint32_t j = c->p->alloc_begin; j < c->p->alloc_end; j++) {
		const struct vt_alloc *a = &c->m->allocs[j];
		const struct facts *f = &c->f[j - c->p->alloc_begin];
		if (f->device != c->dev || !f->decided || a->category != VT_CAT_WEIGHTS)
			continue;
		uint64_t t = vt_model_copies(c->m, a)->t_first_h2d;
		if (t < first)
			first = t;
	}
	c->first_weight_known = 1;
	c->first_weight_h2d = first;
	return first;
}

/* Whether the device made a tensor holding `rows` (all of them) in most
 * steps, other than of `bytes` (the upload's own size). */
static int per_step_over_rows(const struct ctx *c, uint64_t rows, uint64_t bytes)
{
	for (uint32_t k = 0; k < c->nkeys; k++) {
		const struct key_count *key = c->keys[k];
		if ((int)key->key.device != c->dev || key->key.bytes == bytes ||
		    key->steps_seen < 3 || key->steps_seen * 2 < c->p->nsteps)
			continue;
		if (vt_shared_odd_rows(key->key.bytes, rows) == rows)
			return 1;
	}
	return 0;
}

int vt_cls_rows_every_step(struct ctx *c, uint32_t i)
{
	const struct vt_alloc *a = &c->m->allocs[i];
	uint64_t rows = vt_shared_odd_rows(vt_alloc_data_bytes(c->m, a), 0);
	if (!c->trains || c->p->nsteps < 3 || a->bytes < DATA_ROWS_ANCHOR_MIN ||
	    rows < DATA_ROWS_ODD_MIN)
		return 0;
	return vt_model_copies(c->m, a)->t_first_h2d < first_weight_upload(c) &&
	       per_step_over_rows(c, rows, a->bytes);
}
