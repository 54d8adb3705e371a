/* growth_per_step (growth.h) on jobs built in memory: a buffer kept every
 * step is found with its rate, with step markers and without; a steady job,
 * a cache warmed in the first steps and a pool that grew then stopped are
 * not growth. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "model_history.h"

#include "classify.h"
#include "findings.h"
#include "growth.h"
#include "model_builder.h"

#define MIB (1024ull * 1024ull)
#define LAYERS 3

struct job {
	int steps, markers;
	uint64_t keep;     /* bytes kept every step (stack 8) */
	int keep_until;    /* keep only in steps < keep_until (0: every step) */
	int oom_at;        /* step whose keep fails out of memory (0: none) */
	uint64_t capacity; /* device bytes (default 16 GiB) */
};

static const uint64_t layer_bytes[LAYERS] = {4 * MIB, 2 * MIB, 1 * MIB};

static void make_weights(struct builder *b, uint64_t *t)
{
	b->stack = 1;
	for (int l = 0; l < LAYERS; l++)
		b_alloc(b, (*t)++, 0x100000000ull + (uint64_t)l * 0x10000000ull, layer_bytes[l], 0);
}

/* One training step: a batch, activations, gradients, optimizer state made
 * in the first step, everything transient freed. */
static void train_step(struct builder *b, uint64_t *t, int s)
{
	b->stack = 4;
	b_alloc(b, (*t)++, 0x200000000ull, 2 * MIB, 0);
	b_htod(b, (*t)++, 0x200000000ull, 2 * MIB, 0);
	b->stack = 5;
	for (int l = 0; l < LAYERS; l++)
		b_alloc(b, (*t)++, 0x300000000ull + (uint64_t)l * 0x10000000ull, 768 << 10, 0);
	b->stack = 6;
	for (int l = LAYERS - 1; l >= 0; l--) {
		b_alloc(b, (*t)++, 0x500000000ull + (uint64_t)l * 0x10000000ull, layer_bytes[l], 0);
		b_free(b, (*t)++, 0x300000000ull + (uint64_t)l * 0x10000000ull, 0);
	}
	b->stack = 3;
	for (int l = 0; s == 0 && l < LAYERS; l++)
		for (int k = 0; k < 2; k++)
			b_alloc(b, (*t)++, 0xa00000000ull + (uint64_t)(2 * l + k) * 0x10000000ull,
			        layer_bytes[l], 0);
	for (int l = 0; l < LAYERS; l++)
		b_free(b, (*t)++, 0x500000000ull + (uint64_t)l * 0x10000000ull, 0);
	b_free(b, (*t)++, 0x200000000ull, 0);
}

/* An allocation the driver refused: CUDA_ERROR_OUT_OF_MEMORY. */
static void failed_alloc(struct builder *b, uint64_t t, uint64_t bytes)
{
	struct vt_event ev;
	memset(&ev, 0, sizeof ev);
	ev.hdr = VT_HDR(VT_REC_ALLOC, sizeof ev);
	ev.stack_id = b->stack;
	ev.seq = ++b->seq;
	ev.t_ns = t;
	ev.bytes = bytes;
	ev.result = 2;
	ev.kind = VT_ALLOC_DEVICE;
	ev.api = API_ALLOC;
	vt_model_feed(b->m, b->proc, VT_REC_ALLOC, &ev, sizeof ev);
}

static struct vt_model *run_job(const struct job *j)
{
	struct vt_model *m = vt_model_new();
	struct builder b;
	b_begin(&b, m, 7, 0, 0);
	b_device(&b, 0, j->capacity ? j->capacity : 16ull << 30, "test GPU");
	uint64_t t = 1000;
	make_weights(&b, &t);
	for (int s = 0; s < j->steps; s++) {
		t += 1000;
		if (j->markers) {
			char text[24]; /* "step " and any int */
			snprintf(text, sizeof text, "step %d", s);
			b_mark(&b, t++, text);
		}
		train_step(&b, &t, s);
		b.stack = 8;
		if (j->oom_at && s == j->oom_at) {
			failed_alloc(&b, t++, j->keep);
			break; /* the job dies here, all it kept still live */
		}
		if (j->keep && (!j->keep_until || s < j->keep_until))
			b_alloc(&b, t++, 0x800000000ull + (uint64_t)s * 0x1000000ull, j->keep, 0);
	}
	vt_model_end_process(m, b.proc);
	vt_model_finish(m);
	vt_classify(m);
	return m;
}

