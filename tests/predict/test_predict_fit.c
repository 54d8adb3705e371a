/* The batch-size fit (predict.h) on hand-made run summaries, numbers known
 * exactly: the line through the ends, the allocator's rounding, pool
 * chunks, what makes a category uncertain, and the largest batch that fits. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "predict.h"

#define MIB (1ull << 20)

/* A run at batch with one device's bytes at the peak in cat, in n
 * allocations of equal size. */
static struct vt_predict_run *add(struct vt_predict *p, uint64_t batch)
{
	p->runs = realloc(p->runs, (size_t)(p->nruns + 1) * sizeof *p->runs);
	assert_non_null(p->runs);
	struct vt_predict_run *r = &p->runs[p->nruns++];
	memset(r, 0, sizeof *r);
	snprintf(r->dir, sizeof r->dir, "run%llu", (unsigned long long)batch);
	r->batch = batch;
	r->dev[0].used = 1;
	r->dev[0].total = 1024 * MIB;
	return r;
}

static void put(struct vt_predict_run *r, int cat, uint64_t bytes, uint32_t n)
{
	r->dev[0].cats[cat] = bytes;
	r->dev[0].count[cat] = n;
	r->dev[0].chunk[cat] = n ? bytes / n : 0;
}

/* weights constant, activations 4 allocations of 1 MiB per sample, two
 * prefetched batches of 256 KiB per sample: the trainer's shape */
static void trainer_like(struct vt_predict *p, uint64_t batch)
{
	struct vt_predict_run *r = add(p, batch);
	put(r, VT_CAT_WEIGHTS, 30 * MIB, 12);
	put(r, VT_CAT_ACTIVATIONS, 4 * batch * MIB, 4);
	put(r, VT_CAT_PREFETCH, batch * MIB / 2, 2);
}

static void test_line_through_two_runs(void **state)
{
	(void)state;
	struct vt_predict p;
	vt_predict_init(&p, 256);
	trainer_like(&p, 8); /* added out of order: the fit sorts */
	trainer_like(&p, 4);
	char err[256];
	assert_int_equal(vt_predict_fit(&p, err, sizeof err), 0);
	assert_int_equal(p.runs[0].batch, 4);
	assert_int_equal(p.cat[0][VT_CAT_WEIGHTS].shape, VT_SHAPE_CONSTANT);
	assert_int_equal(p.cat[0][VT_CAT_ACTIVATIONS].shape, VT_SHAPE_LINEAR);
	assert_true(p.cat[0][VT_CAT_ACTIVATIONS].b == 4.0 * MIB);
	assert_int_equal(p.cat[0][VT_CAT_DATASET].shape, VT_SHAPE_ABSENT);
	/* 30 MiB + 4.5 MiB a sample */
	assert_int_equal(vt_predict_peak(&p, 0, 32), 30 * MIB + 144 * MIB);
	assert_false(vt_predict_uncertain(&p, 0));
	/* (200 - 30) / 4.5 = 37.8 */
	uint64_t usable[VT_MAX_DEVICES] = {200 * MIB};
	assert_int_equal(vt_predict_largest_fit(&p, usable), 37);
	usable[0] = 20 * MIB;
	assert_int_equal(vt_predict_largest_fit(&p, usable), 0);
	vt_predict_free(&p);
}

static void test_rounding_per_allocation(void **state)
{
	(void)state;
	struct vt_predict p;
	vt_predict_init(&p, 512);
	/* 3 allocations of 1000 bytes a sample: at batch 5, 3 x 5000 bytes,
	 * each rounded up to 5120 */
	put(add(&p, 1), VT_CAT_ACTIVATIONS, 3000, 3);
	put(add(&p, 2), VT_CAT_ACTIVATIONS, 6000, 3);
	char err[256];
	assert_int_equal(vt_predict_fit(&p, err, sizeof err), 0);
	assert_int_equal(vt_predict_cat_bytes(&p, 0, VT_CAT_ACTIVATIONS, 5), 3 * 5120);
	/* a constant category keeps the rounding measured */
	vt_predict_free(&p);
	vt_predict_init(&p, 512);
	add(&p, 1);
	struct vt_predict_run *b = add(&p, 2), *a = &p.runs[0]; /* add() moves the runs */
	put(a, VT_CAT_WEIGHTS, 1000, 1);
	put(b, VT_CAT_WEIGHTS, 1000, 1);
	a->dev[0].slack[VT_CAT_WEIGHTS] = b->dev[0].slack[VT_CAT_WEIGHTS] = 24;
	assert_int_equal(vt_predict_fit(&p, err, sizeof err), 0);
	assert_int_equal(vt_predict_cat_bytes(&p, 0, VT_CAT_WEIGHTS, 100), 1024);
	uint64_t usable[VT_MAX_DEVICES] = {2048};
	assert_int_equal(vt_predict_largest_fit(&p, usable), VT_PREDICT_NO_LIMIT);
	vt_predict_free(&p);
}

