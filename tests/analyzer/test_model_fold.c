/* The folding model (analyzer/model/model_fold.h): fed a training loop of
 * many steps, its classifying report must be the full model's, byte for
 * byte, and the records it holds must not grow with the steps. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <cmocka.h>

#include "classify.h"
#include "model_builder.h"
#include "model_fold.h"
#include "model_history.h"
#include "report.h"
#include "report_json.h"
#include "report_text.h"

#define LAYERS 6
#define MIB (1ull << 20)

/* Weights and two optimizer slots per layer, then `steps` steps that each
 * make an activation per layer (one of a weight's size: the place in the
 * step decides) and a gradient per weight, all freed within the step, and
 * an activation kept into the next step; with `batches`, each step first
 * uploads its batch into a buffer of its own, freed at the step's end. */
static void feed_job(struct vt_model *m, uint32_t steps, int batches)
{
	struct builder b;
	b_begin(&b, m, 4242, 0, 0);
	b_device(&b, 0, 80ull << 30, "Test GPU");
	uint64_t t = 1000, addr = 0x100000000ull, w[LAYERS];
	for (int l = 0; l < LAYERS; l++) {
		w[l] = (uint64_t)(1 + l % 3) * MIB;
		b.stack = 1;
		b_alloc(&b, t += 100, addr += 64 * MIB, w[l], 0);
		b.stack = 2;
		for (int k = 0; k < 2; k++)
			b_alloc(&b, t += 100, addr += 64 * MIB, w[l], 0);
	}
	uint64_t base = addr + 64 * MIB, carried = 0, spare = addr + 16 * MIB;
	for (uint32_t s = 0; s < steps; s++) {
		char text[32];
		snprintf(text, sizeof text, "step %u", s);
		b_mark(&b, t += 100, text);
		uint64_t a = base, act[LAYERS], grad[LAYERS], batch = base - 32 * MIB;
		if (batches) {
			b.stack = 6;
			b_alloc(&b, t += 100, batch, 8 * MIB, 0);
			b_htod(&b, t += 100, batch, 8 * MIB, 0);
		}
		b.stack = 3;
		for (int l = 0; l < LAYERS; l++)
			b_alloc(&b, t += 100, act[l] = a += 64 * MIB, 2 * MIB, 0);
		b.stack = 4;
		for (int l = LAYERS - 1; l >= 0; l--) {
			b_alloc(&b, t += 100, grad[l] = a += 64 * MIB, w[l], 0);
			b_free(&b, t += 100, act[l], 0);
		}
		for (int l = 0; l < LAYERS; l++)
			b_free(&b, t += 100, grad[l], 0);
		if (batches)
			b_free(&b, t += 100, batch, 0);
		if (carried)
			b_free(&b, t += 100, carried, 0);
		b.stack = 5;
		carried = spare + (s % 2 ? 0 : 24 * MIB); /* two addresses in turn */
		b_alloc(&b, t += 100, carried, 4 * MIB, 0);
	}
	vt_model_end_process(m, b.proc);
	vt_model_finish(m);
}

/* The report of m as JSON and text, one string (the caller frees it). */
static char *report_of(struct vt_model *m)
{
	struct vt_report r;
	struct vt_report_options opt = {.top = 10, .title = "job"};
	char err[256];
	assert_int_equal(vt_report_build(&r, m, &opt, err, sizeof err), 0);
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	assert_non_null(f);
	assert_int_equal(vt_report_write_json(&r, f), 0);
	assert_int_equal(vt_report_write_text(&r, f), 0);
	fclose(f);
	vt_report_free(&r);
	return text;
}

static void same_report(uint32_t steps, int batches, uint32_t *records)
{
	struct vt_model *full = vt_model_new(), *fold = vt_model_new_folding();
	feed_job(full, steps, batches);
	feed_job(fold, steps, batches);
	char *a = report_of(full), *b = report_of(fold);
	const char *why = NULL;
	assert_true(vt_fold_exact(fold, &why));
	assert_true(vt_fold_folded(fold, 0) > 0);
	assert_true(!batches || vt_fold_uploads(fold, 0) > 0);
	assert_string_equal(a, b);
	*records = vt_fold_records_high(fold);
	assert_true(*records < full->nallocs);
	free(a);
	free(b);
	vt_model_free(full);
	vt_model_free(fold);
}