/* The growth_per_step findings of m; the first in *first. */
static uint32_t growth_flags(const struct vt_model *m, struct vt_finding *first)
{
	struct vt_findings f;
	vt_findings_find(m, &f);
	uint32_t n = 0;
	for (uint32_t i = 0; i < f.n; i++)
		if (f.v[i].kind == VT_FINDING_GROWTH && !n++)
			*first = f.v[i];
	vt_findings_free(&f);
	return n;
}

static void check_found(const struct job *j)
{
	struct vt_model *m = run_job(j);
	struct vt_finding f;
	assert_int_equal(growth_flags(m, &f), 1);
	assert_int_equal(f.growth.bytes_per_step, j->keep);
	assert_int_equal(f.stack_id, 8);
	assert_int_equal(f.growth.device, 0);
	/* without markers a step ends at its last free (what is kept after it
	 * falls in the next step), and the first steps, whose level differs
	 * (optimizer state made), are found as one */
	if (j->markers)
		assert_int_equal(f.growth.first_step, 0);
	else
		assert_true(f.growth.first_step <= 2);
	assert_true(f.growth.steps_kept >= VT_GROWTH_MIN_STEPS);
	assert_int_equal(f.growth.steps_kept, f.growth.steps_counted);
	assert_true(f.growth.steps_to_fill > 0 && f.growth.steps_to_fill != UINT64_MAX);
	assert_true(strstr(f.advice, "Likely causes"));
	vt_model_free(m);
}

static void test_kept_buffer_with_markers(void **state)
{
	(void)state;
	struct job j = {.steps = 12, .markers = 1, .keep = 3 * MIB};
	check_found(&j);
	/* at a moment during the run: what had grown by then */
	struct vt_model *m = run_job(&j);
	struct vt_growths g;
	vt_growth_find(m, m->procs[0].step_t[9], &g);
	assert_int_equal(g.n, 1);
	assert_int_equal(g.v[0].steps_counted, 9 - VT_GROWTH_WARMUP_STEPS);
	vt_growths_free(&g);
	vt_growth_find(m, m->procs[0].step_t[4], &g);
	assert_int_equal(g.n, 0); /* too few steps yet */
	vt_growths_free(&g);
	vt_model_free(m);
}

static void test_kept_buffer_without_markers(void **state)
{
	(void)state;
	struct job j = {.steps = 12, .keep = 512 << 10};
	struct vt_model *m = run_job(&j);
	assert_int_equal(m->procs[0].step_source, VT_STEPS_PERIOD);
	vt_model_free(m);
	check_found(&j);
}

static void test_steady_job_has_none(void **state)
{
	(void)state;
	struct finding_case {
		struct job j;
	} cases[] = {{{.steps = 12, .markers = 1}}, {{.steps = 12}}};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		struct vt_model *m = run_job(&cases[i].j);
		struct vt_finding f;
		assert_int_equal(growth_flags(m, &f), 0);
		vt_model_free(m);
	}
}

/* A cache warmed in steps 1-3 (kept) and a pool that grew for 6 steps of
 * 12 and stopped: neither is growth. */
static void test_warming_cache_has_none(void **state)
{
	(void)state;
	struct job warm = {.steps = 12, .markers = 1, .keep = 2 * MIB, .keep_until = 3};
	struct vt_model *m = run_job(&warm);
	struct vt_finding f;
	assert_int_equal(growth_flags(m, &f), 0);
	vt_model_free(m);
	struct job stopped = {.steps = 12, .markers = 1, .keep = 2 * MIB, .keep_until = 7};
	m = run_job(&stopped);
	assert_int_equal(growth_flags(m, &f), 0);
	vt_model_free(m);
}

/* A job killed by its growth: found up to the failure, which filled the
 * device. */
static void test_growth_until_out_of_memory(void **state)
{
	(void)state;
	struct job j = {.steps = 40, .markers = 1, .keep = 4 * MIB, .oom_at = 10};
	struct vt_model *m = run_job(&j);
	struct vt_finding f;
	assert_int_equal(growth_flags(m, &f), 1);
	assert_int_equal(f.growth.bytes_per_step, 4 * MIB);
	assert_true(f.growth.out_of_memory);
	assert_int_equal(f.growth.steps_to_fill, 0);
	vt_model_free(m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_kept_buffer_with_markers),
	    cmocka_unit_test(test_kept_buffer_without_markers),
	    cmocka_unit_test(test_steady_job_has_none),
	    cmocka_unit_test(test_warming_cache_has_none),
	    cmocka_unit_test(test_growth_until_out_of_memory),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