static void test_pool_chunks(void **state)
{
	(void)state;
	struct vt_predict p;
	vt_predict_init(&p, 512);
	/* segments of 20 MiB: 2 at batch 8, 3 at batch 16 */
	add(&p, 8);
	struct vt_predict_run *b = add(&p, 16), *a = &p.runs[0]; /* add() moves the runs */
	put(a, VT_CAT_POOL, 40 * MIB, 2);
	put(b, VT_CAT_POOL, 60 * MIB, 3);
	char err[256];
	assert_int_equal(vt_predict_fit(&p, err, sizeof err), 0);
	const struct vt_predict_cat *c = &p.cat[0][VT_CAT_POOL];
	assert_int_equal(c->chunk, 20 * MIB);
	assert_true(c->uncertain & VT_DOUBT_POOL_CHUNKS);
	assert_true(c->uncertain & VT_DOUBT_COUNT);
	/* the line says 65 MiB at batch 18: four whole segments */
	assert_int_equal(vt_predict_cat_bytes(&p, 0, VT_CAT_POOL, 18) % (20 * MIB), 0);
	assert_true(vt_predict_cat_bytes(&p, 0, VT_CAT_POOL, 18) >= 65 * MIB);
	vt_predict_free(&p);
}

static void test_shrinking_is_held(void **state)
{
	(void)state;
	struct vt_predict p;
	vt_predict_init(&p, 256);
	put(add(&p, 8), VT_CAT_ACTIVATIONS, 16 * MIB, 4);
	put(add(&p, 16), VT_CAT_ACTIVATIONS, 8 * MIB, 4);
	char err[256];
	assert_int_equal(vt_predict_fit(&p, err, sizeof err), 0);
	assert_true(p.cat[0][VT_CAT_ACTIVATIONS].uncertain & VT_DOUBT_SHRINKS);
	assert_true(vt_predict_uncertain(&p, 1));
	/* never extrapolated down: the most seen */
	assert_int_equal(vt_predict_cat_bytes(&p, 0, VT_CAT_ACTIVATIONS, 64), 16 * MIB);
	vt_predict_free(&p);
}

static void test_extra_run_off_the_line(void **state)
{
	(void)state;
	struct vt_predict p;
	vt_predict_init(&p, 256);
	put(add(&p, 4), VT_CAT_ACTIVATIONS, 16 * MIB, 4);
	put(add(&p, 8), VT_CAT_ACTIVATIONS, 40 * MIB, 4); /* the line says 32 */
	put(add(&p, 16), VT_CAT_ACTIVATIONS, 64 * MIB, 4);
	char err[256];
	assert_int_equal(vt_predict_fit(&p, err, sizeof err), 0);
	const struct vt_predict_cat *c = &p.cat[0][VT_CAT_ACTIVATIONS];
	assert_true(c->uncertain & VT_DOUBT_OFF_LINE);
	assert_true(c->worst_miss > 0.19 && c->worst_miss < 0.21);
	vt_predict_free(&p);
	/* on the line: no doubt */
	vt_predict_init(&p, 256);
	put(add(&p, 4), VT_CAT_ACTIVATIONS, 16 * MIB, 4);
	put(add(&p, 8), VT_CAT_ACTIVATIONS, 32 * MIB, 4);
	put(add(&p, 16), VT_CAT_ACTIVATIONS, 64 * MIB, 4);
	assert_int_equal(vt_predict_fit(&p, err, sizeof err), 0);
	assert_false(vt_predict_uncertain(&p, 0));
	vt_predict_free(&p);
}

static void test_needs_two_batch_sizes(void **state)
{
	(void)state;
	struct vt_predict p;
	vt_predict_init(&p, 256);
	char err[256] = "";
	trainer_like(&p, 8);
	assert_int_equal(vt_predict_fit(&p, err, sizeof err), -1);
	trainer_like(&p, 8);
	assert_int_equal(vt_predict_fit(&p, err, sizeof err), -1);
	assert_non_null(strstr(err, "both at batch 8"));
	vt_predict_free(&p);
}

static void test_allocs_per_step(void **state)
{
	(void)state;
	struct vt_predict p;
	vt_predict_init(&p, 256);
	trainer_like(&p, 4);
	trainer_like(&p, 8);
	p.runs[0].allocs_per_step_x10 = 140;
	p.runs[1].allocs_per_step_x10 = 150;
	char err[256];
	assert_int_equal(vt_predict_fit(&p, err, sizeof err), 0);
	assert_true(p.allocs_per_step_differ);
	assert_true(vt_predict_uncertain(&p, 1));
	vt_predict_free(&p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_line_through_two_runs),
	    cmocka_unit_test(test_rounding_per_allocation),
	    cmocka_unit_test(test_pool_chunks),
	    cmocka_unit_test(test_shrinking_is_held),
	    cmocka_unit_test(test_extra_run_off_the_line),
	    cmocka_unit_test(test_needs_two_batch_sizes),
	    cmocka_unit_test(test_allocs_per_step),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