/* Twenty steps or two thousand: the same records held at most, and the
 * same report as the full model's. */
static void bounded_and_same(int batches)
{
	uint32_t short_job, long_job;
	same_report(20, batches, &short_job);
	same_report(2000, batches, &long_job);
	assert_int_equal(short_job, long_job);
	/* the weights and slots, the steps kept whole and a step in flight */
	assert_true(long_job <=
	            3 * LAYERS + (VT_FOLD_KEEP_STEPS + 2) * (2 * LAYERS + 1 + (uint32_t)batches));
}

static void test_bounded_and_same(void **state)
{
	(void)state;
	bounded_and_same(0);
}

/* A fresh batch buffer uploaded every step (a record and its copy
 * statistics a step, were it kept whole): folded with its copies, so the
 * records held do not grow with the steps, and the report (its prefetch
 * finding too) is the full model's. */
static void test_uploads_bounded_and_same(void **state)
{
	(void)state;
	bounded_and_same(1);
}

/* Too few steps to fold: nothing folded, the full model's records. */
static void test_short_job_keeps_all(void **state)
{
	(void)state;
	struct vt_model *full = vt_model_new(), *fold = vt_model_new_folding();
	feed_job(full, VT_FOLD_KEEP_STEPS - 1, 1);
	feed_job(fold, VT_FOLD_KEEP_STEPS - 1, 1);
	assert_int_equal(vt_fold_folded(fold, 0), 0);
	assert_int_equal(fold->nallocs, full->nallocs);
	vt_model_free(full);
	vt_model_free(fold);
}

/* PyTorch's caching segments (2 MiB and 20 MiB among them) beside the
 * driver's stream-ordered pool, whose odd-sized per-step buffers are
 * folded. A folded group does not say which allocator made it, so the
 * folding model cannot tell the caching allocator's sizes as the full
 * model does: it says it is inexact (the report is made from the full
 * model) rather than answer differently. */
static void test_folded_odd_sizes_beside_caching_segments(void **state)
{
	(void)state;
	struct vt_model *m = vt_model_new_folding();
	struct builder b;
	b_begin(&b, m, 4243, 0, 0);
	b_device(&b, 0, 80ull << 30, "Test GPU");
	uint64_t t = 1000;
	b.stack = 1;
	b_alloc(&b, t += 100, 0x100000000ull, 2 * MIB, 0);
	b_alloc(&b, t += 100, 0x110000000ull, 20 * MIB, 0);
	b_alloc(&b, t += 100, 0x120000000ull, 64 * MIB, 0);
	for (uint32_t s = 0; s < 3 * VT_FOLD_KEEP_STEPS; s++) {
		char text[32];
		snprintf(text, sizeof text, "step %u", s);
		b_mark(&b, t += 100, text);
		b.stack = 2;
		b_event(&b, VT_REC_ALLOC, t += 100, 0x700000000ull, 3 * MIB + 4096, 0,
		        VT_ALLOC_ASYNC, 0, API_ALLOC_ASYNC);
		b_event(&b, VT_REC_FREE, t += 100, 0x700000000ull, 0, 0, VT_ALLOC_ASYNC, 0,
		        API_FREE_ASYNC);
	}
	vt_model_end_process(m, b.proc);
	vt_model_finish(m);
	assert_true(vt_fold_folded(m, 0) > 0);
	vt_classify(m);
	const char *why = NULL;
	assert_false(vt_fold_exact(m, &why));
	vt_model_free(m);
}

int main(void)
{
	unsetenv("VRAMTRACE_FOLD_KEEP_STEPS");
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_bounded_and_same),
	    cmocka_unit_test(test_uploads_bounded_and_same),
	    cmocka_unit_test(test_short_job_keeps_all),
	    cmocka_unit_test(test_folded_odd_sizes_beside_caching_segments),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
