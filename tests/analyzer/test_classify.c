/* Steps, classification and flags on synthetic jobs built in memory: the
 * rules of classify.h one by one, without a driver or a shim. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "model_history.h"

#include "classify.h"
#include "classify_data_rows.h"
#include "findings.h"
#include "model_builder.h"
#include "steps.h"

#define KIB 1024ull
#define MIB (1024ull * 1024ull)
#define W_ADDR(l) (0x100000000ull + (uint64_t)(l)*0x10000000ull)
#define LABEL_ADDR(batch) ((batch) + 0x400000000ull) /* y beside batch x */
#define DAY_X(d) (0x1800000000ull + (uint64_t)(d)*0x4000000ull)
#define DAY_Y(d) (0x1c00000000ull + (uint64_t)(d)*0x4000000ull)

struct job {
	int layers, steps, markers, flat, host_weights, opt_early, dataset;
	uint64_t leak;          /* bytes kept more every step (metrics) */
	uint64_t act;           /* activation bytes (default 768 KiB) */
	int stop_mid_step;      /* the last step stops after its forward pass */
	int stop_before_upload; /* the last step stops between a batch's alloc and upload */
	uint64_t step_gap;      /* ns before each step but the first (default 1000) */
	uint64_t lazy_opt_ns;   /* ns each optimizer tensor made in the first step takes */
	int late_opt;           /* the first step makes the optimizer's state after it freed
	                           its batch and gradients (ZeroRedundancyOptimizer) */
	int outliver;           /* each step opens with a tensor of the activations' size that
	                           outlives its gradients (a GAN's generated batch) */
	int micro;         /* gradient accumulation: micro-batches a step, the gradients made by the
	                      first one's backward and kept through the others' */
	int frozen;        /* 8 MiB tensors uploaded by one site, no gradient (LoRA base) */
	int ring;          /* 4 MiB buffers made once, one refilled every step */
	int dataset_first; /* the 64 MiB upload comes before the weights' */
	int sliced;        /* each step copies its batch out of the 64 MiB upload */
	int labels;        /* each batch comes with a 256 KiB label array (x and y) */
	int dataset_y;     /* a 256 KiB y uploaded right after the dataset, another line */
	uint64_t upload_ns; /* how long the dataset's upload takes */
	int channel_first;  /* with bucket: NCCL's channel made before the weights */
	int bucket;         /* DDP: a flat buffer of all weights' size, made once, gets each step's
	                       gradients by device-to-device copies, then sends them on to a 4 MiB
	                       channel buffer made once too (NCCL's) */
	int eval_every;     /* an evaluation pass (3 batches, no gradients) after every n-th step */
	int table;          /* a 64 MiB table made on the device first, kept, no gradient of its
	                       size (an embedding updated by rows) */
	int ema;            /* the first step makes a copy of each weight after the optimizer's
	                       slots, kept (an EMA of the model) */
	int daily;          /* every n-th step opens with a new day of data: a 32 MiB x uploaded
	                       in upload_ns, then a 256 KiB y from another line, the day
	                       before's freed once they are bound (continual training) */
	int sparse_table;   /* a 48 MiB table uploaded first from a line of its own, no gradient
	                       of its size (updated by rows), its two optimizer slots made at
	                       the first step after the layers' */
	int final_eval;     /* after the last step, one evaluation: a 96 MiB tensor made and
	                       freed, then a 1 MiB one (under markers: inside the last step) */
	int ema_update;     /* after the gradients are freed, an EMA's update: two temporaries
	                       of each weight's size, made and freed at once */
	uint64_t wbytes[8];
};

#define BUCKET_ADDR 0xd00000000ull
#define ENGINE_BLOB 0x100000000ull
#define ENGINE_WORK 0x200000000ull
#define ENGINE_IN 0x300000000ull
#define ENGINE_OUT 0x400000000ull
#define OUTLIVER_ADDR 0x680000000ull
#define CHANNEL_ADDR 0xe00000000ull
#define TABLE_ADDR 0xe80000000ull
#define EMA_ADDR(l) (0x1000000000ull + (uint64_t)(l)*0x10000000ull)
#define EMA_TEMP(l, k) (0x1600000000ull + (uint64_t)(2 * (l) + (k)) * 0x10000000ull)
#define SPARSE_ADDR 0x1400000000ull
#define FINAL_EVAL 0x1500000000ull
#define SPARSE_SLOT(k) (0x1480000000ull + (uint64_t)(k)*0x4000000ull)

/* A model with one process (pid 9) to build a job in. */
static struct vt_model *begin_job(struct builder *b)
{
	struct vt_model *m = vt_model_new();
	b_begin(b, m, 9, 0, 0);
	return m;
}

/* The marker "step s" at t. */
static void mark_step(struct builder *b, uint64_t t, int s)
{
	char text[24]; /* "step " and any int */
	snprintf(text, sizeof text, "step %d", s);
	b_mark(b, t, text);
}

/* The job's process ends; the model is finished and classified. */
static struct vt_model *classified_job(struct builder *b)
{
	vt_model_end_process(b->m, b->proc);
	vt_model_finish(b->m);
	vt_classify(b->m);
	return b->m;
}

#define EVAL_BATCH 0xf00000000ull
#define EVAL_ACT 0xf80000000ull

/* One batch of an evaluation pass under no_grad: uploaded, two layers'
 * outputs made and freed as it goes, all freed before the next batch. */
static void eval_batch(struct builder *b, uint64_t *t)
{
	b->stack = 15;
	b_alloc(b, (*t)++, EVAL_BATCH, 4 * MIB, 0);
	b_htod(b, (*t)++, EVAL_BATCH, 4 * MIB, 0);
	b->stack = 16;
	b_alloc(b, (*t)++, EVAL_ACT, 3 * MIB, 0);
	b_alloc(b, (*t)++, EVAL_ACT + 0x10000000ull, 3 * MIB, 0);
	b_free(b, (*t)++, EVAL_ACT, 0);
	b_free(b, (*t)++, EVAL_ACT + 0x10000000ull, 0);
	b_free(b, (*t)++, EVAL_BATCH, 0);
	*t += 500;
}

/* The next day's data of a continual trainer (job.daily). */
static void new_day(struct builder *b, uint64_t *t, const struct job *j, uint64_t day)
{
	b->stack = 16;
	b_alloc(b, (*t)++, DAY_X(day), 32 * MIB, 0);
	b_htod(b, (*t)++, DAY_X(day), 32 * MIB, 0);
	*t += j->upload_ns;
	b->stack = 17;
	b_alloc(b, (*t)++, DAY_Y(day), 256 << 10, 0);
	b_htod(b, (*t)++, DAY_Y(day), 256 << 10, 0);
	if (day) {
		b_free(b, (*t)++, DAY_X(day - 1), 0);
		b_free(b, (*t)++, DAY_Y(day - 1), 0);
	}
}

/* A job like the simulated trainer, prefetch 2, Adam, all on device 0. */
static struct vt_model *run_job(const struct job *j)
{
	struct vt_model *m = vt_model_new();
	struct builder b;
	b_begin(&b, m, 7, 0, 0);
	b_device(&b, 0, 16ull << 30, "test GPU");
	uint64_t t = 1000;
	b.stack = 1;
	if (j->table)
		b_alloc(&b, t++, TABLE_ADDR, 64 * MIB, 0);
	if (j->sparse_table) {
		b.stack = 18;
		b_alloc(&b, t++, SPARSE_ADDR, 48 * MIB, 0);
		b_htod(&b, t++, SPARSE_ADDR, 48 * MIB, 0);
	}
	b.stack = 13;
	if (j->bucket && j->channel_first)
		b_alloc(&b, t++, CHANNEL_ADDR, 4 * MIB, 0);
	if (j->dataset && j->dataset_first) {
		b.stack = 2;
		b_alloc(&b, t++, 0x900000000ull, 64 * MIB, 0);
		b_htod(&b, t++, 0x900000000ull, 64 * MIB, 0);
	}
	for (int l = 0; l < j->layers; l++) {
		b.stack = 1;
		b_alloc(&b, t++, W_ADDR(l), j->wbytes[l], 0);
		if (j->host_weights)
			b_htod(&b, t++, W_ADDR(l), j->wbytes[l], 0);
	}
	if (j->dataset && !j->dataset_first) {
		b.stack = 2;
		b_alloc(&b, t++, 0x900000000ull, 64 * MIB, 0);
		b_htod(&b, t++, 0x900000000ull, 64 * MIB, 0);
		t += j->upload_ns;
	}
	if (j->dataset && j->dataset_y) {
		b.stack = 9;
		b_alloc(&b, t++, 0x980000000ull, 256 << 10, 0);
		b_htod(&b, t++, 0x980000000ull, 256 << 10, 0);
	}
	b.stack = 10;
	for (int k = 0; k < j->frozen; k++) {
		b_alloc(&b, t++, 0xb00000000ull + (uint64_t)k * 0x1000000ull, 8 * MIB, 0);
		b_htod(&b, t++, 0xb00000000ull + (uint64_t)k * 0x1000000ull, 8 * MIB, 0);
	}
	uint64_t wall = 0;
	for (int l = 0; l < j->layers; l++)
		wall += j->wbytes[l];
	b.stack = 13;
	if (j->bucket) {
		b_alloc(&b, t++, BUCKET_ADDR, wall, 0);
		if (!j->channel_first)
			b_alloc(&b, t++, CHANNEL_ADDR, 4 * MIB, 0);
	}
	b.stack = 11;
	for (int k = 0; k < j->ring; k++)
		b_alloc(&b, t++, 0xc00000000ull + (uint64_t)k * 0x1000000ull, 4 * MIB, 0);
	uint64_t opt = 0xa00000000ull;
	b.stack = 3;
	if (j->opt_early)
		for (int l = 0; l < j->layers; l++)
			for (int k = 0; k < 2; k++, opt += 0x10000000ull)
				b_alloc(&b, t++, opt, j->wbytes[l], 0);
	uint64_t batch[64];
	batch[0] = 0x200000000ull;
	b.stack = 4;
	b_alloc(&b, t++, batch[0], 2 * MIB, 0);
	b_htod(&b, t++, batch[0], 2 * MIB, 0);
	if (j->labels) {
		b_alloc(&b, t++, LABEL_ADDR(batch[0]), 256 << 10, 0);
		b_htod(&b, t++, LABEL_ADDR(batch[0]), 256 << 10, 0);
	}
	for (int s = 0; s < j->steps; s++) {
		t += s > 0 && j->step_gap ? j->step_gap : 1000;
		if (j->markers) {
			char text[24]; /* "step " and any int */
			snprintf(text, sizeof text, "step %d", s);
			b_mark(&b, t++, text);
		}
		if (j->daily && s % j->daily == 0)
			new_day(&b, &t, j, (uint64_t)(s / j->daily));
		if (j->ring) {
			b.stack = 12;
			b_htod(&b, t++, 0xc00000000ull + (uint64_t)(s % j->ring) * 0x1000000ull,
			       4 * MIB, 0);
		}
		b.stack = 7;
		if (j->stop_before_upload && s + 1 == j->steps) {
			b_alloc(&b, t++, 0x2f0000000ull, 2 * MIB, 0);
			break; /* killed before the batch's upload */
		}
		if (s + 1 < j->steps) {
			batch[s + 1] = 0x200000000ull + (uint64_t)((s + 1) % 2) * 0x1000000ull;
			b_alloc(&b, t++, batch[s + 1], 2 * MIB, 0);
			b_htod(&b, t++, batch[s + 1], 2 * MIB, 0);
			if (j->labels) {
				b_alloc(&b, t++, LABEL_ADDR(batch[s + 1]), 256 << 10, 0);
				b_htod(&b, t++, LABEL_ADDR(batch[s + 1]), 256 << 10, 0);
			}
		}
		b.stack = 14;
		if (j->outliver)
			b_alloc(&b, t++, OUTLIVER_ADDR, j->act, 0);
		b.stack = 5;
		for (int l = 0; l < j->layers; l++)
			b_alloc(&b, t++, 0x300000000ull + (uint64_t)l * 0x10000000ull,
			        j->act ? j->act : 768 << 10, 0);
		if (j->sliced)
			b_dtod(&b, t++, 0x300000000ull, 0x900000000ull + (uint64_t)s * 512 * 1024,
			       512 * 1024, 0);
		if (j->stop_mid_step && s + 1 == j->steps)
			break; /* killed: activations and batches stay live */
		uint64_t wsum = 0;
		for (int l = 0; l < j->layers; l++)
			wsum += j->wbytes[l];
		b.stack = 6;
		if (j->flat)
			b_alloc(&b, t++, 0x400000000ull, wsum, 0);
		for (int l = j->layers - 1; l >= 0; l--) {
			if (!j->flat)
				b_alloc(&b, t++, 0x500000000ull + (uint64_t)l * 0x10000000ull,
				        j->wbytes[l], 0);
			b_free(&b, t++, 0x300000000ull + (uint64_t)l * 0x10000000ull, 0);
		}
		for (int k = 1; k < j->micro; k++) {
			b.stack = 5;
			for (int l = 0; l < j->layers; l++)
				b_alloc(&b, t++, 0x600000000ull + (uint64_t)l * 0x10000000ull,
				        j->act ? j->act : 768 << 10, 0);
			for (int l = j->layers - 1; l >= 0; l--)
				b_free(&b, t++, 0x600000000ull + (uint64_t)l * 0x10000000ull, 0);
		}
		for (uint64_t l = 0, off = 0; j->bucket && l < (uint64_t)j->layers; l++) {
			b_dtod(&b, t++, BUCKET_ADDR + off, 0x500000000ull + l * 0x10000000ull,
			       j->wbytes[l], 0);
			off += j->wbytes[l];
		}
		if (j->bucket)
			b_dtod(&b, t++, CHANNEL_ADDR, BUCKET_ADDR, 4 * MIB, 0);
		b.stack = 3;
		if (s == 0 && !j->opt_early && !j->late_opt)
			for (int l = 0; l < j->layers; l++)
				for (int k = 0; k < 2; k++, opt += 0x10000000ull) {
					t += j->lazy_opt_ns;
					b_alloc(&b, t++, opt, j->wbytes[l], 0);
				}
		for (uint64_t k = 0; s == 0 && j->sparse_table && k < 2; k++)
			b_alloc(&b, t++, SPARSE_SLOT(k), 48 * MIB, 0);
		b.stack = 15;
		for (int l = 0; s == 0 && j->ema && l < j->layers; l++)
			b_alloc(&b, t++, EMA_ADDR(l), j->wbytes[l], 0);
		if (j->flat)
			b_free(&b, t++, 0x400000000ull, 0);
		for (int l = 0; !j->flat && l < j->layers; l++)
			b_free(&b, t++, 0x500000000ull + (uint64_t)l * 0x10000000ull, 0);
		b.stack = 16;
		for (uint64_t l = 0; j->ema_update && l < (uint64_t)j->layers; l++) {
			b_alloc(&b, t++, EMA_TEMP(l, 0), j->wbytes[l], 0);
			b_alloc(&b, t++, EMA_TEMP(l, 1), j->wbytes[l], 0);
			b_free(&b, t++, EMA_TEMP(l, 0), 0);
			b_free(&b, t++, EMA_TEMP(l, 1), 0);
		}
		b_free(&b, t++, batch[s], 0);
		if (j->labels)
			b_free(&b, t++, LABEL_ADDR(batch[s]), 0);
		if (j->outliver)
			b_free(&b, t++, OUTLIVER_ADDR, 0);
		b.stack = 3;
		for (int l = 0; s == 0 && j->late_opt && l < j->layers; l++)
			for (int k = 0; k < 2; k++, opt += 0x10000000ull)
				b_alloc(&b, t++, opt, j->wbytes[l], 0);
		b.stack = 8;
		if (j->leak)
			b_alloc(&b, t++, 0x800000000ull + (uint64_t)s * 0x1000000ull, j->leak, 0);
		for (int e = 0; j->eval_every && s % j->eval_every == j->eval_every - 1 && e < 3;
		     e++)
			eval_batch(&b, &t);
	}
	if (j->final_eval) {
		b.stack = 19;
		b_alloc(&b, t++, FINAL_EVAL, 96 * MIB, 0);
		b_free(&b, t++, FINAL_EVAL, 0);
		b_alloc(&b, t++, FINAL_EVAL + 0x10000000ull, MIB, 0);
		b_free(&b, t++, FINAL_EVAL + 0x10000000ull, 0);
	}
	/* no teardown: the job is killed while everything is live */
	vt_model_end_process(m, b.proc);
	vt_model_finish(m);
	vt_classify(m);
	return m;
}

static int category_of(const struct vt_model *m, uint64_t addr)
{
	for (uint32_t i = 0; i < m->nallocs; i++)
		if (m->allocs[i].addr == addr)
			return m->allocs[i].category;
	return -1;
}

static int count_cat(const struct vt_model *m, int cat)
{
	int n = 0;
	for (uint32_t i = 0; i < m->nallocs; i++)
		n += m->allocs[i].category == cat;
	return n;
}

/* a is a guess: category cat, not confident, alt its first alternative */
static void assert_guess(const struct vt_alloc *a, int cat, int alt_cat)
{
	assert_int_equal(a->category, cat);
	assert_true(a->confidence < VT_CONFIDENT);
	struct vt_alternative alt[2];
	assert_true(vt_alloc_alternatives(a, alt, 2) >= 1);
	assert_int_equal(alt[0].category, alt_cat);
}

static void check_roles(const struct vt_model *m, const struct job *j)
{
	for (int l = 0; l < j->layers; l++)
		assert_int_equal(category_of(m, W_ADDR(l)), VT_CAT_WEIGHTS);
	assert_int_equal(count_cat(m, VT_CAT_WEIGHTS), j->layers);
	assert_int_equal(count_cat(m, VT_CAT_OPTIMIZER), 2 * j->layers);
	assert_int_equal(count_cat(m, VT_CAT_PREFETCH), j->steps);
	assert_int_equal(count_cat(m, VT_CAT_ACTIVATIONS), j->layers * j->steps);
	assert_int_equal(count_cat(m, VT_CAT_GRADIENTS), j->flat ? j->steps : j->layers * j->steps);
	assert_int_equal(count_cat(m, VT_CAT_DATASET), j->dataset ? 1 : 0);
	assert_int_equal(count_cat(m, VT_CAT_UNKNOWN), 0);
}

static void test_markers_twins(void **state)
{
	(void)state;
	struct job j = {.layers = 3,
	                .steps = 8,
	                .markers = 1,
	                .dataset = 1,
	                .wbytes = {4 * MIB, 2 * MIB, 1 * MIB}};
	struct vt_model *m = run_job(&j);
	assert_int_equal(m->procs[0].step_source, VT_STEPS_MARKERS);
	assert_int_equal(m->procs[0].nsteps, 8);
	check_roles(m, &j);
	assert_int_equal(m->procs[0].trains, 1);
	struct vt_findings f;
	vt_findings_find(m, &f);
	int whole = 0, depth = 0;
	for (uint32_t i = 0; i < f.n; i++) {
		if (f.v[i].kind == VT_FINDING_WHOLE_DATASET) {
			whole++;
			assert_int_equal(f.v[i].ndev, 1);
			assert_int_equal(f.v[i].bytes[0], 64 * MIB);
			assert_int_equal(f.v[i].copies, 1);
		}
		if (f.v[i].kind == VT_FINDING_PREFETCH_DEPTH) {
			depth++;
			assert_int_equal(f.v[i].depth, 2);
		}
	}
	assert_int_equal(whole, 1);
	assert_int_equal(depth, 1);
	vt_findings_free(&f);
	vt_model_free(m);
}

/* No markers, and an evaluation pass of three batches after every fourth
 * step: each batch returns to the level the steps end at, so the valleys
 * repeat in periods of four steps and three batches. The steps are the
 * run of four, not the period: 20 steps, not 5, and the gradients and
 * optimizer state read as such. */
static void test_evaluation_passes_are_not_steps(void **state)
{
	(void)state;
	struct job j = {
	    .layers = 3, .steps = 20, .eval_every = 4, .wbytes = {4 * MIB, 2 * MIB, 1 * MIB}};
	struct vt_model *m = run_job(&j);
	assert_int_equal(m->procs[0].step_source, VT_STEPS_PERIOD);
	assert_in_range(m->procs[0].nsteps, 20, 21);
	assert_int_equal(count_cat(m, VT_CAT_GRADIENTS), j.layers * j.steps);
	assert_int_equal(count_cat(m, VT_CAT_OPTIMIZER), 2 * j.layers);
	for (int l = 0; l < j.layers; l++)
		assert_int_equal(category_of(m, W_ADDR(l)), VT_CAT_WEIGHTS);
	assert_int_equal(category_of(m, EVAL_ACT), VT_CAT_ACTIVATIONS);
	vt_model_free(m);
}

static const struct vt_alloc *alloc_at(const struct vt_model *m, uint64_t addr);
static uint64_t load_weights(struct builder *b, uint64_t t, const uint64_t *bytes, int n);

/* One training step of three layers of sizes w: their activations made,
 * then each layer's gradient made as its activation is freed, Adam's two
 * slots per layer made in the first step (`first`), the gradients freed.
 * The time after it. */
static uint64_t three_layer_step(struct builder *b, uint64_t t, const uint64_t *w, int first)
{
	b->stack = 5;
	for (int l = 0; l < 3; l++)
		b_alloc(b, t++, 0x300000000ull + (uint64_t)l * 0x10000000ull, 768 << 10, 0);
	b->stack = 6;
	for (int l = 2; l >= 0; l--) {
		b_alloc(b, t++, 0x500000000ull + (uint64_t)l * 0x10000000ull, w[l], 0);
		b_free(b, t++, 0x300000000ull + (uint64_t)l * 0x10000000ull, 0);
	}
	b->stack = 3;
	for (int l = 0; first && l < 3; l++)
		for (uint64_t k = 0; k < 2; k++)
			b_alloc(b, t++, 0xa00000000ull + (uint64_t)(2 * l + k) * 0x10000000ull,
			        w[l], 0);
	for (int l = 0; l < 3; l++)
		b_free(b, t++, 0x500000000ull + (uint64_t)l * 0x10000000ull, 0);
	return t;
}

/* Epochs of six steps over an array uploaded at each epoch's start (a
 * reshuffled training set) and freed at its end, then an evaluation pass
 * of three batches (no markers). The passes return to a level below the
 * steps' (the epoch's array is gone), three times an epoch: that level
 * recurs across the run, but only in clusters between the epochs; the
 * steps are the level all through it. */
static void test_evaluation_between_epochs_below_the_level(void **state)
{
	(void)state;
	struct builder b;
	struct vt_model *m = begin_job(&b);
	static const uint64_t w[3] = {4 * MIB, 2 * MIB, 1 * MIB};
	uint64_t t = load_weights(&b, 1, w, 3);
	for (int e = 0; e < 3; e++) {
		b.stack = 20;
		b_alloc(&b, t++, 0x900000000ull, 32 * MIB, 0);
		b_htod(&b, t++, 0x900000000ull, 32 * MIB, 0);
		for (int s = 0; s < 6; s++) {
			t += 1000;
			b.stack = 21;
			b_alloc(&b, t++, 0x200000000ull, 1536 << 10, 0);
			b_dtod(&b, t++, 0x200000000ull, 0x900000000ull + (uint64_t)s * 2 * MIB,
			       1536 << 10, 0);
			t = three_layer_step(&b, t, w, e == 0 && s == 0);
			b_free(&b, t++, 0x200000000ull, 0);
		}
		b_free(&b, t++, 0x900000000ull, 0);
		for (int k = 0; k < 3; k++)
			eval_batch(&b, &t);
	}
	vt_model_finish(m);
	vt_classify(m);
	assert_int_equal(m->procs[0].step_source, VT_STEPS_PERIOD);
	assert_in_range(m->procs[0].nsteps, 18, 19);
	assert_int_equal(count_cat(m, VT_CAT_GRADIENTS), 3 * 18);
	assert_int_equal(count_cat(m, VT_CAT_OPTIMIZER), 6);
	for (int l = 0; l < 3; l++)
		assert_int_equal(category_of(m, W_ADDR(l)), VT_CAT_WEIGHTS);
	vt_model_free(m);
}

/* The training set reshuffled and uploaded anew at each epoch's start,
 * through the helper that uploaded the weights (so its site looks like a
 * model loader), each batch a view into it (nothing copied on the device),
 * the epoch's array freed at its end. Uploaded while the job trains, long
 * after its weights, an array is data, and each upload its own finding. */
static void test_arrays_uploaded_while_training_are_data(void **state)
{
	(void)state;
	struct builder b;
	struct vt_model *m = begin_job(&b);
	static const uint64_t w[3] = {4 * MIB, 2 * MIB, 1 * MIB};
	uint64_t t = load_weights(&b, 1, w, 3);
	for (int e = 0; e < 3; e++) {
		uint64_t data = 0x900000000ull + (uint64_t)e * 0x10000000ull;
		b.stack = 1;
		b_alloc(&b, t++, data, 48 * MIB, 0);
		b_htod(&b, t++, data, 48 * MIB, 0);
		for (int s = 0; s < 6; s++) {
			t += 1000;
			t = three_layer_step(&b, t, w, e == 0 && s == 0);
		}
		b_free(&b, t++, data, 0);
	}
	vt_model_finish(m);
	vt_classify(m);
	for (int l = 0; l < 3; l++)
		assert_int_equal(category_of(m, W_ADDR(l)), VT_CAT_WEIGHTS);
	for (int e = 1; e < 3; e++) {
		const struct vt_alloc *a =
		    alloc_at(m, 0x900000000ull + (uint64_t)e * 0x10000000ull);
		assert_int_equal(a->category, VT_CAT_DATASET);
		assert_true(a->confidence >= VT_CONFIDENT);
	}
	struct vt_findings f;
	vt_findings_find(m, &f);
	int whole = 0;
	for (uint32_t i = 0; i < f.n; i++)
		if (f.v[i].kind == VT_FINDING_WHOLE_DATASET) {
			assert_int_equal(f.v[i].bytes[0], 48 * MIB);
			whole++;
		}
	assert_in_range(whole, 2, 3);
	vt_findings_free(&f);
	vt_model_free(m);
}

static int whole_dataset_flags(const struct vt_model *m);

/* A sampled graph's edge index uploaded for each step by one line of
 * code, a different size every step, each freed only after the next step
 * (the loader keeps it until its next batch comes): no per-step twin, and
 * each outlives a step, but a feeder sending a tensor every step is no
 * dataset uploaded while the job trains. */
static void test_batches_of_varying_sizes_are_no_dataset(void **state)
{
	(void)state;
	struct builder b;
	struct vt_model *m = begin_job(&b);
	static const uint64_t w[3] = {4 * MIB, 2 * MIB, 1 * MIB};
	uint64_t t = load_weights(&b, 1, w, 3);
	const uint64_t graph = 0x900000000ull;
	for (int s = 0; s < 24; s++) {
		t += 1000;
		b.stack = 30;
		uint64_t at = graph + (uint64_t)(s % 2) * 0x10000000ull;
		b_alloc(&b, t++, at, 2 * MIB + (uint64_t)s * 64 * KIB, 0);
		b_htod(&b, t++, at, 2 * MIB + (uint64_t)s * 64 * KIB, 0);
		t = three_layer_step(&b, t, w, s == 0);
		if (s > 0)
			b_free(&b, t++, graph + (uint64_t)((s - 1) % 2) * 0x10000000ull, 0);
	}
	classified_job(&b);
	assert_int_equal(count_cat(m, VT_CAT_DATASET), 0);
	assert_int_equal(category_of(m, graph), VT_CAT_PREFETCH);
	assert_int_equal(whole_dataset_flags(m), 0);
	vt_model_free(m);
}

/* A memory bank of features: made on the host, uploaded whole before
 * training, then rows of it overwritten every step by copies from a tensor
 * the step computed (`memory.index_copy_(0, y, updated)`). Data is read,
 * never written: state the job updates, no whole-dataset upload. */
static void test_bank_updated_every_step_is_no_dataset(void **state)
{
	(void)state;
	struct builder b;
	struct vt_model *m = begin_job(&b);
	static const uint64_t w[3] = {4 * MIB, 2 * MIB, 1 * MIB};
	uint64_t t = load_weights(&b, 1, w, 3);
	const uint64_t bank = 0x900000000ull, update = 0x980000000ull;
	b.stack = 31;
	b_alloc(&b, t++, bank, 48 * MIB, 0);
	b_htod(&b, t++, bank, 48 * MIB, 0);
	for (int s = 0; s < 12; s++) {
		t += 1000;
		t = three_layer_step(&b, t, w, s == 0);
		b.stack = 32;
		b_alloc(&b, t++, update, 256 * KIB, 0);
		b_dtod(&b, t++, bank + (uint64_t)s * 256 * KIB, update, 256 * KIB, 0);
		b_free(&b, t++, update, 0);
	}
	classified_job(&b);
	assert_guess(alloc_at(m, bank), VT_CAT_UNKNOWN, VT_CAT_DATASET);
	assert_int_equal(whole_dataset_flags(m), 0);
	vt_model_free(m);
}

/* An allocator that never gives memory back (Paddle's auto-growth, MXNet's
 * pooled storage): the first step's tensors take chunks from the driver,
 * sizes of no weight, kept to the end; every later step reuses them, so
 * the device allocates nothing more while the marked steps go on (each
 * step refills the batch chunk from the host). The chunks hold the
 * passes' tensors: activations, not confident; unknown the alternative. */
static void test_chunks_of_a_warmed_allocator_are_activations(void **state)
{
	(void)state;
	struct builder b;
	struct vt_model *m = begin_job(&b);
	static const uint64_t w[3] = {4 * MIB, 2 * MIB, 1 * MIB};
	uint64_t t = load_weights(&b, 1, w, 3);
	const uint64_t chunk = 0x900000000ull, batch = 0x980000000ull;
	for (int s = 0; s < 12; s++) {
		t += 1000;
		mark_step(&b, t++, s);
		b.stack = 40;
		if (s == 0) {
			b_alloc(&b, t++, batch, 3 * MIB, 0);
			for (uint64_t k = 0; k < 3; k++)
				b_alloc(&b, t++, chunk + k * 0x1000000ull, (24 + k) * MIB, 0);
		}
		b_htod(&b, t++, batch, 3 * MIB, 0);
		t += 500;
	}
	classified_job(&b);
	for (uint64_t k = 0; k < 3; k++)
		assert_guess(alloc_at(m, chunk + k * 0x1000000ull), VT_CAT_ACTIVATIONS,
		             VT_CAT_UNKNOWN);
	vt_model_free(m);
}

/* One event of a two-thread job, to be fed in time order. */
struct timed_event {
	uint64_t t, addr, bytes;
	int what; /* 0 alloc, 1 free, 2 upload, 3 step marker */
	uint8_t dev;
	uint32_t stack;
};

static int by_time(const void *x, const void *y)
{
	const struct timed_event *a = x, *b = y;
	return a->t < b->t ? -1 : a->t > b->t;
}

/* A thread's events of one device, made 10 ns apart. */
struct thread_events {
	struct timed_event *e;
	uint32_t n;
	uint64_t t, base;
	uint8_t dev;
};

static void event(struct thread_events *te, int what, uint64_t addr, uint64_t bytes, uint32_t stack)
{
	te->e[te->n++] = (struct timed_event){te->t, te->base + addr, bytes, what, te->dev, stack};
	te->t += 10;
}

/* One step of rank dev from time t: its batch (the tensor that opens
 * every step), three activations, three gradients, Adam's slots in the
 * first step; all but the slots freed. */
static uint32_t thread_step(struct timed_event *e, uint32_t n, uint8_t dev, int s, uint64_t t,
                            const uint64_t *w)
{
	struct thread_events te = {e, n, t, (uint64_t)dev << 36, dev};
	event(&te, 0, 0x200000000ull, 2 * MIB, 4);
	event(&te, 2, 0x200000000ull, 2 * MIB, 4);
	if (dev == 1 && s % 2 == 1) { /* a workspace now and then: one more valley */
		event(&te, 0, 0x700000000ull, 512 << 10, 7);
		event(&te, 1, 0x700000000ull, 0, 0);
	}
	for (uint64_t l = 0; l < 3; l++)
		event(&te, 0, 0x300000000ull + l * 0x10000000ull, 768 << 10, 5);
	for (uint64_t l = 3; l-- > 0;) {
		event(&te, 0, 0x500000000ull + l * 0x10000000ull, w[l], 6);
		event(&te, 1, 0x300000000ull + l * 0x10000000ull, 0, 0);
	}
	for (uint64_t k = 0; s == 0 && k < 6; k++)
		event(&te, 0, 0xa00000000ull + k * 0x10000000ull, w[k / 2], 3);
	for (uint64_t l = 0; l < 3; l++)
		event(&te, 1, 0x500000000ull + l * 0x10000000ull, 0, 0);
	event(&te, 1, 0x200000000ull, 0, 0);
	return te.n;
}

/* Data parallel on two devices from two threads, five steps, markers from
 * the first thread only, the second running 60 % of a step behind (the
 * markers cut its steps in the middle) with a workspace made and freed in
 * every other step (its live bytes return to their level more often than
 * it steps). The tensor that opens every marked
 * step on the first device (its batch) is made once a step on the second
 * too: there its steps start, and its gradients and slots read as such. */
static void test_unmarked_rank_steps_by_its_opener(void **state)
{
	(void)state;
	static const uint64_t w[3] = {4 * MIB, 2 * MIB, 1 * MIB};
	struct timed_event e[512];
	uint32_t n = 0;
	const uint64_t period = 100000;
	for (int s = 0; s < 5; s++) {
		uint64_t t0 = 1000000 + (uint64_t)s * period;
		e[n++] = (struct timed_event){t0, 0, 0, 3, 0, 0};
		n = thread_step(e, n, 0, s, t0 + 5, w);
		n = thread_step(e, n, 1, s, t0 + 75000, w);
	}
	qsort(e, n, sizeof *e, by_time);
	struct builder b;
	struct vt_model *m = begin_job(&b);
	for (uint8_t d = 0; d < 2; d++) {
		b.stack = 1;
		for (uint64_t l = 0; l < 3; l++) {
			uint64_t at = ((uint64_t)d << 36) + W_ADDR(l);
			b_alloc(&b, 100 + l, at, w[l], d);
			b_htod(&b, 110 + l, at, w[l], d);
		}
	}
	for (uint32_t i = 0, s = 0; i < n; i++) {
		char text[24]; /* "step " and any int */
		b.stack = e[i].stack;
		switch (e[i].what) {
		case 0:
			b_alloc(&b, e[i].t, e[i].addr, e[i].bytes, e[i].dev);
			break;
		case 1:
			b_free(&b, e[i].t, e[i].addr, e[i].dev);
			break;
		case 2:
			b_htod(&b, e[i].t, e[i].addr, e[i].bytes, e[i].dev);
			break;
		default:
			snprintf(text, sizeof text, "step %u", s++);
			b_mark(&b, e[i].t, text);
		}
	}
	vt_model_finish(m);
	vt_classify(m);
	assert_int_equal(m->procs[0].step_source, VT_STEPS_MARKERS);
	int grads[2] = {0, 0}, slots[2] = {0, 0};
	for (uint32_t i = 0; i < m->nallocs; i++) {
		const struct vt_alloc *a = &m->allocs[i];
		grads[a->device & 1] += a->category == VT_CAT_GRADIENTS;
		slots[a->device & 1] += a->category == VT_CAT_OPTIMIZER;
	}
	for (int d = 0; d < 2; d++) {
		assert_int_equal(grads[d], 3 * 5);
		assert_int_equal(slots[d], 6);
	}
	vt_model_free(m);
}

#define ROW_CHUNK(n) (0x700000000ull + (uint64_t)(n)*0x1000000ull)
#define SLOT_CHUNK(n) (0x780000000ull + (uint64_t)(n)*0x1000000ull)

/* A sparse embedding grown as new ids come (no markers): each step uploads
 * its ids, makes a 4 MiB row chunk for ids never seen before (3, then 0 to
 * 2 a step, at no fixed rate), runs a dense layer's forward and backward,
 * and the lazy optimizer makes two 4 MiB slot chunks for each new row
 * chunk after the gradients; the teardown frees everything. The live bytes
 * never come back to one level: the steps come from the transient tensors,
 * and the chunks, kept to the end, are no gradients: rows before the
 * step's gradients, slots after. */
static void test_grown_rows_and_slots(void **state)
{
	(void)state;
	static const int new_rows[12] = {3, 1, 0, 2, 1, 0, 2, 1, 1, 0, 2, 1};
	struct builder b;
	struct vt_model *m = begin_job(&b);
	b_device(&b, 0, 16ull << 30, "test GPU");
	uint64_t t = 1;
	b.stack = 1;
	b_alloc(&b, t++, W_ADDR(0), 2 * MIB, 0);
	b_htod(&b, t++, W_ADDR(0), 2 * MIB, 0);
	int rows = 0, slots = 0;
	for (int s = 0; s < 12; s++) {
		t += 1000;
		b.stack = 2;
		b_alloc(&b, t++, 0x200000000ull, 64 << 10, 0);
		b_htod(&b, t++, 0x200000000ull, 64 << 10, 0);
		b.stack = 3;
		for (int r = 0; r < new_rows[s]; r++)
			b_alloc(&b, t++, ROW_CHUNK(rows + r), 4 * MIB, 0);
		b.stack = 4;
		b_alloc(&b, t++, 0x300000000ull, 1 * MIB, 0);
		b.stack = 5;
		b_alloc(&b, t++, 0x500000000ull, 2 * MIB, 0);
		b_free(&b, t++, 0x300000000ull, 0);
		b.stack = 6;
		if (s == 0)
			for (int k = 0; k < 2; k++)
				b_alloc(&b, t++, 0xa00000000ull + (uint64_t)k * 0x1000000ull,
				        2 * MIB, 0);
		b.stack = 7;
		for (int r = 0; r < 2 * new_rows[s]; r++)
			b_alloc(&b, t++, SLOT_CHUNK(slots + r), 4 * MIB, 0);
		rows += new_rows[s];
		slots += 2 * new_rows[s];
		b_free(&b, t++, 0x500000000ull, 0);
		b_free(&b, t++, 0x200000000ull, 0);
	}
	t += 1000; /* the teardown */
	for (int r = 0; r < rows; r++)
		b_free(&b, t++, ROW_CHUNK(r), 0);
	for (int r = 0; r < slots; r++)
		b_free(&b, t++, SLOT_CHUNK(r), 0);
	vt_model_end_process(m, b.proc);
	vt_model_finish(m);
	vt_classify(m);
	assert_int_equal(m->procs[0].step_source, VT_STEPS_PERIOD);
	assert_in_range(m->procs[0].nsteps, 11, 12);
	for (int r = 0; r < rows; r++)
		assert_int_equal(category_of(m, ROW_CHUNK(r)), VT_CAT_WEIGHTS);
	for (int r = 0; r < slots; r++) {
		const struct vt_alloc *a = alloc_at(m, SLOT_CHUNK(r));
		assert_int_equal(a->category, VT_CAT_OPTIMIZER);
		assert_true(a->confidence < VT_CONFIDENT); /* where it is made, no more */
	}
	assert_int_equal(category_of(m, W_ADDR(0)), VT_CAT_WEIGHTS);
	vt_model_free(m);
}

/* Equal layers, weights from the host, flat bucket, no markers, optimizer
 * first: every adversarial case at once. */
static void test_adversarial(void **state)
{
	(void)state;
	struct job j = {.layers = 4,
	                .steps = 9,
	                .flat = 1,
	                .host_weights = 1,
	                .opt_early = 1,
	                .dataset = 1,
	                .wbytes = {2 * MIB, 2 * MIB, 2 * MIB, 2 * MIB}};
	struct vt_model *m = run_job(&j);
	assert_int_equal(m->procs[0].step_source, VT_STEPS_PERIOD);
	assert_int_equal(m->procs[0].nsteps, 9);
	check_roles(m, &j);
	assert_int_equal(category_of(m, 0x900000000ull), VT_CAT_DATASET);
	vt_model_free(m);
}

/* A two-tower retrieval model: an item table from numpy (nn.Embedding
 * .from_pretrained(sparse=True)) moved to the device beside a trained MLP;
 * its gradients are rows (no tensor of its size a step), and SparseAdam
 * makes exp_avg and exp_avg_sq of its size at the first step. The table
 * counts as a weight for the state made after it: the slots are optimizer
 * state, not unexplained bytes. */
static void test_state_of_a_table_updated_by_rows(void **state)
{
	(void)state;
	struct job j = {.layers = 3,
	                .steps = 8,
	                .markers = 1,
	                .host_weights = 1,
	                .sparse_table = 1,
	                .wbytes = {4 * MIB, 2 * MIB, 1 * MIB}};
	struct vt_model *m = run_job(&j);
	assert_int_equal(category_of(m, SPARSE_ADDR), VT_CAT_WEIGHTS);
	for (int k = 0; k < 2; k++)
		assert_int_equal(category_of(m, SPARSE_SLOT(k)), VT_CAT_OPTIMIZER);
	vt_model_free(m);
}

/* An evaluation after the last training step, under markers: the last
 * step runs to the end of the trace, so the evaluation's one-off tensors
 * fall in it. Made once and freed within that step, they are a pass's
 * scratch (activations, unsure), not state that matches no weight. */
static void test_evaluation_after_the_last_step_is_scratch(void **state)
{
	(void)state;
	struct job j = {.layers = 3,
	                .steps = 8,
	                .markers = 1,
	                .final_eval = 1,
	                .wbytes = {4 * MIB, 2 * MIB, 1 * MIB}};
	struct vt_model *m = run_job(&j);
	const struct vt_alloc *a = alloc_at(m, FINAL_EVAL);
	assert_guess(a, VT_CAT_ACTIVATIONS, VT_CAT_UNKNOWN);
	for (int l = 0; l < j.layers; l++)
		assert_int_equal(category_of(m, W_ADDR(l)), VT_CAT_WEIGHTS);
	assert_int_equal(count_cat(m, VT_CAT_OPTIMIZER), 2 * j.layers);
	/* the last tensor is freed after the job's last allocation: teardown,
	 * which frees state too, so not taken for scratch */
	assert_int_equal(count_cat(m, VT_CAT_ACTIVATIONS), j.layers * j.steps + 1);
	vt_model_free(m);
}

#define ENC_WEIGHT 0x2000000000ull
#define ENC_INPUT(k) (0x2100000000ull + (uint64_t)(k)*0x1000000ull)
#define ENC_HIDDEN(l) (0x2200000000ull + (uint64_t)(l)*0x10000000ull)
#define ENC_SCORES 0x2900000000ull
#define ENC_EMB(i) (0x3000000000ull + (uint64_t)(i)*0x200000ull)

/* An encoder over a corpus, no markers, nothing trains: 6 weights loaded
 * (sizes no sum of the batches' tensors makes),
 * then 30 batches, longest texts first. A batch frees the last one's three
 * inputs and uploads its own, passes its 6 layers (a hidden state each,
 * the next made before the last is freed, and a scores tensor made and
 * freed in the layer: a valley a layer, a hidden state above the batch's)
 * and keeps its 1 MiB of embeddings to the end. The batch-end level rises
 * 1 MiB a batch, far past one level's slack; shorter texts make each
 * batch's tensors smaller. */
static struct vt_model *encoder_job(void)
{
	struct builder b;
	begin_job(&b);
	uint64_t t = 1000;
	b.stack = 1;
	for (int w = 0; w < 6; w++) {
		uint64_t bytes = 3 * MIB + (uint64_t)w * 12 * KIB + 512;
		b_alloc(&b, t++, ENC_WEIGHT + (uint64_t)w * 0x10000000ull, bytes, 0);
		b_htod(&b, t++, ENC_WEIGHT + (uint64_t)w * 0x10000000ull, bytes, 0);
	}
	for (int i = 0; i < 30; i++) {
		uint64_t in = (uint64_t)(64 - i) * 4 * KIB, hid = (uint64_t)(64 - i) * 64 * KIB;
		b.stack = 2;
		for (int k = 0; i && k < 3; k++)
			b_free(&b, t += 10, ENC_INPUT(k), 0);
		for (int k = 0; k < 3; k++) {
			b_alloc(&b, t += 10, ENC_INPUT(k), in, 0);
			b_htod(&b, t += 10, ENC_INPUT(k), in, 0);
		}
		b.stack = 3;
		for (int l = 0; l < 6; l++) {
			b_alloc(&b, t += 10, ENC_HIDDEN(l % 2), hid, 0);
			b_alloc(&b, t += 10, ENC_SCORES, 4 * hid, 0);
			b_free(&b, t += 10, ENC_SCORES, 0);
			if (l)
				b_free(&b, t += 10, ENC_HIDDEN((l - 1) % 2), 0);
		}
		b.stack = 4;
		b_alloc(&b, t += 10, ENC_EMB(i), 1 * MIB + 256, 0);
		b_free(&b, t += 10, ENC_HIDDEN(1), 0);
		t += 200;
	}
	for (int i = 0; i < 30; i++)
		b_free(&b, t += 10, ENC_EMB(i), 0);
	for (int k = 0; k < 3; k++)
		b_free(&b, t += 10, ENC_INPUT(k), 0);
	return classified_job(&b);
}

/* The encoder's passes are its batches, not its layers (a pass a layer made
 * 1218 steps of an encoder with 190 batches, and its scores read as
 * gradients): each pass begins with the batch's uploads, which die within
 * it (a batch a step, not kept data), and nothing trains, so the
 * embeddings kept pass after pass are its results, not grown state. */
static void test_encoder_passes_are_batches_not_layers(void **state)
{
	(void)state;
	struct vt_model *m = encoder_job();
	assert_int_equal(m->procs[0].step_source, VT_STEPS_PERIOD);
	assert_in_range(m->procs[0].nsteps, 29, 31);
	assert_int_equal(m->procs[0].trains, 0);
	assert_int_equal(count_cat(m, VT_CAT_GRADIENTS), 0);
	assert_int_equal(count_cat(m, VT_CAT_WEIGHTS), 6);
	for (uint32_t i = 0; i < m->nallocs; i++) {
		const struct vt_alloc *a = &m->allocs[i];
		if (a->addr >= ENC_INPUT(0) && a->addr <= ENC_INPUT(2))
			assert_int_equal(a->category, VT_CAT_PREFETCH);
		if (a->addr >= ENC_EMB(0)) /* the kept results: no rows of a model that grows */
			assert_int_equal(a->category, VT_CAT_ACTIVATIONS);
	}
	vt_model_free(m);
}

/* Without markers, a level that creeps up a little every step still gives
 * the steps. */
static void test_period_with_drift(void **state)
{
	(void)state;
	struct job j = {.layers = 3,
	                .steps = 12,
	                .leak = 4096,
	                .dataset = 1,
	                .wbytes = {4 * MIB, 2 * MIB, 1 * MIB}};
	struct vt_model *m = run_job(&j);
	assert_int_equal(m->procs[0].step_source, VT_STEPS_PERIOD);
	assert_int_equal(m->procs[0].nsteps, 12);
	assert_int_equal(count_cat(m, VT_CAT_WEIGHTS), 3);
	assert_int_equal(count_cat(m, VT_CAT_OPTIMIZER), 6);
	assert_int_equal(count_cat(m, VT_CAT_GRADIENTS), 3 * 12);
	vt_model_free(m);
}

/* A job that keeps 3 MiB more every step (JAX on an H200: each step's loss
 * in its own 2 MiB VMM buffer): the step-end level never recurs, the
 * valleys' allocation pattern does. 0 steps were found before. */
static void test_period_with_steep_drift(void **state)
{
	(void)state;
	struct job j = {.layers = 3,
	                .steps = 12,
	                .leak = 3 * MIB,
	                .dataset = 1,
	                .wbytes = {4 * MIB, 2 * MIB, 1 * MIB}};
	struct vt_model *m = run_job(&j);
	assert_int_equal(m->procs[0].step_source, VT_STEPS_PERIOD);
	assert_in_range(m->procs[0].nsteps, 11, 13);
	assert_int_equal(count_cat(m, VT_CAT_WEIGHTS), 3);
	assert_int_equal(count_cat(m, VT_CAT_OPTIMIZER), 6);
	vt_model_free(m);
}

/* No markers, square layers, and the job sleeps between steps but starts
 * the first one right after its setup: the period is longer than the first
 * step, and a first step placed one period before its end took in the
 * setup, so the weights looked made during training (analyzer_matrix_extra's
 * square_no_markers failed ~1 run in 10 that way). */
static void test_first_step_shorter_than_period(void **state)
{
	(void)state;
	struct job j = {.layers = 4,
	                .steps = 10,
	                .act = 2 * MIB,
	                .step_gap = 50000,
	                .wbytes = {2 * MIB, 2 * MIB, 2 * MIB, 2 * MIB}};
	struct vt_model *m = run_job(&j);
	assert_int_equal(m->procs[0].step_source, VT_STEPS_PERIOD);
	check_roles(m, &j);
	vt_model_free(m);
}

/* No markers, square layers, and the first step makes Adam's state slowly
 * (zeroing each slot): it lasts many periods. Placed one period before its
 * end, it began after most of the slots, which then read as weights made
 * before training. */
static void test_first_step_longer_than_period(void **state)
{
	(void)state;
	struct job j = {.layers = 4,
	                .steps = 10,
	                .act = 2 * MIB,
	                .lazy_opt_ns = 20000,
	                .wbytes = {2 * MIB, 2 * MIB, 2 * MIB, 2 * MIB}};
	struct vt_model *m = run_job(&j);
	assert_int_equal(m->procs[0].step_source, VT_STEPS_PERIOD);
	check_roles(m, &j);
	vt_model_free(m);
}

/* No markers, and the first step makes the optimizer's state after its
 * batch and gradients are gone: its end is a valley below the level the
 * later steps return to. The step before the first found at the level has
 * the same transient tensors, kind for kind: it is a step too. */
static void test_step_with_lazy_state_below_the_level(void **state)
{
	(void)state;
	struct job j = {
	    .layers = 3, .steps = 8, .late_opt = 1, .wbytes = {4 * MIB, 2 * MIB, 1 * MIB}};
	struct vt_model *m = run_job(&j);
	assert_int_equal(m->procs[0].step_source, VT_STEPS_PERIOD);
	assert_int_equal(m->procs[0].nsteps, j.steps);
	check_roles(m, &j);
	vt_model_free(m);
}

/* Gradient accumulation over square layers: the gradients are made by the
 * first micro-batch's backward and kept through three more forward passes
 * of activations their size. The last of a size made in a step is an
 * activation; the gradients are the ones that outlive the rest. */
static void test_accumulated_gradients_outlive_activations(void **state)
{
	(void)state;
	struct job j = {.layers = 4,
	                .steps = 6,
	                .markers = 1,
	                .act = 2 * MIB,
	                .micro = 4,
	                .wbytes = {2 * MIB, 2 * MIB, 2 * MIB, 2 * MIB}};
	struct vt_model *m = run_job(&j);
	assert_int_equal(count_cat(m, VT_CAT_WEIGHTS), j.layers);
	assert_int_equal(count_cat(m, VT_CAT_OPTIMIZER), 2 * j.layers);
	assert_int_equal(count_cat(m, VT_CAT_GRADIENTS), j.layers * j.steps);
	assert_int_equal(count_cat(m, VT_CAT_ACTIVATIONS), j.layers * j.steps * j.micro);
	for (int l = 0; l < j.layers; l++)
		assert_int_equal(category_of(m, 0x500000000ull + (uint64_t)l * 0x10000000ull),
		                 VT_CAT_GRADIENTS);
	vt_model_free(m);
}

/* The step's first tensor of the weights' size outlives the gradients
 * (a GAN's fake batch, used by both models' updates): the forward pass
 * made it, so it is no gradient though it is freed last. */
static void test_first_tensor_of_a_step_is_no_gradient(void **state)
{
	(void)state;
	struct job j = {.layers = 4,
	                .steps = 6,
	                .markers = 1,
	                .act = 2 * MIB,
	                .outliver = 1,
	                .wbytes = {2 * MIB, 2 * MIB, 2 * MIB, 2 * MIB}};
	struct vt_model *m = run_job(&j);
	assert_int_equal(count_cat(m, VT_CAT_GRADIENTS), j.layers * j.steps);
	assert_int_equal(count_cat(m, VT_CAT_ACTIVATIONS), (j.layers + 1) * j.steps);
	assert_int_equal(category_of(m, OUTLIVER_ADDR), VT_CAT_ACTIVATIONS);
	vt_model_free(m);
}

/* An EMA's update after the optimizer's (diffusers' EMAModel.step): two
 * temporaries of each weight's size, freed after the gradients were. Freed
 * last, they are still no gradients: each dies as soon as it is made, after
 * every gradient of the step died. */
static void test_update_temporaries_freed_after_the_gradients(void **state)
{
	(void)state;
	struct job j = {.layers = 4,
	                .steps = 6,
	                .markers = 1,
	                .act = 2 * MIB,
	                .ema_update = 1,
	                .wbytes = {2 * MIB, 2 * MIB, 2 * MIB, 2 * MIB}};
	struct vt_model *m = run_job(&j);
	assert_int_equal(count_cat(m, VT_CAT_GRADIENTS), j.layers * j.steps);
	/* every step's, the first layer's too: made last by the backward pass
	 * and freed first, as brief as a temporary, while the others live */
	for (uint32_t i = 0; i < m->nallocs; i++) {
		uint64_t addr = m->allocs[i].addr;
		if (addr >= EMA_TEMP(0, 0) && addr < EMA_TEMP(j.layers, 0))
			assert_int_equal(m->allocs[i].category, VT_CAT_ACTIVATIONS);
		if (addr >= 0x500000000ull && addr < 0x500000000ull + 4 * 0x10000000ull)
			assert_int_equal(m->allocs[i].category, VT_CAT_GRADIENTS);
	}
	vt_model_free(m);
}

/* Square layers: activations the size of the weights. The optimizer is
 * made in the first step, so the weights are what existed before it. */
static void test_activations_of_weight_size(void **state)
{
	(void)state;
	struct job j = {.layers = 4,
	                .steps = 8,
	                .markers = 1,
	                .dataset = 1,
	                .act = 2 * MIB,
	                .wbytes = {2 * MIB, 2 * MIB, 2 * MIB, 2 * MIB}};
	struct vt_model *m = run_job(&j);
	check_roles(m, &j);
	vt_model_free(m);
}

/* A job that stops in the middle of a step: what was in flight keeps its
 * role (a batch is no dataset, an activation no weight). */
static void test_stopped_mid_step(void **state)
{
	(void)state;
	struct job j = {.layers = 3,
	                .steps = 10,
	                .markers = 1,
	                .dataset = 1,
	                .stop_mid_step = 1,
	                .wbytes = {4 * MIB, 2 * MIB, 1 * MIB}};
	struct vt_model *m = run_job(&j);
	assert_int_equal(count_cat(m, VT_CAT_DATASET), 1);
	assert_int_equal(count_cat(m, VT_CAT_WEIGHTS), 3);
	assert_int_equal(count_cat(m, VT_CAT_OPTIMIZER), 6);
	assert_int_equal(count_cat(m, VT_CAT_PREFETCH), 10);
	assert_int_equal(count_cat(m, VT_CAT_ACTIVATIONS), 3 * 10);
	assert_int_equal(count_cat(m, VT_CAT_GRADIENTS), 3 * 9);
	assert_int_equal(count_cat(m, VT_CAT_UNKNOWN), 0);
	vt_model_free(m);
}

/* Killed between a batch buffer's allocation and its upload, the batch the
 * size of a weight: the buffer is no gradient, its site's earlier buffers
 * were all batches (report_check.py's killed run, made deterministic). */
static void test_killed_before_upload(void **state)
{
	(void)state;
	struct job j = {.layers = 3,
	                .steps = 10,
	                .markers = 1,
	                .stop_before_upload = 1,
	                .wbytes = {4 * MIB, 2 * MIB, 1 * MIB}};
	struct vt_model *m = run_job(&j);
	assert_int_equal(category_of(m, 0x2f0000000ull), VT_CAT_PREFETCH);
	assert_int_equal(count_cat(m, VT_CAT_PREFETCH), 10 + 1);
	assert_int_equal(count_cat(m, VT_CAT_WEIGHTS), 3);
	assert_int_equal(count_cat(m, VT_CAT_GRADIENTS), 3 * 9);
	vt_model_free(m);
}

static void test_host_weights_per_tensor(void **state)
{
	(void)state;
	struct job j = {.layers = 3,
	                .steps = 6,
	                .markers = 1,
	                .host_weights = 1,
	                .wbytes = {8 * MIB, 8 * MIB, 3 * MIB}};
	struct vt_model *m = run_job(&j);
	check_roles(m, &j); /* host-filled weights are not a dataset: they have twins */
	struct vt_findings f;
	vt_findings_find(m, &f);
	for (uint32_t i = 0; i < f.n; i++)
		assert_int_not_equal(f.v[i].kind, VT_FINDING_WHOLE_DATASET);
	vt_findings_free(&f);
	vt_model_free(m);
}

static int flags_of_kind(const struct vt_model *m, int kind)
{
	struct vt_findings f;
	vt_findings_find(m, &f);
	int n = 0;
	for (uint32_t i = 0; i < f.n; i++)
		n += (int)f.v[i].kind == kind;
	vt_findings_free(&f);
	return n;
}

static int whole_dataset_flags(const struct vt_model *m)
{
	return flags_of_kind(m, VT_FINDING_WHOLE_DATASET);
}

/* The prefetch finding of device 0 (depth 0: none). */
static struct vt_finding prefetch_flag(const struct vt_model *m)
{
	struct vt_findings f;
	struct vt_finding got = {0};
	vt_findings_find(m, &f);
	for (uint32_t i = 0; i < f.n; i++)
		if (f.v[i].kind == VT_FINDING_PREFETCH_DEPTH)
			got = f.v[i];
	vt_findings_free(&f);
	return got;
}

/* `torch.load(map_location="cuda")` before training: each saved tensor
 * uploaded into a new allocation of its weight's size, copied into the
 * parameter by `load_state_dict` and dropped. The size recurs in every
 * step (its gradient), but the host fills it in no step: the uploads are
 * the checkpoint staged on the device, not six batches in flight. */
static void test_checkpoint_staged_before_training_is_no_batch(void **state)
{
	(void)state;
	const uint64_t w[3] = {2 * MIB, 6 * MIB, 768 * KIB};
	const uint64_t staged = 0x1c00000000ull;
	struct builder b;
	struct vt_model *m = begin_job(&b);
	uint64_t t = load_weights(&b, 1, w, 3);
	b.stack = 9;
	for (int l = 0; l < 3; l++) {
		b_alloc(&b, t++, staged + (uint64_t)l * 0x10000000ull, w[l], 0);
		b_htod(&b, t++, staged + (uint64_t)l * 0x10000000ull, w[l], 0);
	}
	for (int l = 0; l < 3; l++) {
		b_dtod(&b, t++, W_ADDR(l), staged + (uint64_t)l * 0x10000000ull, w[l], 0);
		b_free(&b, t++, staged + (uint64_t)l * 0x10000000ull, 0);
	}
	for (int s = 0; s < 12; s++) {
		mark_step(&b, t++, s);
		t = three_layer_step(&b, t, w, s == 0) + 1000;
	}
	m = classified_job(&b);
	for (int l = 0; l < 3; l++)
		assert_int_equal(category_of(m, staged + (uint64_t)l * 0x10000000ull),
		                 VT_CAT_WEIGHTS);
	assert_int_equal(prefetch_flag(m).depth, 0);
	vt_model_free(m);
}

/* DreamBooth's latent caching, then training: a text encoder uploaded, its
 * token embedding (8 MiB) on a line of its own, then its 12 layers by one
 * loader line; 20 image batches uploaded one at a time, each freed when
 * the next comes (the caching pass), the encoder dropped whole; then the
 * UNet loaded by another loader line and trained. The embedding was
 * dropped with its model (weights), the batches came one at a time from
 * one line (no dataset), the UNet is weights: no whole-dataset finding. */
static void test_model_parts_and_fed_batches_are_no_dataset(void **state)
{
	(void)state;
	const uint64_t emb = 0x1d00000000ull, layer = 0x1d80000000ull, batch = 0x1e00000000ull;
	const uint64_t unet[3] = {4 * MIB, 2 * MIB, 1 * MIB};
	struct builder b;
	struct vt_model *m = begin_job(&b);
	uint64_t t = 1;
	b.stack = 20;
	b_alloc(&b, t++, emb, 8 * MIB, 0);
	b_htod(&b, t++, emb, 8 * MIB, 0);
	b.stack = 21;
	for (uint64_t l = 0; l < 12; l++) {
		b_alloc(&b, t++, layer + l * 0x1000000, (l + 1) * 256 * KIB, 0);
		b_htod(&b, t++, layer + l * 0x1000000, (l + 1) * 256 * KIB, 0);
	}
	b.stack = 22;
	for (uint64_t k = 0; k < 20; k++) {
		b_alloc(&b, t++, batch + (k % 2) * 0x10000000ull, 3 * MIB, 0);
		b_htod(&b, t++, batch + (k % 2) * 0x10000000ull, 3 * MIB, 0);
		if (k)
			b_free(&b, t++, batch + ((k - 1) % 2) * 0x10000000ull, 0);
		t += 200;
	}
	b_free(&b, t++, batch + (19 % 2) * 0x10000000ull, 0);
	b_free(&b, t++, emb, 0);
	for (uint64_t l = 0; l < 12; l++)
		b_free(&b, t++, layer + l * 0x1000000, 0);
	t = load_weights(&b, t, unet, 3);
	for (int s = 0; s < 12; s++) {
		mark_step(&b, t++, s);
		t = three_layer_step(&b, t, unet, s == 0) + 1000;
	}
	m = classified_job(&b);
	assert_int_equal(category_of(m, emb), VT_CAT_WEIGHTS);
	assert_int_not_equal(category_of(m, batch), VT_CAT_DATASET);
	for (int l = 0; l < 3; l++)
		assert_int_equal(category_of(m, W_ADDR(l)), VT_CAT_WEIGHTS);
	assert_int_equal(whole_dataset_flags(m), 0);
	vt_model_free(m);
}

/* Each step uploads a tensor kept for the next four steps: 4 KiB ones are
 * batches a prefetcher holds (several in flight); 12-byte ones are
 * constants uploaded per call, no buffer worth advice. */
static struct vt_finding uploads_kept_four_steps(uint64_t bytes)
{
	const uint64_t w[3] = {1 * MIB, 2 * MIB, 3 * MIB};
	const uint64_t up = 0x1f00000000ull;
	struct builder b;
	struct vt_model *m = begin_job(&b);
	uint64_t t = load_weights(&b, 1, w, 3);
	for (int s = 0; s < 16; s++) {
		mark_step(&b, t++, s);
		b.stack = 23;
		b_alloc(&b, t++, up + (uint64_t)(s % 5) * 0x1000000, bytes, 0);
		b_htod(&b, t++, up + (uint64_t)(s % 5) * 0x1000000, bytes, 0);
		if (s >= 4)
			b_free(&b, t++, up + (uint64_t)((s - 4) % 5) * 0x1000000, 0);
		t = three_layer_step(&b, t, w, s == 0) + 1000;
	}
	m = classified_job(&b);
	struct vt_finding f = prefetch_flag(m);
	vt_model_free(m);
	return f;
}

static void test_prefetch_of_a_few_bytes_is_no_finding(void **state)
{
	(void)state;
	assert_true(uploads_kept_four_steps(4 * KIB).depth > 1);
	assert_int_equal(uploads_kept_four_steps(12).depth, 0);
}

/* A model loaded while the job trains (a teacher, an EMA model from a
 * checkpoint, the next stage's network): ten tensors uploaded by one line,
 * all kept. Uploaded after the first step, long-lived, no twin, like a
 * day of data; but data comes a handful of arrays at a time, and a site
 * with many tensors alive at once loaded a model. */
static void test_model_loaded_while_training_is_no_dataset(void **state)
{
	(void)state;
	const uint64_t w[3] = {1 * MIB, 2 * MIB, 3 * MIB};
	const uint64_t second = 0x2000000000ull;
	struct builder b;
	struct vt_model *m = begin_job(&b);
	uint64_t t = load_weights(&b, 1, w, 3);
	for (int s = 0; s < 16; s++) {
		mark_step(&b, t++, s);
		if (s == 6) {
			b.stack = 24;
			for (uint64_t l = 0; l < 10; l++) {
				b_alloc(&b, t++, second + l * 0x1000000, (l + 5) * MIB, 0);
				b_htod(&b, t++, second + l * 0x1000000, (l + 5) * MIB, 0);
			}
		}
		t = three_layer_step(&b, t, w, s == 0) + 1000;
	}
	m = classified_job(&b);
	for (uint64_t l = 0; l < 10; l++)
		assert_int_equal(category_of(m, second + l * 0x1000000), VT_CAT_WEIGHTS);
	assert_int_equal(whole_dataset_flags(m), 0);
	vt_model_free(m);
}

/* x and y uploaded together each step are one batch: prefetch 2 holds 2
 * batches of x + y, not 4 arrays of the larger one's size. */
static void test_prefetch_counts_batches_not_arrays(void **state)
{
	(void)state;
	struct job j = {.layers = 3,
	                .steps = 8,
	                .markers = 1,
	                .labels = 1,
	                .wbytes = {1 * MIB, 2 * MIB, 3 * MIB}};
	struct vt_model *m = run_job(&j);
	struct vt_finding f = prefetch_flag(m);
	assert_int_equal(f.depth, 2);
	assert_int_equal(f.batch_bytes, 2 * MIB + (256 << 10));
	vt_model_free(m);
}

/* A caching allocator's segment, made before training, receives each
 * step's batch (x of 3 MiB, y of 256 KiB) at `places` offsets taken in
 * turn: one place when each batch is freed before the next is made, two
 * when two are alive at once. No allocation is a batch buffer; the places
 * the uploads land at give the depth. */
static struct vt_finding batches_into_a_segment(int places)
{
	const uint64_t w[3] = {1 * MIB, 2 * MIB, 3 * MIB};
	const uint64_t seg = 0x1e00000000ull;
	struct builder b;
	struct vt_model *m = begin_job(&b);
	uint64_t t = load_weights(&b, 1, w, 3);
	b.stack = 25;
	b_alloc(&b, t++, seg, 64 * MIB, 0);
	for (int s = 0; s < 12; s++) {
		mark_step(&b, t++, s);
		uint64_t at = seg + (uint64_t)(s % places) * 16 * MIB;
		b_htod(&b, t++, at, 3 * MIB, 0);
		b_htod(&b, t++, at + 8 * MIB, 256 * KIB, 0);
		t = three_layer_step(&b, t, w, s == 0) + 1000;
	}
	b_free(&b, t++, seg, 0);
	m = classified_job(&b);
	struct vt_finding f = prefetch_flag(m);
	vt_model_free(m);
	return f;
}

static void test_batches_into_a_segment_give_their_depth(void **state)
{
	(void)state;
	struct vt_finding one = batches_into_a_segment(1);
	assert_int_equal(one.kind, VT_FINDING_PREFETCH_DEPTH);
	assert_int_equal(one.depth, 1);
	assert_int_equal(one.batch_bytes, 3 * MIB + 256 * KIB);
	assert_int_equal(batches_into_a_segment(2).depth, 2);
	/* twelve places, each written once: no ring a prefetcher keeps */
	assert_int_equal(batches_into_a_segment(12).depth, 0);
}

/* Twelve buffers refilled from the host live at once: no device prefetcher
 * holds that many batches, so no prefetch_depth finding; a ring of three
 * is one. */
static void test_implausible_prefetch_depth_is_no_finding(void **state)
{
	(void)state;
	struct job j = {.layers = 3,
	                .steps = 48,
	                .markers = 1,
	                .ring = 12,
	                .wbytes = {1 * MIB, 2 * MIB, 3 * MIB}};
	struct vt_model *m = run_job(&j);
	assert_int_equal(prefetch_flag(m).depth, 0); /* none found */
	vt_model_free(m);
	j.ring = 3;
	m = run_job(&j);
	assert_int_equal(prefetch_flag(m).kind, VT_FINDING_PREFETCH_DEPTH);
	assert_true(prefetch_flag(m).depth >= 3);
	vt_model_free(m);
}

/* Frozen weights (a LoRA base, an inference model) are uploaded tensor by
 * tensor from one site and get no gradient: weights, unsure, not a
 * dataset, and no whole_dataset_upload. */
static void test_frozen_weights_are_not_a_dataset(void **state)
{
	(void)state;
	struct job j = {.layers = 3,
	                .steps = 6,
	                .markers = 1,
	                .frozen = 6,
	                .wbytes = {1 * MIB, 2 * MIB, 3 * MIB}};
	struct vt_model *m = run_job(&j);
	for (int k = 0; k < j.frozen; k++) {
		const struct vt_alloc *a = NULL;
		for (uint32_t i = 0; i < m->nallocs; i++)
			if (m->allocs[i].addr == 0xb00000000ull + (uint64_t)k * 0x1000000ull)
				a = &m->allocs[i];
		assert_non_null(a);
		assert_int_equal(a->category, VT_CAT_WEIGHTS);
		assert_true(a->confidence < VT_CONFIDENT);
		struct vt_alternative alt[2];
		assert_int_equal(vt_alloc_alternatives(a, alt, 2), 1);
		assert_int_equal(alt[0].category, VT_CAT_DATASET);
	}
	assert_int_equal(count_cat(m, VT_CAT_DATASET), 0);
	assert_int_equal(whole_dataset_flags(m), 0);
	vt_model_free(m);
}

/* One lone upload with no gradient twin stays a dataset, flagged, but
 * with weights as its alternative. */
static void test_lone_upload_is_a_dataset_with_an_alternative(void **state)
{
	(void)state;
	struct job j = {.layers = 3,
	                .steps = 6,
	                .markers = 1,
	                .dataset = 1,
	                .wbytes = {1 * MIB, 2 * MIB, 3 * MIB}};
	struct vt_model *m = run_job(&j);
	int cat = category_of(m, 0x900000000ull);
	assert_int_equal(cat, VT_CAT_DATASET);
	assert_int_equal(whole_dataset_flags(m), 1);
	for (uint32_t i = 0; i < m->nallocs; i++)
		if (m->allocs[i].addr == 0x900000000ull) {
			struct vt_alternative alt[2];
			assert_int_equal(vt_alloc_alternatives(&m->allocs[i], alt, 2), 1);
			assert_int_equal(alt[0].category, VT_CAT_WEIGHTS);
			assert_int_equal(alt[0].confidence, 100 - m->allocs[i].confidence);
		}
	vt_model_free(m);
}

static const struct vt_alloc *alloc_at(const struct vt_model *m, uint64_t addr)
{
	for (uint32_t i = 0; i < m->nallocs; i++)
		if (m->allocs[i].addr == addr)
			return &m->allocs[i];
	return NULL;
}

/* A fine-tune: the job streams its batches and loads its model from the
 * host; a lone tensor uploaded with the model (before its last weight) and
 * never given a gradient reads as frozen weights, data the alternative, not
 * confidently, and raises no whole-dataset finding. */
static void test_upload_with_the_model_is_frozen_weights(void **state)
{
	(void)state;
	struct job j = {.layers = 3,
	                .steps = 6,
	                .markers = 1,
	                .dataset = 1,
	                .dataset_first = 1,
	                .host_weights = 1,
	                .wbytes = {1 * MIB, 2 * MIB, 3 * MIB}};
	struct vt_model *m = run_job(&j);
	const struct vt_alloc *a = alloc_at(m, 0x900000000ull);
	assert_non_null(a);
	assert_int_equal(a->category, VT_CAT_WEIGHTS);
	assert_true(a->confidence < VT_CONFIDENT);
	struct vt_alternative alt[2];
	assert_int_equal(vt_alloc_alternatives(a, alt, 2), 1);
	assert_int_equal(alt[0].category, VT_CAT_DATASET);
	assert_int_equal(whole_dataset_flags(m), 0);
	vt_model_free(m);
}

/* The whole dataset moved to the device before the model (TensorDataset of
 * two .cuda() tensors), batches gathered on the device each step, the model
 * restored from a checkpoint whose transient copies are uploaded, copied
 * into the parameters and freed before training. A copy the size of a
 * gathered batch is no batch streamed from the host: the upload stays a
 * dataset, flagged, not a frozen weight. */
static void test_checkpoint_copy_the_size_of_a_batch_streams_nothing(void **state)
{
	(void)state;
	const uint64_t w[3] = {2 * MIB, 1 * MIB, 3 * MIB};
	struct vt_model *m = vt_model_new();
	struct builder b;
	b_begin(&b, m, 7, 0, 0);
	b_device(&b, 0, 16ull << 30, "test GPU");
	uint64_t t = 1000;
	b.stack = 2; /* to_device(x) */
	b_alloc(&b, t++, 0x900000000ull, 64 * MIB, 0);
	b_htod(&b, t++, 0x900000000ull, 64 * MIB, 0);
	for (int l = 0; l < 3; l++) {
		b.stack = 1; /* Module.cuda: the initial parameters */
		b_alloc(&b, t++, W_ADDR(l), w[l], 0);
		b_htod(&b, t++, W_ADDR(l), w[l], 0);
	}
	for (int l = 0; l < 3; l++) {
		b.stack = 15; /* torch.load(map_location="cuda"), then load_state_dict */
		b_alloc(&b, t++, 0x700000000ull + (uint64_t)l * 0x1000000ull, w[l], 0);
		b_htod(&b, t++, 0x700000000ull + (uint64_t)l * 0x1000000ull, w[l], 0);
		b_dtod(&b, t++, W_ADDR(l), 0x700000000ull + (uint64_t)l * 0x1000000ull, w[l], 0);
	}
	for (int l = 0; l < 3; l++)
		b_free(&b, t++, 0x700000000ull + (uint64_t)l * 0x1000000ull, 0);
	uint64_t opt = 0xa00000000ull;
	for (int s = 0; s < 8; s++) {
		t += 1000;
		char text[24]; /* "step " and any int */
		snprintf(text, sizeof text, "step %d", s);
		b_mark(&b, t++, text);
		b.stack = 7; /* x[idx]: 2 MiB, the first weight's size */
		b_alloc(&b, t++, 0x200000000ull, 2 * MIB, 0);
		b.stack = 5;
		for (int l = 0; l < 3; l++)
			b_alloc(&b, t++, 0x300000000ull + (uint64_t)l * 0x10000000ull, 768 << 10,
			        0);
		b.stack = 6;
		for (int l = 2; l >= 0; l--) {
			b_alloc(&b, t++, 0x500000000ull + (uint64_t)l * 0x10000000ull, w[l], 0);
			b_free(&b, t++, 0x300000000ull + (uint64_t)l * 0x10000000ull, 0);
		}
		b.stack = 3;
		for (int l = 0; s == 0 && l < 3; l++)
			for (int k = 0; k < 2; k++, opt += 0x10000000ull)
				b_alloc(&b, t++, opt, w[l], 0);
		for (int l = 0; l < 3; l++)
			b_free(&b, t++, 0x500000000ull + (uint64_t)l * 0x10000000ull, 0);
		b_free(&b, t++, 0x200000000ull, 0);
	}
	vt_model_end_process(m, b.proc);
	vt_model_finish(m);
	vt_classify(m);
	assert_int_equal(category_of(m, 0x900000000ull), VT_CAT_DATASET);
	assert_int_equal(whole_dataset_flags(m), 1);
	for (int l = 0; l < 3; l++)
		assert_int_equal(category_of(m, W_ADDR(l)), VT_CAT_WEIGHTS);
	vt_model_free(m);
}

/* The same upload made after the model (when training starts, as
 * TensorFlow's numpy path does) stays a dataset, flagged. */
static void test_upload_after_the_model_is_a_dataset(void **state)
{
	(void)state;
	struct job j = {.layers = 3,
	                .steps = 6,
	                .markers = 1,
	                .dataset = 1,
	                .host_weights = 1,
	                .wbytes = {1 * MIB, 2 * MIB, 3 * MIB}};
	struct vt_model *m = run_job(&j);
	assert_int_equal(category_of(m, 0x900000000ull), VT_CAT_DATASET);
	assert_int_equal(whole_dataset_flags(m), 1);
	vt_model_free(m);
}

/* Batches copied out of it on the device, step after step: data, with
 * confidence, even where the upload came with the model. */
static void test_sliced_upload_is_a_confident_dataset(void **state)
{
	(void)state;
	struct job j = {.layers = 3,
	                .steps = 6,
	                .markers = 1,
	                .dataset = 1,
	                .dataset_first = 1,
	                .host_weights = 1,
	                .sliced = 1,
	                .wbytes = {1 * MIB, 2 * MIB, 3 * MIB}};
	struct vt_model *m = run_job(&j);
	const struct vt_alloc *a = alloc_at(m, 0x900000000ull);
	assert_non_null(a);
	assert_int_equal(a->category, VT_CAT_DATASET);
	assert_int_equal(a->confidence, 90);
	assert_int_equal(whole_dataset_flags(m), 1);
	vt_model_free(m);
}

/* The whole-dataset findings of m, each asserted to hold `bytes` (x and
 * its labels together). */
static int dataset_findings(struct vt_model *m, uint64_t bytes)
{
	struct vt_findings f;
	vt_findings_find(m, &f);
	int n = 0;
	for (uint32_t i = 0; i < f.n; i++) {
		if (f.v[i].kind != VT_FINDING_WHOLE_DATASET)
			continue;
		n++;
		assert_int_equal(vt_finding_bytes_max(&f.v[i]), bytes);
	}
	vt_findings_free(&f);
	return n;
}

/* y converted on the next line after x (another call path, the same
 * moment, neither allocated beside the other): y is data, but nothing
 * but time ties it to x's finding, and what a job uploads right after its
 * data may be a model it loads to score it: x's finding alone. */
static void test_labels_tied_only_by_time_stay_apart(void **state)
{
	(void)state;
	struct job j = {.layers = 3,
	                .steps = 6,
	                .markers = 1,
	                .dataset = 1,
	                .dataset_first = 1,
	                .dataset_y = 1,
	                .host_weights = 1,
	                .sliced = 1,
	                .wbytes = {1 * MIB, 2 * MIB, 3 * MIB}};
	struct vt_model *m = run_job(&j);
	assert_int_equal(category_of(m, 0x980000000ull), VT_CAT_DATASET);
	assert_int_equal(dataset_findings(m, 64 * MIB), 1);
	vt_model_free(m);
}

/* x then y, converted one right after the other, x's upload taking longer
 * than a step: y joins x's finding as the array allocated beside it. */
static void test_labels_allocated_beside_the_data_join_its_finding(void **state)
{
	(void)state;
	struct job j = {.layers = 3,
	                .steps = 6,
	                .markers = 1,
	                .dataset = 1,
	                .dataset_y = 1,
	                .upload_ns = 10000000,
	                .sliced = 1,
	                .wbytes = {1 * MIB, 2 * MIB, 3 * MIB}};
	struct vt_model *m = run_job(&j);
	assert_int_equal(category_of(m, 0x980000000ull), VT_CAT_DATASET);
	assert_int_equal(dataset_findings(m, 64 * MIB + (256 << 10)), 1);
	vt_model_free(m);
}

/* A continual trainer gets a day of data every 8 steps, x then y, each
 * from its own line, x's upload longer than a step: every day's pair is a
 * dataset and one finding with both arrays, the day before's included. One
 * line filled four x arrays, but never more than two at once: it loads
 * days, not a model (a loader's tensors are all alive together). */
static void test_each_day_of_data_is_its_own_finding(void **state)
{
	(void)state;
	struct job j = {.layers = 3,
	                .steps = 30,
	                .markers = 1,
	                .host_weights = 1,
	                .daily = 8,
	                .upload_ns = 10000000,
	                .wbytes = {1 * MIB, 2 * MIB, 3 * MIB}};
	struct vt_model *m = run_job(&j);
	for (uint64_t d = 0; d < 4; d++) {
		assert_int_equal(category_of(m, DAY_X(d)), VT_CAT_DATASET);
		assert_int_equal(category_of(m, DAY_Y(d)), VT_CAT_DATASET);
	}
	assert_int_equal(dataset_findings(m, 32 * MIB + (256 << 10)), 4);
	vt_model_free(m);
}

/* A ring of batch buffers made once and refilled in place every step is
 * prefetch, not a dataset. */
static void test_refilled_ring_is_prefetch(void **state)
{
	(void)state;
	struct job j = {.layers = 3,
	                .steps = 9,
	                .markers = 1,
	                .ring = 3,
	                .wbytes = {1 * MIB, 2 * MIB, 3 * MIB}};
	struct vt_model *m = run_job(&j);
	for (int k = 0; k < j.ring; k++)
		assert_int_equal(category_of(m, 0xc00000000ull + (uint64_t)k * 0x1000000ull),
		                 VT_CAT_PREFETCH);
	assert_int_equal(whole_dataset_flags(m), 0);
	vt_model_free(m);
}

/* DDP's Reducer bucket: made before the first step, written every step by
 * copies from that step's gradients: gradients, whatever its size matches.
 * NCCL's channel, written from the bucket, is not (its source is not a
 * gradient); the weights stay weights. */
static void test_bucket_written_from_gradients_is_gradients(void **state)
{
	(void)state;
	struct job j = {.layers = 3,
	                .steps = 6,
	                .markers = 1,
	                .bucket = 1,
	                .wbytes = {1 * MIB, 2 * MIB, 3 * MIB}};
	struct vt_model *m = run_job(&j);
	assert_int_equal(category_of(m, BUCKET_ADDR), VT_CAT_GRADIENTS);
	assert_int_not_equal(category_of(m, CHANNEL_ADDR), VT_CAT_GRADIENTS);
	for (int l = 0; l < j.layers; l++)
		assert_int_equal(category_of(m, W_ADDR(l)), VT_CAT_WEIGHTS);
	vt_model_free(m);
}

/* NCCL's channel, made before the model and the size of one of its
 * weights, is rewritten from the bucket every step: a communication
 * buffer, and no weight (a weight is updated in place). */
static void test_channel_fed_from_the_bucket_is_no_weight(void **state)
{
	(void)state;
	struct job j = {.layers = 3,
	                .steps = 6,
	                .markers = 1,
	                .bucket = 1,
	                .channel_first = 1,
	                .wbytes = {4 * MIB, 2 * MIB, 1 * MIB}};
	struct vt_model *m = run_job(&j);
	assert_int_equal(category_of(m, BUCKET_ADDR), VT_CAT_GRADIENTS);
	assert_int_equal(category_of(m, CHANNEL_ADDR), VT_CAT_UNKNOWN);
	for (int l = 0; l < j.layers; l++)
		assert_int_equal(category_of(m, W_ADDR(l)), VT_CAT_WEIGHTS);
	vt_model_free(m);
}

/* Gradients kept between steps (zero_grad(set_to_none=False)) and the
 * optimizer's slots (`slots` per weight), all made by the first step;
 * `target`: a DQN's target network beside the policy, a copy of each weight
 * made on the device before training (a frozen twin of each weight). */
#define TARGET_ADDR(l) (0x600000000ull + (uint64_t)(l)*0x10000000ull)
#define GRAD_ADDR(l) (0x500000000ull + (uint64_t)(l)*0x10000000ull)
#define SLOT_ADDR(l, k) (0xa00000000ull + (uint64_t)(2 * (l) + (k)) * 0x10000000ull)
static const uint64_t kept_wbytes[3] = {1 * MIB, 3 * MIB, 2 * MIB};

static void kept_step(struct builder *b, uint64_t *t, int s, int slots, int bucket)
{
	char text[24]; /* "step " and any int */
	snprintf(text, sizeof text, "step %d", s);
	b_mark(b, *t += 1000, text);
	b->stack = 4;
	b_alloc(b, (*t)++, 0x200000000ull, 512 << 10, 0);
	b_htod(b, (*t)++, 0x200000000ull, 512 << 10, 0);
	b->stack = 5;
	for (int l = 0; l < 3; l++)
		b_alloc(b, (*t)++, 0x300000000ull + (uint64_t)l * 0x10000000ull, 768 << 10, 0);
	b->stack = 6;
	for (int l = 2; l >= 0 && s == 0; l--)
		b_alloc(b, (*t)++, GRAD_ADDR(l), kept_wbytes[l], 0);
	for (int l = 0; l < 3; l++)
		b_free(b, (*t)++, 0x300000000ull + (uint64_t)l * 0x10000000ull, 0);
	for (uint64_t l = 0, off = 0; bucket && l < 3; off += kept_wbytes[l++])
		b_dtod(b, (*t)++, BUCKET_ADDR + off, GRAD_ADDR(l), kept_wbytes[l], 0);
	b->stack = 3;
	for (int l = 0; l < 3 && s == 0; l++)
		for (int k = 0; k < slots; k++)
			b_alloc(b, (*t)++, SLOT_ADDR(l, k), kept_wbytes[l], 0);
	b_free(b, (*t)++, 0x200000000ull, 0);
}

static struct vt_model *kept_grads_job(int slots, int target, int bucket)
{
	struct vt_model *m = vt_model_new();
	struct builder b;
	b_begin(&b, m, 7, 0, 0);
	b_device(&b, 0, 16ull << 30, "test GPU");
	uint64_t t = 1000;
	for (int l = 0; l < 3; l++) {
		b.stack = 1;
		b_alloc(&b, t++, W_ADDR(l), kept_wbytes[l], 0);
		b_htod(&b, t++, W_ADDR(l), kept_wbytes[l], 0);
		b.stack = 2;
		if (!target)
			continue;
		b_alloc(&b, t++, TARGET_ADDR(l), kept_wbytes[l], 0);
		b_dtod(&b, t++, TARGET_ADDR(l), W_ADDR(l), kept_wbytes[l], 0);
	}
	b.stack = 13;
	if (bucket)
		b_alloc(&b, t++, BUCKET_ADDR, 6 * MIB, 0);
	for (int s = 0; s < 8; s++)
		kept_step(&b, &t, s, slots, bucket);
	vt_model_end_process(m, b.proc);
	vt_model_finish(m);
	vt_classify(m);
	return m;
}

static void check_kept(const struct vt_model *m, int slots, int target)
{
	for (int l = 0; l < 3; l++) {
		assert_int_equal(category_of(m, W_ADDR(l)), VT_CAT_WEIGHTS);
		if (target)
			assert_int_equal(category_of(m, TARGET_ADDR(l)), VT_CAT_WEIGHTS);
		assert_int_equal(category_of(m, GRAD_ADDR(l)), VT_CAT_GRADIENTS);
		for (int k = 0; k < slots; k++)
			assert_int_equal(category_of(m, SLOT_ADDR(l, k)), VT_CAT_OPTIMIZER);
	}
}

/* One rank's training step on dev at time t (square layers: activations
 * the size of the weights): batch, activations, the backward's gradients, Adam's slots in the first
 * step, all but the slots freed. Addresses apart per device. */
static uint64_t rank_step(struct builder *b, uint64_t t, uint8_t dev, int s)
{
	static const uint64_t wb[3] = {2 * MIB, 2 * MIB, 2 * MIB};
	const uint64_t base = (uint64_t)dev << 36;
	b->stack = 4;
	b_alloc(b, t++, base + 0x200000000ull, 3 * MIB, dev);
	b_htod(b, t++, base + 0x200000000ull, 3 * MIB, dev);
	b->stack = 5;
	for (uint64_t l = 0; l < 3; l++)
		b_alloc(b, t++, base + 0x300000000ull + l * 0x10000000ull, 2 * MIB, dev);
	b->stack = 6;
	for (uint64_t l = 3; l-- > 0;) {
		b_alloc(b, t++, base + GRAD_ADDR(l), wb[l], dev);
		b_free(b, t++, base + 0x300000000ull + l * 0x10000000ull, dev);
	}
	b->stack = 3;
	for (uint64_t l = 0; s == 0 && l < 3; l++)
		for (uint64_t k = 0; k < 2; k++)
			b_alloc(b, t++, base + SLOT_ADDR(l, k), wb[l], dev);
	for (uint64_t l = 0; l < 3; l++)
		b_free(b, t++, base + GRAD_ADDR(l), dev);
	b_free(b, t++, base + 0x200000000ull, dev);
	return t;
}

/* Two devices, and on each the three 2 MiB weights rank_step trains,
 * uploaded (addresses apart per device). */
static void load_two_ranks(struct builder *b)
{
	uint64_t t = 1000;
	b_device(b, 0, 16ull << 30, "test GPU");
	b_device(b, 1, 16ull << 30, "test GPU");
	b->stack = 1;
	for (uint8_t dev = 0; dev < 2; dev++)
		for (uint64_t l = 0; l < 3; l++) {
			b_alloc(b, t++, ((uint64_t)dev << 36) + W_ADDR(l), 2 * MIB, dev);
			b_htod(b, t++, ((uint64_t)dev << 36) + W_ADDR(l), 2 * MIB, dev);
		}
}

/* Two ranks on two devices from two threads, markers from rank 0 only, and
 * rank 1 running half a step ahead: cut by rank 0's markers, rank 1's first
 * step (and the Adam state it makes) falls before training, where its slots
 * read as more weights (square layers: nothing but time tells them apart). Device 1 takes
 * its own steps, out of phase with the markers. */
static void test_each_device_its_own_steps(void **state)
{
	(void)state;
	const uint64_t period = 100000;
	struct vt_model *m = vt_model_new();
	struct builder b;
	b_begin(&b, m, 7, 0, 0);
	load_two_ranks(&b);
	const uint64_t t0 = 10 * period;
	for (int s = 0; s < 8; s++) {
		rank_step(&b, t0 + (uint64_t)s * period - period / 2, 1, s);
		char text[24]; /* "step " and any int */
		snprintf(text, sizeof text, "step %d", s);
		b_mark(&b, t0 + (uint64_t)s * period, text);
		rank_step(&b, t0 + (uint64_t)s * period + 1, 0, s);
	}
	vt_model_end_process(m, b.proc);
	vt_model_finish(m);
	vt_classify(m);
	for (uint8_t dev = 0; dev < 2; dev++) {
		int weights = 0, slots = 0;
		for (uint32_t i = 0; i < m->nallocs; i++) {
			if (m->allocs[i].device != dev)
				continue;
			weights += m->allocs[i].category == VT_CAT_WEIGHTS;
			slots += m->allocs[i].category == VT_CAT_OPTIMIZER;
		}
		assert_int_equal(weights, 3);
		assert_int_equal(slots, 6);
	}
	vt_model_free(m);
}

/* Two ranks from two threads, no markers (steps by period): rank 1 begins
 * its first step late, a third of a period behind rank 0's second step
 * when it makes its Adam slots, then catches up to a few hundredths of a
 * period; the job tears everything down at the end. Close to the
 * process's steps at every step but one, device 1 still takes its own:
 * cut by rank 0's steps, its slots would be born a step late and, torn
 * down three steps later, read as per-step tensors. */
static void test_lagging_rank_keeps_its_own_first_step(void **state)
{
	(void)state;
	const uint64_t period = 100000, t0 = 10 * period;
	const uint64_t lag[5] = {period * 6 / 5, period / 3, period / 12, period / 20, period / 30};
	struct builder b;
	struct vt_model *m = begin_job(&b);
	load_two_ranks(&b);
	for (int s = 0; s < 5; s++) {
		rank_step(&b, t0 + (uint64_t)s * period, 0, s);
		rank_step(&b, t0 + (uint64_t)s * period + lag[s], 1, s);
	}
	uint64_t t = t0 + 6 * period;
	for (uint64_t dev = 0; dev < 2; dev++)
		for (uint64_t l = 0; l < 3; l++) {
			b_free(&b, t++, (dev << 36) + W_ADDR(l), (uint8_t)dev);
			for (uint64_t k = 0; k < 2; k++)
				b_free(&b, t++, (dev << 36) + SLOT_ADDR(l, k), (uint8_t)dev);
		}
	classified_job(&b);
	for (uint64_t l = 0; l < 3; l++)
		for (uint64_t k = 0; k < 2; k++)
			assert_int_equal(category_of(m, (1ull << 36) + SLOT_ADDR(l, k)),
			                 VT_CAT_OPTIMIZER);
	vt_model_free(m);
}

/* JAX without buffer donation: every step returns new parameters and
 * momentum, and the old ones die in the next step; nothing is long-lived
 * but the data. Each generation's first of its size is the parameter, the
 * second its momentum; the step's temp buffer is neither. */
static void test_state_handed_from_step_to_step(void **state)
{
	(void)state;
	static const uint64_t wb[3] = {4 * MIB, 2 * MIB, 64 << 10};
	const int steps = 8;
	struct vt_model *m = vt_model_new();
	struct builder b;
	b_begin(&b, m, 7, 0, 0);
	b_device(&b, 0, 16ull << 30, "test GPU");
	uint64_t t = 1000, gen = 0;
	b.stack = 2;
	b_alloc(&b, t++, 0x900000000ull, 32 * MIB, 0);
	b_htod(&b, t++, 0x900000000ull, 32 * MIB, 0);
#define GEN_ADDR(g, l, k)                                                                          \
	(0x2000000000ull + (g)*0x100000000ull + (uint64_t)(2 * (l) + (k)) * 0x1000000ull)
	b.stack = 1;
	for (uint64_t l = 0; l < 3; l++)
		for (uint64_t k = 0; k < 2; k++)
			b_alloc(&b, t++, GEN_ADDR(gen, l, k), wb[l], 0);
	for (int s = 0; s < steps; s++, gen++) {
		t += s ? 10000 : 30000; /* the first step waits for its compilation */
		b.stack = 5;
		b_alloc(&b, t++, 0x200000000ull, 12 * MIB, 0);
		b_dtod(&b, t++, 0x200000000ull, 0x900000000ull + (uint64_t)s * MIB, MIB, 0);
		b.stack = 6;
		for (uint64_t l = 0; l < 3; l++)
			for (uint64_t k = 0; k < 2; k++)
				b_alloc(&b, t++, GEN_ADDR(gen + 1, l, k), wb[l], 0);
		b_free(&b, t++, 0x200000000ull, 0);
		for (uint64_t l = 0; l < 3; l++)
			for (uint64_t k = 0; k < 2; k++)
				b_free(&b, t++, GEN_ADDR(gen, l, k), 0);
	}
	vt_model_end_process(m, b.proc);
	vt_model_finish(m);
	vt_classify(m);
	assert_int_equal(m->procs[0].step_source, VT_STEPS_PERIOD);
	for (uint64_t g = 0; g <= (uint64_t)steps; g++)
		for (uint64_t l = 0; l < 3; l++) {
			assert_int_equal(category_of(m, GEN_ADDR(g, l, 0)), VT_CAT_WEIGHTS);
			assert_int_equal(category_of(m, GEN_ADDR(g, l, 1)), VT_CAT_OPTIMIZER);
		}
#undef GEN_ADDR
	assert_int_not_equal(category_of(m, 0x200000000ull), VT_CAT_WEIGHTS);
	assert_int_equal(category_of(m, 0x900000000ull), VT_CAT_DATASET);
	vt_model_free(m);
}

/* A fine-tune beside a frozen model (a diffusion UNet beside its VAE):
 * trained weights of 1, 2, 3 MiB and 512 KiB get Adam's two slots in the
 * first step; the frozen model's 4 MiB tensors get none, though a 4 MiB
 * activation is made every step; one frozen tensor shares the 2 MiB size
 * with a trained one, and a 2 MiB activation is made every step beside that
 * one's gradient. The 4 MiB activations are no gradients, and only one
 * 2 MiB tensor a step is its gradient. */
static void test_frozen_model_beside_a_trained_one(void **state)
{
	(void)state;
	static const uint64_t trained[4] = {1 * MIB, 2 * MIB, 3 * MIB, 512 << 10};
	const uint64_t frozen[3] = {4 * MIB, 4 * MIB, 2 * MIB};
	struct vt_model *m = vt_model_new();
	struct builder b;
	b_begin(&b, m, 7, 0, 0);
	b_device(&b, 0, 16ull << 30, "test GPU");
	uint64_t t = 1000;
	b.stack = 1;
	for (uint64_t l = 0; l < 4; l++) {
		b_alloc(&b, t++, W_ADDR(l), trained[l], 0);
		b_htod(&b, t++, W_ADDR(l), trained[l], 0);
	}
	b.stack = 2;
	for (uint64_t k = 0; k < 3; k++) {
		b_alloc(&b, t++, 0xb00000000ull + k * 0x10000000ull, frozen[k], 0);
		b_htod(&b, t++, 0xb00000000ull + k * 0x10000000ull, frozen[k], 0);
	}
	for (int s = 0; s < 8; s++) {
		char text[24]; /* "step " and any int */
		snprintf(text, sizeof text, "step %d", s);
		b_mark(&b, t += 1000, text);
		b.stack = 5; /* the frozen model's output, then the trained one's forward */
		b_alloc(&b, t++, 0x300000000ull, 4 * MIB, 0);
		b_alloc(&b, t++, 0x310000000ull, 2 * MIB, 0);
		b.stack = 6;
		for (uint64_t l = 4; l-- > 0;)
			b_alloc(&b, t++, GRAD_ADDR(l), trained[l], 0);
		b_free(&b, t++, 0x310000000ull, 0);
		b_free(&b, t++, 0x300000000ull, 0);
		b.stack = 3;
		for (uint64_t l = 0; s == 0 && l < 4; l++)
			for (uint64_t k = 0; k < 2; k++)
				b_alloc(&b, t++, SLOT_ADDR(l, k), trained[l], 0);
		for (uint64_t l = 0; l < 4; l++)
			b_free(&b, t++, GRAD_ADDR(l), 0);
	}
	vt_model_end_process(m, b.proc);
	vt_model_finish(m);
	vt_classify(m);
	for (uint64_t k = 0; k < 3; k++)
		assert_int_equal(category_of(m, 0xb00000000ull + k * 0x10000000ull),
		                 VT_CAT_WEIGHTS);
	int act4 = 0, act2 = 0, grads = 0;
	for (uint32_t i = 0; i < m->nallocs; i++) {
		const struct vt_alloc *a = &m->allocs[i];
		act4 += a->addr == 0x300000000ull && a->category == VT_CAT_ACTIVATIONS;
		act2 += a->addr == 0x310000000ull && a->category == VT_CAT_ACTIVATIONS;
		grads += a->category == VT_CAT_GRADIENTS;
	}
	assert_int_equal(act4, 8);
	assert_int_equal(act2, 8);
	assert_int_equal(grads, 4 * 8);
	assert_int_equal(count_cat(m, VT_CAT_OPTIMIZER), 8);
	vt_model_free(m);
}

/* Adam beside a target network: each size has two tensors before training
 * and three twins during it, one trained weight of three twins, not one
 * twin each of two. */
static void test_kept_gradients_beside_a_target_network(void **state)
{
	(void)state;
	struct vt_model *m = kept_grads_job(2, 1, 0);
	check_kept(m, 2, 1);
	vt_model_free(m);
}

/* DDP with gradients kept between steps (zero_grad(set_to_none=False)):
 * the flat bucket written from them every step is gradients too. */
static void test_bucket_written_from_kept_gradients(void **state)
{
	(void)state;
	struct vt_model *m = kept_grads_job(2, 0, 1);
	check_kept(m, 2, 0);
	assert_int_equal(category_of(m, BUCKET_ADDR), VT_CAT_GRADIENTS);
	vt_model_free(m);
}

/* SGD with momentum: two twins per weight, a gradient and one slot; no
 * per-step gradient, so not Adam's two slots. */
static void test_kept_gradients_with_momentum(void **state)
{
	(void)state;
	struct vt_model *m = kept_grads_job(1, 0, 0);
	check_kept(m, 1, 0);
	vt_model_free(m);
}

#define FLAT_ADDR 0x700000000ull

/* A process whose n weights are uploaded one by one, the first `packed`
 * then copied into one flat buffer at FLAT_ADDR and freed (their storage
 * gone, the parameters views of it). Returns the clock after it. */
static uint64_t packed_model(struct builder *b, struct vt_model *m, const uint64_t *wbytes, int n,
                             int packed)
{
	b_begin(b, m, 7, 0, 0);
	b_device(b, 0, 16ull << 30, "test GPU");
	uint64_t t = 1000, off = 0, flat = 0;
	b->stack = 1;
	for (int l = 0; l < n; l++) {
		b_alloc(b, t++, W_ADDR(l), wbytes[l], 0);
		b_htod(b, t++, W_ADDR(l), wbytes[l], 0);
	}
	for (int l = 0; l < packed; l++)
		flat += wbytes[l];
	b->stack = 2;
	b_alloc(b, t++, FLAT_ADDR, flat, 0);
	for (int l = 0; l < packed; off += wbytes[l++])
		b_dtod(b, t++, FLAT_ADDR + off, W_ADDR(l), wbytes[l], 0);
	for (int l = 0; l < packed; l++)
		b_free(b, t++, W_ADDR(l), 0);
	return t;
}

/* Parameters uploaded one by one, packed into one flat buffer by
 * device-to-device copies and freed (FSDP's FlatParameter, apex): the flat
 * buffer is the weights, Adam's two flat slots made by the first step are
 * optimizer state, though no tensor of their size has a gradient, and the
 * tensors of the packed parameters' sizes made every step their gradients. */
static void test_flattened_parameters_are_weights(void **state)
{
	(void)state;
	const uint64_t wbytes[3] = {1 * MIB, 3 * MIB, 2 * MIB}, flat = 6 * MIB;
	struct vt_model *m = vt_model_new();
	struct builder b;
	uint64_t t = packed_model(&b, m, wbytes, 3, 3);
	for (int s = 0; s < 6; s++) {
		mark_step(&b, t += 1000, s);
		b.stack = 6;
		for (int l = 2; l >= 0; l--)
			b_alloc(&b, t++, GRAD_ADDR(l), wbytes[l], 0);
		for (int l = 2; l >= 0; l--)
			b_free(&b, t++, GRAD_ADDR(l), 0);
		b.stack = 3;
		for (int k = 0; k < 2 && s == 0; k++)
			b_alloc(&b, t++, SLOT_ADDR(0, k), flat, 0);
	}
	vt_model_end_process(m, b.proc);
	vt_model_finish(m);
	vt_classify(m);
	assert_int_equal(category_of(m, FLAT_ADDR), VT_CAT_WEIGHTS);
	assert_int_equal(category_of(m, SLOT_ADDR(0, 0)), VT_CAT_OPTIMIZER);
	assert_int_equal(category_of(m, SLOT_ADDR(0, 1)), VT_CAT_OPTIMIZER);
	/* the packed parameters' sizes are gradient sizes: their .grads */
	assert_int_equal(count_cat(m, VT_CAT_GRADIENTS), 3 * 6);
	vt_model_free(m);
}

/* cuDNN's flattened RNN weights (`flatten_parameters`): the parameters
 * packed into one flat buffer, the backward's one flat `dw` every step,
 * and the momentum made per parameter (views of `dw` as the .grads). No
 * optimizer state of the flat buffer's own size, while a head beside it
 * has its own: the flat buffer still trains, `dw` is its gradient. */
static void test_flat_weights_with_per_parameter_state_train(void **state)
{
	(void)state;
	const uint64_t wbytes[4] = {1 * MIB, 3 * MIB, 2 * MIB, 4 * MIB}, flat = 6 * MIB;
	const uint64_t dw = 0x780000000ull;
	struct vt_model *m = vt_model_new();
	struct builder b;
	uint64_t t = packed_model(&b, m, wbytes, 4, 3);
	for (int s = 0; s < 6; s++) {
		mark_step(&b, t += 1000, s);
		b.stack = 6;
		b_alloc(&b, t++, GRAD_ADDR(3), wbytes[3], 0);
		b_alloc(&b, t++, dw, flat, 0);
		b.stack = 3;
		for (int l = 0; l < 4 && s == 0; l++)
			b_alloc(&b, t++, SLOT_ADDR(l, 0), wbytes[l], 0);
		b_free(&b, t++, dw, 0);
		b_free(&b, t++, GRAD_ADDR(3), 0);
	}
	vt_model_end_process(m, b.proc);
	vt_model_finish(m);
	vt_classify(m);
	assert_int_equal(category_of(m, FLAT_ADDR), VT_CAT_WEIGHTS);
	assert_int_equal(category_of(m, W_ADDR(3)), VT_CAT_WEIGHTS);
	for (int l = 0; l < 4; l++)
		assert_int_equal(category_of(m, SLOT_ADDR(l, 0)), VT_CAT_OPTIMIZER);
	for (uint32_t i = 0; i < m->nallocs; i++)
		if (m->allocs[i].addr == dw)
			assert_int_equal(m->allocs[i].category, VT_CAT_GRADIENTS);
	vt_model_free(m);
}

/* PyTorch's caching allocator at the driver: 2 MiB and 20 MiB segments and
 * larger tensors rounded to 2 MiB. The fixed-size segments are pools; a
 * rounded segment the host filled whole is the tensor it holds. On a device
 * with one allocation of another size (a per-tensor job's bias), the same
 * sizes are tensors. */
static void caching_device(struct builder *b, uint8_t dev, uint64_t base, int odd)
{
	uint64_t t = 1000 + dev * 100;
	b_alloc(b, t++, base, 20 * MIB, dev);
	b_alloc(b, t++, base + 0x10000000ull, 2 * MIB, dev);
	b_htod(b, t++, base + 0x10000000ull + 4096, 64 << 10, dev);
	b_alloc(b, t++, base + 0x20000000ull, 48 * MIB, dev);
	b_htod(b, t++, base + 0x20000000ull, 48 * MIB, dev);
	b_alloc(b, t++, base + 0x30000000ull, 20 * MIB, dev);
	if (odd)
		b_alloc(b, t++, base + 0x40000000ull, 1 * MIB, dev);
}

static void test_caching_allocator_segments_are_pools(void **state)
{
	(void)state;
	struct builder b;
	struct vt_model *m = begin_job(&b);
	b_device(&b, 0, 16ull << 30, "test GPU");
	b_device(&b, 1, 16ull << 30, "test GPU");
	caching_device(&b, 0, 0x100000000ull, 0);
	caching_device(&b, 1, 0x900000000ull, 1);
	vt_model_end_process(m, b.proc);
	vt_model_finish(m);
	vt_classify(m);
	assert_int_equal(category_of(m, 0x100000000ull), VT_CAT_POOL);
	assert_int_equal(category_of(m, 0x110000000ull), VT_CAT_POOL);
	assert_int_equal(category_of(m, 0x130000000ull), VT_CAT_POOL);
	assert_int_not_equal(category_of(m, 0x120000000ull), VT_CAT_POOL);
	for (uint64_t k = 0; k < 5; k++)
		assert_int_not_equal(category_of(m, 0x900000000ull + k * 0x10000000ull),
		                     VT_CAT_POOL);
	vt_model_free(m);
}

static int whole_dataset_findings(struct vt_model *m)
{
	struct vt_findings f;
	vt_findings_find(m, &f);
	int n = 0;
	for (uint32_t i = 0; i < f.n; i++)
		n += f.v[i].kind == VT_FINDING_WHOLE_DATASET;
	vt_findings_free(&f);
	return n;
}

/* A caching segment holds tensors of up to 10 MiB as the allocator packs
 * them: an 8 MiB buffer uploaded once into a 20 MiB segment (a model's
 * density grid) is one tensor, no whole dataset, while a 48 MiB array in
 * a segment of its own still goes through the per-tensor rules. */
static void test_upload_into_a_caching_segment_is_no_dataset(void **state)
{
	(void)state;
	struct builder b;
	struct vt_model *m = begin_job(&b);
	b_device(&b, 0, 16ull << 30, "test GPU");
	caching_device(&b, 0, 0x100000000ull, 0);
	b_htod(&b, 2000, 0x130000000ull + 2 * MIB, 8 * MIB, 0);
	vt_model_end_process(m, b.proc);
	vt_model_finish(m);
	vt_classify(m);
	assert_int_equal(category_of(m, 0x130000000ull), VT_CAT_POOL);
	assert_int_equal(whole_dataset_findings(m), 1); /* the 48 MiB array alone */
	vt_model_free(m);
}

/* A caching allocator's device in training: the segments made during the
 * steps that no weight's size explains are kept for the passes' tensors
 * (activations, not confidently); the ones a weight's size explains, made
 * in the first step, its state (two a weight: a kept gradient and a slot
 * or two slots, which the twin rules settle). */
static struct vt_model *cached_training_job(int stream_ordered_beside)
{
	struct builder b;
	struct vt_model *m = begin_job(&b);
	b_device(&b, 0, 16ull << 30, "test GPU");
	uint64_t t = 1;
	b.stack = 4; /* DALI's decoder output, from the driver's stream-ordered pool */
	if (stream_ordered_beside)
		b_event(&b, VT_REC_ALLOC, t++, 0x700000000ull, 4816896, 0, VT_ALLOC_ASYNC, 0,
		        API_ALLOC_ASYNC);
	b.stack = 1;
	b_alloc(&b, t++, 0x100000000ull, 2 * MIB, 0); /* biases, packed */
	b_htod(&b, t++, 0x100000000ull, 64 << 10, 0);
	b_htod(&b, t++, 0x100000000ull + 65536, 64 << 10, 0);
	b_alloc(&b, t++, W_ADDR(0), 8 * MIB, 0);
	b_htod(&b, t++, W_ADDR(0), 8 * MIB, 0);
	b_alloc(&b, t++, W_ADDR(1), 12 * MIB, 0);
	b_htod(&b, t++, W_ADDR(1), 12 * MIB, 0);
	for (int s = 0; s < 6; s++) {
		char text[24]; /* "step " and any int */
		snprintf(text, sizeof text, "step %d", s);
		b_mark(&b, t++, text);
		b.stack = 2;
		if (s == 0) {
			b_alloc(&b, t++, 0x300000000ull, 20 * MIB, 0);
			b_alloc(&b, t++, 0x310000000ull, 64 * MIB, 0);
			b.stack = 3; /* exp_avg, exp_avg_sq: zeros_like(param) */
			for (int l = 0; l < 2; l++)
				for (int k = 0; k < 2; k++)
					b_alloc(&b, t++,
					        0xa00000000ull +
					            (uint64_t)(2 * l + k) * 0x10000000ull,
					        (l ? 12 : 8) * MIB, 0);
		}
		t += 1000;
	}
	vt_model_end_process(m, b.proc);
	vt_model_finish(m);
	vt_classify(m);
	return m;
}

static void test_cached_segments_made_in_training_are_activations(void **state)
{
	(void)state;
	struct vt_model *m = cached_training_job(0);
	assert_int_equal(category_of(m, 0x310000000ull), VT_CAT_ACTIVATIONS);
	assert_true(alloc_at(m, 0x310000000ull)->confidence < VT_CONFIDENT);
	assert_int_equal(category_of(m, 0x300000000ull), VT_CAT_POOL);
	for (int k = 0; k < 4; k++)
		assert_int_not_equal(category_of(m, 0xa00000000ull + (uint64_t)k * 0x10000000ull),
		                     VT_CAT_ACTIVATIONS);
	vt_model_free(m);
}

/* The driver's stream-ordered pool beside the caching allocator (DALI's
 * buffers next to PyTorch's segments): its odd sizes do not hide the
 * caching allocator's. */
static void test_stream_ordered_beside_caching_segments(void **state)
{
	(void)state;
	struct vt_model *m = cached_training_job(1);
	assert_int_equal(category_of(m, 0x300000000ull), VT_CAT_POOL);
	assert_int_equal(category_of(m, 0x310000000ull), VT_CAT_ACTIVATIONS);
	assert_int_not_equal(category_of(m, 0x700000000ull), VT_CAT_POOL);
	vt_model_free(m);
}

/* TensorFlow's BFC allocator with allow_growth: regions of 2, 4 and then
 * 64 MiB (the first request that did not fit rounded up), each kept: pools,
 * the last one though most of it is one dataset upload. On a device whose
 * sizes repeat (2, 4, 4 MiB) the same tensors are not regions. */
static void test_growing_regions_are_pools(void **state)
{
	(void)state;
	struct builder b;
	struct vt_model *m = begin_job(&b);
	b_device(&b, 0, 16ull << 30, "test GPU");
	b_device(&b, 1, 16ull << 30, "test GPU");
	const uint64_t grow[3] = {2 * MIB, 4 * MIB, 64 * MIB},
	               flat[3] = {2 * MIB, 4 * MIB, 4 * MIB};
	uint64_t t = 1000;
	for (int k = 0; k < 3; k++) {
		b_alloc(&b, t++, 0x100000000ull + (uint64_t)k * 0x10000000ull, grow[k], 0);
		b_alloc(&b, t++, 0x900000000ull + (uint64_t)k * 0x10000000ull, flat[k], 1);
	}
	b_htod(&b, t++, 0x120000000ull, 40 * MIB, 0);
	b_htod(&b, t++, 0x120000000ull + 48 * MIB, 256 << 10, 0);
	vt_model_end_process(m, b.proc);
	vt_model_finish(m);
	vt_classify(m);
	for (uint64_t k = 0; k < 3; k++) {
		assert_int_equal(category_of(m, 0x100000000ull + k * 0x10000000ull), VT_CAT_POOL);
		assert_int_not_equal(category_of(m, 0x900000000ull + k * 0x10000000ull),
		                     VT_CAT_POOL);
	}
	vt_model_free(m);
}

/* Keras scoring a saved model under memory growth: regions of 2, 4, 128
 * and 128 MiB. The first two hold the loaded weights (pools); the third
 * holds one array, converted again by `predict` into the chunk `evaluate`
 * left (the array, not a region: two whole-dataset uploads of the array's
 * bytes, not the region's); the last, made during the passes and never
 * written from the host in a job that never trains, holds what they
 * computed. */
static void test_regions_of_a_scoring_job(void **state)
{
	(void)state;
	const uint64_t base = 0x100000000ull, x_bytes = 120 * MIB;
	const uint64_t region[4] = {2 * MIB, 4 * MIB, 128 * MIB, 128 * MIB};
	struct builder b;
	struct vt_model *m = begin_job(&b);
	uint64_t t = 1000;
	for (uint64_t k = 0; k < 2; k++)
		b_alloc(&b, t++, base + k * 0x10000000ull, region[k], 0);
	for (uint64_t k = 0; k < 10; k++) /* weights, one small tensor each */
		b_htod(&b, t++, base + k * 64 * 1024, 48 * 1024, 0);
	b_htod(&b, t++, base + 0x10000000ull, 512 * 1024, 0);
	b_alloc(&b, t++, base + 0x20000000ull, region[2], 0);
	b.stack = 2;
	b_htod(&b, t++, base + 0x20000000ull, x_bytes, 0); /* evaluate(x) */
	b_alloc(&b, t + 1000, base + 0x30000000ull, region[3], 0);
	b_htod(&b, t + 5000, base + 0x20000000ull, x_bytes, 0); /* predict(x) */
	classified_job(&b);
	assert_int_equal(category_of(m, base), VT_CAT_POOL);
	assert_int_equal(category_of(m, base + 0x10000000ull), VT_CAT_POOL);
	assert_int_not_equal(category_of(m, base + 0x20000000ull), VT_CAT_POOL);
	assert_int_equal(dataset_findings(m, x_bytes), 2);
	assert_guess(alloc_at(m, base + 0x30000000ull), VT_CAT_ACTIVATIONS, VT_CAT_POOL);
	vt_model_free(m);
}

/* XLA's BFC allocator without preallocation: a request larger than the
 * region size it reached gets a region of its own size, and the next
 * region is no larger (the size doubles only after a region that did not
 * have to grow): 2, 8, 16, 16, 64, 64 MiB are one allocator's regions. */
static void test_regions_after_a_large_request_are_pools(void **state)
{
	(void)state;
	struct builder b;
	struct vt_model *m = begin_job(&b);
	b_device(&b, 0, 16ull << 30, "test GPU");
	const uint64_t region[6] = {2 * MIB, 8 * MIB, 16 * MIB, 16 * MIB, 64 * MIB, 64 * MIB};
	uint64_t t = 1000;
	for (int k = 0; k < 6; k++)
		b_alloc(&b, t++, 0x100000000ull + (uint64_t)k * 0x10000000ull, region[k], 0);
	b_htod(&b, t++, 0x140000000ull, 40 * MIB, 0);
	b_htod(&b, t++, 0x140000000ull + 48 * MIB, 256 << 10, 0);
	classified_job(&b);
	for (uint64_t k = 0; k < 6; k++)
		assert_int_equal(category_of(m, 0x100000000ull + k * 0x10000000ull), VT_CAT_POOL);
	vt_model_free(m);
}

/* One VMM handle mapped at va. */
static void b_chunk(struct builder *b, uint64_t t, uint64_t handle, uint64_t va, uint64_t bytes)
{
	b_event(b, VT_REC_ALLOC, t, handle, bytes, 0, VT_ALLOC_VMM, 0, API_CREATE);
	b_event(b, VT_REC_MAP, t + 1, va, bytes, handle, 0, 0, API_MAP);
}

/* An arena of physical chunks mapped back to back (XLA's virtual-memory
 * allocator): the chunk next to one with batches at several offsets is the
 * same allocator's, though nothing was copied into it; a chunk the host
 * filled whole is judged by that upload; a chunk mapped apart is not the
 * arena's. */
static void test_chunk_next_to_a_pool_chunk_is_pool(void **state)
{
	(void)state;
	struct builder b;
	struct vt_model *m = begin_job(&b);
	b_device(&b, 0, 16ull << 30, "test GPU");
	const uint64_t va = 0x7000000000ull;
	b_chunk(&b, 10, 0x11, va, 16 * MIB);
	b_chunk(&b, 20, 0x12, va + 16 * MIB, 32 * MIB);
	b_chunk(&b, 30, 0x13, va + 48 * MIB, 8 * MIB);
	b_chunk(&b, 40, 0x14, va + 256 * MIB, 4 * MIB);
	for (int k = 0; k < 4; k++) /* batches at offsets of the first chunk */
		b_htod(&b, 100 + (uint64_t)k, va + (uint64_t)k * 2 * MIB, 2 * MIB, 0);
	b_htod(&b, 200, va + 48 * MIB, 8 * MIB, 0); /* the third filled whole */
	vt_model_end_process(m, b.proc);
	vt_model_finish(m);
	vt_classify(m);
	assert_int_equal(category_of(m, 0x11), VT_CAT_POOL);
	assert_int_equal(category_of(m, 0x12), VT_CAT_POOL);
	assert_int_not_equal(category_of(m, 0x13), VT_CAT_POOL);
	assert_int_not_equal(category_of(m, 0x14), VT_CAT_POOL);
	vt_model_free(m);
}

/* One VMM handle unmapped from va and released: what an allocator's
 * empty_cache does to a chunk with no block in use. */
static void b_unchunk(struct builder *b, uint64_t t, uint64_t handle, uint64_t va, uint64_t bytes)
{
	b_event(b, VT_REC_UNMAP, t, va, bytes, 0, 0, 0, API_UNMAP);
	b_event(b, VT_REC_FREE, t + 1, handle, 0, 0, VT_ALLOC_VMM, 0, API_RELEASE);
}

/* PyTorch's expandable segments map a chunk when the step needs memory and
 * unmap it at empty_cache once no block over it is in use: a chunk mapped
 * and released within one step held only that step's temporaries (anything
 * kept would have kept it mapped), so it is not the arena's pool though it
 * sits next to one; a chunk kept across steps stays the pool's. */
static void test_chunk_released_within_a_step_is_not_pool(void **state)
{
	(void)state;
	struct builder b;
	struct vt_model *m = begin_job(&b);
	b_device(&b, 0, 16ull << 30, "test GPU");
	const uint64_t va = 0x7000000000ull;
	uint64_t t = 10;
	b_chunk(&b, t, 0x11, va, 20 * MIB);
	b_chunk(&b, t += 10, 0x12, va + 20 * MIB, 20 * MIB);
	for (int s = 0; s < 6; s++) {
		mark_step(&b, t += 1000, s);
		b_htod(&b, t += 10, va + (uint64_t)(s % 3) * 2 * MIB, 2 * MIB, 0); /* batches */
		b_chunk(&b, t += 10, 0x20 + (uint64_t)s, va + 40 * MIB, 20 * MIB);
		b_unchunk(&b, t += 100, 0x20 + (uint64_t)s, va + 40 * MIB, 20 * MIB);
	}
	b_chunk(&b, t += 1000, 0x30, va + 40 * MIB, 20 * MIB); /* evaluation, after */
	vt_model_end_process(m, b.proc);
	vt_model_finish(m);
	vt_classify(m);
	assert_int_equal(category_of(m, 0x11), VT_CAT_POOL);
	assert_int_equal(category_of(m, 0x12), VT_CAT_POOL);
	for (uint64_t s = 0; s < 6; s++)
		assert_int_not_equal(category_of(m, 0x20 + s), VT_CAT_POOL);
	vt_model_free(m);
}

/* A job that uploads a table and builds its working buffers on the device
 * before its rounds (XGBoost: the quantised matrix, histograms, prediction
 * caches), each round making transients on the device. Returns
 * the model, classified. */
static struct vt_model *device_buffers_job(void)
{
	struct builder b;
	begin_job(&b);
	b_device(&b, 0, 16ull << 30, "test GPU");
	uint64_t t = 1000;
	b.stack = 2;
	b_alloc(&b, t++, 0x900000000ull, 64 * MIB, 0);
	b_htod(&b, t++, 0x900000000ull, 64 * MIB, 0);
	b.stack = 3;
	b_alloc(&b, t++, 0x100000000ull, 32 * MIB, 0); /* made on the device, kept */
	b_alloc(&b, t++, 0x110000000ull, 8 * MIB, 0);
	for (int s = 0; s < 8; s++) {
		mark_step(&b, t += 1000, s);
		b.stack = 5;
		b_alloc(&b, t++, 0x300000000ull, 3 * MIB, 0);
		b_alloc(&b, t++, 0x310000000ull, 1 * MIB, 0);
		b_free(&b, t++, 0x300000000ull, 0);
		b_free(&b, t++, 0x310000000ull, 0);
	}
	return classified_job(&b);
}

/* A buffer made on the device before the steps and kept is a weight only
 * where weights show on that device by other evidence (gradient twins
 * here): alone, it is the job's own working memory, with weights the
 * alternative; beside trained weights, it is a weight updated without a
 * gradient of its size (an embedding updated by rows, an EMA copy). */
static void test_device_made_buffers_need_a_weight_beside(void **state)
{
	(void)state;
	struct vt_model *m = device_buffers_job();
	assert_int_equal(category_of(m, 0x100000000ull), VT_CAT_ACTIVATIONS);
	assert_int_equal(category_of(m, 0x110000000ull), VT_CAT_ACTIVATIONS);
	vt_model_free(m);
	struct job j = {.layers = 3,
	                .steps = 8,
	                .markers = 1,
	                .table = 1,
	                .wbytes = {4 * MIB, 2 * MIB, 1 * MIB}};
	m = run_job(&j);
	assert_int_equal(category_of(m, W_ADDR(0)), VT_CAT_WEIGHTS);
	assert_int_equal(category_of(m, TABLE_ADDR), VT_CAT_WEIGHTS);
	vt_model_free(m);
}

/* A rollout buffer (CleanRL's PPO storage): made and filled whole from the
 * host once (zeros; `zeroed_on_device`: made by `torch.zeros(device=...)`,
 * skrl's RandomMemory), then every step the batch the host sent is copied
 * into it on the device, a row at a time. A frozen weight is never written
 * again: this is the data the job trains on, not confident (what arrived
 * whole was no data), so no whole-dataset finding. */
static void rollout_store(int zeroed_on_device)
{
	struct builder b;
	begin_job(&b);
	b_device(&b, 0, 16ull << 30, "test GPU");
	const uint64_t store = 0x900000000ull, batch = 0x200000000ull;
	uint64_t t = 1000;
	b.stack = 2;
	b_alloc(&b, t++, store, 32 * MIB, 0);
	if (!zeroed_on_device)
		b_htod(&b, t++, store, 32 * MIB, 0);
	for (int s = 0; s < 8; s++) {
		mark_step(&b, t += 1000, s);
		b.stack = 4;
		b_alloc(&b, t++, batch, 1 * MIB, 0);
		b_htod(&b, t++, batch, 1 * MIB, 0);
		b_dtod(&b, t++, store + (uint64_t)s * MIB, batch, 1 * MIB, 0);
		b.stack = 5;
		b_alloc(&b, t++, 0x300000000ull, 3 * MIB, 0);
		b_free(&b, t++, 0x300000000ull, 0);
		b_free(&b, t++, batch, 0);
	}
	struct vt_model *m = classified_job(&b);
	assert_int_equal(category_of(m, store), VT_CAT_DATASET);
	assert_int_equal(whole_dataset_flags(m), 0);
	vt_model_free(m);
}

static void test_rollout_store_written_from_batches(void **state)
{
	(void)state;
	rollout_store(0);
	rollout_store(1);
}

/* Parameters and two optimizer slots each, made on the device before the
 * steps (JAX's init under jit): the next event's time. */
static uint64_t donated_model(struct builder *b, const uint64_t *wb)
{
	begin_job(b);
	b_device(b, 0, 16ull << 30, "test GPU");
	uint64_t t = 1000;
	b->stack = 3;
	for (uint64_t l = 0; l < 3; l++)
		b_alloc(b, t++, W_ADDR(l), wb[l], 0);
	for (uint64_t k = 0; k < 2; k++)
		for (uint64_t l = 0; l < 3; l++)
			b_alloc(b, t++, SLOT_ADDR(l, k), wb[l], 0);
	return t;
}

/* A jitted step with donated parameters (JAX): the parameters and the
 * optimizer's two slots per parameter made on the device before the steps
 * and updated in place, each step running in one temp buffer that holds
 * the gradients, so no gradient shows. The sizes come three at a time, the
 * parameter first: a model and its state, not working memory. */
static void test_donated_model_and_state_made_on_the_device(void **state)
{
	(void)state;
	static const uint64_t wb[3] = {4 * MIB, 3 * MIB, 1 * MIB};
	struct builder b;
	uint64_t t = donated_model(&b, wb);
	for (int s = 0; s < 8; s++) {
		mark_step(&b, t += 1000, s);
		b.stack = 5;
		b_alloc(&b, t++, 0x300000000ull, 40 * MIB, 0); /* the step's temp buffer */
		b_free(&b, t++, 0x300000000ull, 0);
	}
	struct vt_model *m = classified_job(&b);
	for (uint64_t l = 0; l < 3; l++) {
		assert_int_equal(category_of(m, W_ADDR(l)), VT_CAT_WEIGHTS);
		for (uint64_t k = 0; k < 2; k++)
			assert_int_equal(category_of(m, SLOT_ADDR(l, k)), VT_CAT_OPTIMIZER);
	}
	vt_model_free(m);
}

/* The same step with an evaluation pass every fourth step, whose temp
 * buffer is the first parameter's size: read as a gradient by its size,
 * but made in a quarter of the steps, it is no sign of where the steps'
 * gradients are, and the step's own temp buffer is still the pool that
 * holds them. */
static void test_evaluation_temp_the_size_of_a_weight_hides_no_gradient(void **state)
{
	(void)state;
	static const uint64_t wb[3] = {4 * MIB, 3 * MIB, 1 * MIB};
	const uint64_t temp = 0x300000000ull, eval = 0x310000000ull;
	struct builder b;
	uint64_t t = donated_model(&b, wb);
	for (int s = 0; s < 12; s++) {
		mark_step(&b, t += 1000, s);
		b.stack = 5;
		b_alloc(&b, t++, temp, 40 * MIB, 0);
		b_free(&b, t++, temp, 0);
		if (s % 4 == 3) {
			b.stack = 6;
			b_alloc(&b, t++, eval, wb[0], 0);
			b_free(&b, t++, eval, 0);
		}
	}
	struct vt_model *m = classified_job(&b);
	const struct vt_alloc *a = NULL;
	for (uint32_t i = 0; i < m->nallocs; i++)
		if (m->allocs[i].addr == temp)
			a = &m->allocs[i];
	assert_non_null(a);
	assert_int_equal(a->category, VT_CAT_POOL);
	vt_model_free(m);
}

/* timm's ModelEmaV2: a `deepcopy` of the model made on the device before
 * training, each copy filled by a device-to-device copy of its weight and
 * refreshed every step from three temporaries of the weight's size; Adam's
 * slots made at the first step. Long-lived, a weight's size, made after
 * it, like a slot: who wrote the bytes says the copies are the model's.
 * (The slots beside per-step temporaries of the weights' sizes are another
 * matter: those temporaries read as more gradients a step.) */
static void test_ema_deepcopy_before_training(void **state)
{
	(void)state;
	const uint64_t w[3] = {4 * MIB, 2 * MIB, 1 * MIB};
	struct builder b;
	struct vt_model *m = begin_job(&b);
	uint64_t t = load_weights(&b, 1, w, 3);
	b.stack = 7;
	for (int l = 0; l < 3; l++) {
		b_alloc(&b, t++, EMA_ADDR(l), w[l], 0);
		b_dtod(&b, t++, EMA_ADDR(l), W_ADDR(l), w[l], 0);
	}
	for (int s = 0; s < 10; s++) {
		mark_step(&b, t++, s);
		t = three_layer_step(&b, t, w, s == 0);
		b.stack = 8;
		for (int l = 0; l < 3; l++) {
			for (uint64_t k = 0; k < 3; k++)
				b_alloc(&b, t++, 0xb00000000ull + k * 0x10000000ull, w[l], 0);
			b_free(&b, t++, 0xb00000000ull, 0);
			b_free(&b, t++, 0xb10000000ull, 0);
			b_dtod(&b, t++, EMA_ADDR(l), 0xb20000000ull, w[l], 0);
			b_free(&b, t++, 0xb20000000ull, 0);
		}
		t += 1000;
	}
	m = classified_job(&b);
	for (int l = 0; l < 3; l++) {
		assert_int_equal(category_of(m, W_ADDR(l)), VT_CAT_WEIGHTS);
		assert_int_equal(category_of(m, EMA_ADDR(l)), VT_CAT_WEIGHTS);
		assert_int_equal(alloc_at(m, EMA_ADDR(l))->confidence, 70);
	}
	vt_model_free(m);
}

/* Adam's two slots and an EMA copy per weight, all made in the first step
 * and kept, while the gradients come every step and live through the
 * optimizer's step: none of the three kept twins is a gradient; the copy,
 * made after the slots, is a weight. */
static void test_ema_copy_beside_per_step_gradients(void **state)
{
	(void)state;
	struct job j = {
	    .layers = 3, .steps = 8, .markers = 1, .ema = 1, .wbytes = {4 * MIB, 2 * MIB, 1 * MIB}};
	struct vt_model *m = run_job(&j);
	for (uint64_t l = 0; l < 3; l++) {
		assert_int_equal(category_of(m, W_ADDR(l)), VT_CAT_WEIGHTS);
		assert_int_equal(category_of(m, EMA_ADDR(l)), VT_CAT_WEIGHTS);
		assert_int_equal(category_of(m, 0x500000000ull + l * 0x10000000ull),
		                 VT_CAT_GRADIENTS);
		for (uint64_t k = 0; k < 2; k++)
			assert_int_equal(
			    category_of(m, 0xa00000000ull + (2 * l + k) * 0x10000000ull),
			    VT_CAT_OPTIMIZER);
	}
	vt_model_free(m);
}

static void test_pool_region(void **state)
{
	(void)state;
	struct builder b;
	struct vt_model *m = begin_job(&b);
	b_alloc(&b, 1, 0x10000000, 512 * MIB, 0);
	b_htod(&b, 2, 0x10000000 + 64 * MIB, 256 * MIB, 0); /* dataset inside */
	for (int s = 0; s < 10; s++)                        /* batches at two offsets */
		b_htod(&b, 10 + (uint64_t)s * 100, 0x10000000 + (uint64_t)(s % 2) * 4 * MIB,
		       4 * MIB, 0);
	vt_model_finish(m);
	vt_classify(m);
	assert_int_equal(m->allocs[0].category, VT_CAT_POOL);
	assert_true(m->procs[0].pool_mode);
	struct vt_findings f;
	vt_findings_find(m, &f);
	int whole = 0, pool = 0;
	for (uint32_t i = 0; i < f.n; i++) {
		if (f.v[i].kind == VT_FINDING_WHOLE_DATASET) {
			whole++;
			assert_int_equal(f.v[i].bytes[0], 256 * MIB);
		}
		pool += f.v[i].kind == VT_FINDING_OPAQUE_POOL;
	}
	assert_int_equal(whole, 1);
	assert_int_equal(pool, 1);
	vt_findings_free(&f);
	vt_model_free(m);
}

/* A BFC-like region: an array converted whole by `evaluate` and again by
 * `predict` (each call converts the numpy array it is given, the second
 * tensor placed where the first was freed): two uploads, two findings.
 * The batch slots beside it, refilled five times each, are none. */
static void test_array_converted_twice_into_a_pool(void **state)
{
	(void)state;
	struct builder b;
	struct vt_model *m = begin_job(&b);
	b_alloc(&b, 1, 0x10000000, 512 * MIB, 0);
	b.stack = 2;
	b_htod(&b, 2, 0x10000000 + 64 * MIB, 256 * MIB, 0);
	b.stack = 3;
	for (int s = 0; s < 10; s++)
		b_htod(&b, 10 + (uint64_t)s * 100, 0x10000000 + (uint64_t)(s % 2) * 4 * MIB,
		       4 * MIB, 0);
	b.stack = 4;
	b_htod(&b, 5000, 0x10000000 + 64 * MIB, 256 * MIB, 0);
	vt_model_finish(m);
	vt_classify(m);
	assert_int_equal(m->allocs[0].category, VT_CAT_POOL);
	assert_int_equal(dataset_findings(m, 256 * MIB), 2);
	vt_model_free(m);
}

/* One 512 MiB region: the data uploaded whole into it, then a batch slot
 * refilled every step from its own line, its first batch placed in a
 * fresh range from another line (tf.data's prefetch_to_device: the
 * buffer filled before the loop, refilled while it runs). The first batch
 * is a batch, not a second array: one finding, the data's. */
static void test_first_batch_in_a_pool_is_no_dataset(void **state)
{
	(void)state;
	struct builder b;
	struct vt_model *m = begin_job(&b);
	b_alloc(&b, 1, 0x10000000, 512 * MIB, 0);
	b.stack = 2;
	b_htod(&b, 2, 0x10000000 + 64 * MIB, 96 * MIB, 0);
	b.stack = 3;
	b_htod(&b, 3, 0x10000000 + 200 * MIB, 9 * MIB, 0);
	b.stack = 4;
	for (int s = 0; s < 10; s++)
		b_htod(&b, 10 + (uint64_t)s * 100, 0x10000000 + (uint64_t)(s % 2) * 9 * MIB,
		       9 * MIB, 0);
	vt_model_finish(m);
	vt_classify(m);
	assert_int_equal(dataset_findings(m, 96 * MIB), 1);
	assert_int_equal(whole_dataset_flags(m), 1);
	vt_model_free(m);
}

/* Into a BFC-like job's regions: x converted into a new region, then
 * `next` uploaded into an older one through call path `next_stack`; then
 * weights a loader restores tensor by tensor (one site, many tensors)
 * and a small array of a site of its own. -> the bytes of the one
 * whole-dataset finding. */
static uint64_t data_then_next_upload(uint32_t next_stack)
{
	const uint64_t old_region = 0x10000000, new_region = 0x40000000;
	struct builder b;
	struct vt_model *m = begin_job(&b);
	b_alloc(&b, 1, old_region, 2 * MIB, 0);
	b_alloc(&b, 2, new_region, 512 * MIB, 0);
	b.stack = 2;
	b_htod(&b, 3, new_region, 256 * MIB, 0);
	b.stack = next_stack;
	b_htod(&b, 4, old_region, 256 << 10, 0);
	b.stack = 4;
	for (uint64_t k = 0; k < 4; k++)
		b_htod(&b, 5 + k, old_region + (1 + k) * (256 << 10), 64 << 10, 0);
	b.stack = 5;
	b_htod(&b, 20, old_region + 6 * (256 << 10), 128 << 10, 0);
	vt_model_finish(m);
	vt_classify(m);
	struct vt_findings f;
	vt_findings_find(m, &f);
	uint64_t bytes = 0;
	int n = 0;
	for (uint32_t i = 0; i < f.n; i++)
		if (f.v[i].kind == VT_FINDING_WHOLE_DATASET) {
			bytes = vt_finding_bytes_max(&f.v[i]);
			n++;
		}
	assert_int_equal(n, 1);
	vt_findings_free(&f);
	vt_model_free(m);
	return bytes;
}

/* Labels y converted right after x by the same call, placed in another
 * region: one finding with both. The same upload through a call path of
 * its own (a model loaded right after the data it will score) is not the
 * data's: nothing but the call path tells the two apart. */
static void test_labels_in_another_region_join_the_data(void **state)
{
	(void)state;
	assert_int_equal(data_then_next_upload(2), 256 * MIB + (256 << 10));
	assert_int_equal(data_then_next_upload(3), 256 * MIB);
}

/* The whole-dataset findings' bytes (n of them at most) of model m. */
static int dataset_finding_bytes(const struct vt_model *m, uint64_t *bytes, int n)
{
	struct vt_findings f;
	vt_findings_find(m, &f);
	int k = 0;
	for (uint32_t i = 0; i < f.n; i++)
		if (f.v[i].kind == VT_FINDING_WHOLE_DATASET && k < n)
			bytes[k++] = vt_finding_bytes_max(&f.v[i]);
	vt_findings_free(&f);
	return k;
}

/* A table uploaded column by column through one call path (cuDF's
 * from_pandas), each column too small to be flagged alone, all of them
 * alive together: one finding with the table. The verdicts are set as the
 * stack's name would set them (dataset, 90). Columns that replace one
 * another (one alive at a time) are no table. */
static void columns_of(int one_at_a_time, uint64_t *bytes, int *n)
{
	struct builder b;
	struct vt_model *m = begin_job(&b);
	b.stack = 7;
	for (uint64_t k = 0; k < 8; k++) {
		b_alloc(&b, 10 + 10 * k, 0x10000000 + k * MIB, 512 << 10, 0);
		b_htod(&b, 11 + 10 * k, 0x10000000 + k * MIB, 512 << 10, 0);
		if (one_at_a_time)
			b_free(&b, 12 + 10 * k, 0x10000000 + k * MIB, 0);
	}
	vt_model_finish(m);
	vt_classify(m);
	for (uint32_t i = 0; i < m->nallocs; i++) {
		m->allocs[i].category = VT_CAT_DATASET;
		m->allocs[i].confidence = 90;
	}
	*n = dataset_finding_bytes(m, bytes, 2);
	vt_model_free(m);
}

static void test_table_uploaded_by_column_is_one_finding(void **state)
{
	(void)state;
	uint64_t bytes[2];
	int n;
	columns_of(0, bytes, &n);
	assert_int_equal(n, 1);
	assert_int_equal(bytes[0], 4 * MIB);
	columns_of(1, bytes, &n);
	assert_int_equal(n, 0);
}

/* Keras fit(x, (y, teacher_logits)) into a BFC region: three arrays
 * converted one after the other by one call path, y and the logits in
 * another region than x, the logits as large as a dataset but from a site
 * that filled three: one finding with all three. The batch indices
 * uploaded next, by another path, are not the data's. */
static void test_arrays_converted_in_a_row_join_the_data(void **state)
{
	(void)state;
	const uint64_t small = 0x10000000, big = 0x40000000;
	struct builder b;
	struct vt_model *m = begin_job(&b);
	b_alloc(&b, 1, small, 8 * MIB, 0);
	b_alloc(&b, 2, big, 512 * MIB, 0);
	b.stack = 2;
	b_htod(&b, 3, big, 256 * MIB, 0);
	b_htod(&b, 4, small, 256 << 10, 0);
	b_htod(&b, 5, small + MIB, 2 * MIB, 0);
	b.stack = 3;
	for (uint64_t k = 0; k < 6; k++)
		b_htod(&b, 10 + k, small + 4 * MIB, 2048, 0);
	vt_model_finish(m);
	vt_classify(m);
	uint64_t bytes[2];
	assert_int_equal(dataset_finding_bytes(m, bytes, 2), 1);
	assert_int_equal(bytes[0], 258 * MIB + (256 << 10));
	vt_model_free(m);
}

/* BFC with allow_growth: regions of 4, 4, 8 and 64 MiB (a 3 MiB request
 * grew the first; the region size starts at 2 MiB), all pools, but the
 * 64 MiB one made for a 40 MiB array uploaded whole: FindChunkPtr does not
 * split a chunk less than twice the request, so the array owns the region
 * and the region is that array (data here). 2, 4, 4 MiB is no BFC. */
static void test_region_made_for_one_array_is_that_array(void **state)
{
	(void)state;
	struct builder b;
	struct vt_model *m = begin_job(&b);
	const uint64_t sizes[4] = {4 * MIB, 4 * MIB, 8 * MIB, 64 * MIB};
	for (uint64_t k = 0; k < 4; k++)
		b_alloc(&b, 1 + k, 0x100000000ull + k * 0x10000000ull, sizes[k], 0);
	b.stack = 2;
	b_htod(&b, 10, 0x130000000ull, 40 * MIB, 0);
	vt_model_end_process(m, b.proc);
	vt_model_finish(m);
	vt_classify(m);
	for (uint64_t k = 0; k < 3; k++)
		assert_int_equal(category_of(m, 0x100000000ull + k * 0x10000000ull), VT_CAT_POOL);
	assert_int_equal(category_of(m, 0x130000000ull), VT_CAT_DATASET);
	vt_model_free(m);
}

/* A server whose loading the steps overlap (its passes read as steps from
 * the first): q, k and v uploaded, concatenated into one fused weight by
 * device-to-device copies, the pieces dropped at once. The fused tensor,
 * made after the first step, is weights: its sources were staging copies
 * that lived a moment of what it lives. */
static void test_fused_from_staging_copies_is_weights(void **state)
{
	(void)state;
	const uint64_t piece = 1 * MIB, fused = 0x700000000ull;
	struct builder b;
	struct vt_model *m = begin_job(&b);
	uint64_t t = 1000;
	for (int s = 0; s < 8; s++) {
		mark_step(&b, t += 1000, s);
		b.stack = 6;
		b_alloc(&b, t++, 0x300000000ull, 4 * MIB, 0);
		b_free(&b, t++, 0x300000000ull, 0);
		if (s != 1)
			continue;
		b.stack = 1;
		for (uint64_t k = 0; k < 3; k++) {
			b_alloc(&b, t++, W_ADDR(k), piece, 0);
			b_htod(&b, t++, W_ADDR(k), piece, 0);
		}
		b.stack = 2;
		b_alloc(&b, t++, fused, 3 * piece, 0);
		for (uint64_t k = 0; k < 3; k++)
			b_dtod(&b, t++, fused + k * piece, W_ADDR(k), piece, 0);
		for (uint64_t k = 0; k < 3; k++)
			b_free(&b, t++, W_ADDR(k), 0);
	}
	vt_model_end_process(m, b.proc);
	vt_model_finish(m);
	vt_classify(m);
	assert_int_equal(category_of(m, fused), VT_CAT_WEIGHTS);
	vt_model_free(m);
}

/* Data reassembled on the device: two arrays uploaded whole, copied into
 * one matrix by device-to-device copies (cuML's column-major matrix from a
 * cuDF table's columns), batches then sliced out of the arrays every step.
 * The matrix is data too: who wrote its bytes says so, where alone it would
 * read as an early weight. */
static void test_matrix_assembled_from_data_is_data(void **state)
{
	(void)state;
	const uint64_t col = 0x200000000ull, matrix = 0x700000000ull, batch = 0x300000000ull;
	struct builder b;
	struct vt_model *m = begin_job(&b);
	uint64_t t = 1000;
	b.stack = 1;
	for (uint64_t k = 0; k < 2; k++) {
		b_alloc(&b, t++, col + k * 0x10000000ull, 32 * MIB, 0);
		b_htod(&b, t++, col + k * 0x10000000ull, 32 * MIB, 0);
	}
	b.stack = 2;
	b_alloc(&b, t++, matrix, 64 * MIB, 0);
	for (uint64_t k = 0; k < 2; k++)
		b_dtod(&b, t++, matrix + k * 32 * MIB, col + k * 0x10000000ull, 32 * MIB, 0);
	for (int s = 0; s < 8; s++) {
		mark_step(&b, t += 1000, s);
		b.stack = 3;
		b_alloc(&b, t++, batch, 1 * MIB, 0);
		for (uint64_t k = 0; k < 2; k++)
			b_dtod(&b, t++, batch, col + k * 0x10000000ull + (uint64_t)s * MIB,
			       512 << 10, 0);
		b_free(&b, t++, batch, 0);
	}
	vt_model_end_process(m, b.proc);
	vt_model_finish(m);
	vt_classify(m);
	assert_int_equal(category_of(m, col), VT_CAT_DATASET);
	assert_int_equal(category_of(m, matrix), VT_CAT_DATASET);
	vt_model_free(m);
}

/* A replay buffer's storage: one buffer per key, each written from the
 * host one row at a time as samples come, as many rows each: a table of
 * training data, not allocator regions. A region beside them with tensors
 * of several sizes, and a row-written buffer with no sibling, stay pools;
 * no whole-dataset finding (the table never arrives whole). */
static void test_row_store_is_a_dataset(void **state)
{
	(void)state;
	const uint64_t obs = 0x10000000, act = 0x20000000, region = 0x30000000, lone = 0x40000000;
	struct builder b;
	struct vt_model *m = begin_job(&b);
	uint64_t t = 1;
	b_alloc(&b, t++, obs, 256 * 4096, 0);
	b_alloc(&b, t++, act, 256 * 8, 0);
	b_alloc(&b, t++, region, 16 * MIB, 0);
	b_alloc(&b, t++, lone, 128 * 4096, 0);
	for (uint64_t k = 0; k < 40; k++) {
		b_htod(&b, t++, obs + k * 4096, 4096, 0);
		b_htod(&b, t++, act + k * 8, 8, 0);
		if (k < 30)
			b_htod(&b, t++, lone + k * 4096, 4096, 0);
	}
	b_htod(&b, t++, region, 64 << 10, 0); /* small tensors: no dataset inside */
	b_htod(&b, t++, region + 3 * MIB, 256 << 10, 0);
	b_htod(&b, t++, region + 5 * MIB, 128 << 10, 0);
	vt_model_finish(m);
	vt_classify(m);
	assert_int_equal(category_of(m, obs), VT_CAT_DATASET);
	assert_int_equal(category_of(m, act), VT_CAT_DATASET);
	assert_int_equal(category_of(m, region), VT_CAT_POOL);
	assert_int_equal(category_of(m, lone), VT_CAT_POOL);
	struct vt_findings f;
	vt_findings_find(m, &f);
	for (uint32_t i = 0; i < f.n; i++)
		printf("kind %d bytes %llu\n", f.v[i].kind, (unsigned long long)f.v[i].bytes[0]);
	vt_findings_free(&f);
	vt_model_free(m);
}

/* Weights loaded tensor by tensor from the host at W_ADDR(0..n-1), from
 * stack 1; the time after them. */
static uint64_t load_weights(struct builder *b, uint64_t t, const uint64_t *bytes, int n)
{
	b->stack = 1;
	for (int l = 0; l < n; l++) {
		b_alloc(b, t++, W_ADDR(l), bytes[l], 0);
		b_htod(b, t++, W_ADDR(l), bytes[l], 0);
	}
	return t;
}

/* A caching allocator keeps what the first step made: two 6 MiB activation
 * segments made in step 0 stay to the end, and together they are the size
 * of the 12 MiB tensor every step makes. A flat gradient bucket's weights
 * were there before training; kept activations that add up to a per-step
 * size are no weights. */
static void test_kept_activations_adding_up_to_a_bucket(void **state)
{
	(void)state;
	struct builder b;
	struct vt_model *m = begin_job(&b);
	static const uint64_t w[3] = {4 * MIB, 2 * MIB, 1 * MIB};
	uint64_t t = load_weights(&b, 1, w, 3);
	for (int s = 0; s < 6; s++) {
		mark_step(&b, t++, s);
		t = three_layer_step(&b, t, w, s == 0);
		b.stack = 30;
		if (s == 0)
			for (uint64_t k = 0; k < 2; k++)
				b_alloc(&b, t++, 0xc00000000ull + k * 0x10000000ull, 6 * MIB, 0);
		b_alloc(&b, t++, 0xd00000000ull, 12 * MIB, 0);
		b_free(&b, t++, 0xd00000000ull, 0);
	}
	vt_model_end_process(m, b.proc);
	vt_model_finish(m);
	vt_classify(m);
	for (uint64_t k = 0; k < 2; k++)
		assert_int_not_equal(category_of(m, 0xc00000000ull + k * 0x10000000ull),
		                     VT_CAT_WEIGHTS);
	assert_int_not_equal(category_of(m, 0xd00000000ull), VT_CAT_GRADIENTS);
	vt_model_free(m);
}

/* Full-batch training over a graph: the node features (5,003 rows of 256
 * floats) uploaded before the model, each step a hidden state of every
 * node (5,003 x 64 floats) and a small index batch from the host. The
 * features are the data every step computes over, not a frozen weight of
 * a job that streams its batches. A table of 5,003 rows the model's loader
 * sends among its weights stays the model's. */
static void test_rows_every_step_before_the_model(void **state)
{
	(void)state;
	struct builder b;
	struct vt_model *m = begin_job(&b);
	const uint64_t nodes = 5003, x = 0xc00000000ull, table = 0xe00000000ull;
	static const uint64_t w[3] = {4 * MIB, 2 * MIB, 1 * MIB};
	uint64_t t = 1;
	b.stack = 40;
	b_alloc(&b, t++, x, nodes * 256 * 4, 0);
	b_htod(&b, t++, x, nodes * 256 * 4, 0);
	t = load_weights(&b, t, w, 2);
	b_alloc(&b, t++, table, nodes * 128 * 4, 0); /* by the same loader */
	b_htod(&b, t++, table, nodes * 128 * 4, 0);
	b_alloc(&b, t++, W_ADDR(2), w[2], 0);
	b_htod(&b, t++, W_ADDR(2), w[2], 0);
	for (int s = 0; s < 6; s++) {
		mark_step(&b, t++, s);
		b.stack = 41;
		b_alloc(&b, t++, 0xd00000000ull, 64 << 10, 0);
		b_htod(&b, t++, 0xd00000000ull, 64 << 10, 0);
		b.stack = 42;
		b_alloc(&b, t++, 0xd10000000ull, nodes * 64 * 4, 0);
		t = three_layer_step(&b, t, w, s == 0);
		b_free(&b, t++, 0xd10000000ull, 0);
		b_free(&b, t++, 0xd00000000ull, 0);
	}
	vt_model_end_process(m, b.proc);
	vt_model_finish(m);
	vt_classify(m);
	assert_int_equal(category_of(m, x), VT_CAT_DATASET);
	assert_int_not_equal(category_of(m, table), VT_CAT_DATASET);
	vt_model_free(m);
}

/* A graph's node features, then its labels (a value per node) through the
 * same conversion (one stack), then the model's first weight from another
 * line: the labels are the data's (and join its finding), though each
 * step's predictions share their size, a coincidence that alone reads them
 * as a frozen weight; the weight stays the model's. (The same functions
 * from another line, with the symbolised stacks, tie only an array sharing
 * the data's rows: ctest corpus_labels_join.) */
static void test_labels_uploaded_right_after_the_data(void **state)
{
	(void)state;
	struct builder b;
	struct vt_model *m = begin_job(&b);
	const uint64_t nodes = 5003, x = 0xc00000000ull, y = 0xc80000000ull;
	const uint64_t pred = 0xd20000000ull;
	static const uint64_t w[3] = {4 * MIB, 2 * MIB, 1 * MIB};
	uint64_t t = 1;
	b.stack = 40;
	b_alloc(&b, t++, x, nodes * 256 * 4, 0);
	b_htod(&b, t++, x, nodes * 256 * 4, 0);
	b_alloc(&b, t++, y, nodes * 8, 0);
	b_htod(&b, t++, y, nodes * 8, 0);
	b.stack = 41;
	b_alloc(&b, t++, W_ADDR(0), w[0], 0);
	b_htod(&b, t++, W_ADDR(0), w[0], 0);
	b.stack = 1;
	for (int l = 1; l < 3; l++) {
		b_alloc(&b, t++, W_ADDR(l), w[l], 0);
		b_htod(&b, t++, W_ADDR(l), w[l], 0);
	}
	for (int s = 0; s < 6; s++) {
		mark_step(&b, t++, s);
		b.stack = 42;
		b_alloc(&b, t++, 0xd10000000ull, nodes * 64 * 4, 0);
		t = three_layer_step(&b, t, w, s == 0);
		b.stack = 43;
		b_alloc(&b, t++, pred, nodes * 8, 0);
		b_free(&b, t++, pred, 0);
		b_free(&b, t++, 0xd10000000ull, 0);
	}
	vt_model_end_process(m, b.proc);
	vt_model_finish(m);
	vt_classify(m);
	assert_int_equal(category_of(m, x), VT_CAT_DATASET);
	assert_int_equal(category_of(m, y), VT_CAT_DATASET);
	assert_int_equal(category_of(m, W_ADDR(0)), VT_CAT_WEIGHTS);
	uint64_t bytes[2];
	assert_int_equal(dataset_finding_bytes(m, bytes, 2), 1);
	assert_int_equal(bytes[0], nodes * 256 * 4 + nodes * 8);
	vt_model_free(m);
}

/* An embedding grown as new ids come: made on the device before training,
 * then every other step `torch.cat` makes a table with rows appended and
 * the old one goes. Each grown table is the model's, like the one it
 * replaced. A tensor three times the size made as one is freed is no
 * replacement (nothing appends that much). */
static void test_grown_table_replaces_the_old(void **state)
{
	(void)state;
	struct builder b;
	struct vt_model *m = begin_job(&b);
	static const uint64_t w[3] = {4 * MIB, 2 * MIB, 1 * MIB};
	uint64_t t = load_weights(&b, 1, w, 3);
	uint64_t rows = 100000, table = 0xc00000000ull;
	b.stack = 50;
	b_alloc(&b, t++, table, rows * 256, 0);
	for (int s = 0; s < 6; s++) {
		mark_step(&b, t++, s);
		t = three_layer_step(&b, t, w, s == 0);
		if (s % 2 == 1) {
			uint64_t bigger = table + 0x1000000ull;
			b.stack = 51;
			b_alloc(&b, t++, bigger, (rows + 4000) * 256, 0);
			b_free(&b, t++, table, 0);
			table = bigger;
			rows += 4000;
		}
	}
	b.stack = 52;
	b_alloc(&b, t++, 0xe00000000ull, 3 * rows * 256, 0);
	b_free(&b, t++, table, 0);
	vt_model_end_process(m, b.proc);
	vt_model_finish(m);
	vt_classify(m);
	for (uint64_t k = 1; k <= 3; k++)
		assert_int_equal(category_of(m, 0xc00000000ull + k * 0x1000000ull), VT_CAT_WEIGHTS);
	assert_int_not_equal(category_of(m, 0xe00000000ull), VT_CAT_WEIGHTS);
	vt_model_free(m);
}

/* A dataset held on the device and an index shuffled on the host once an
 * epoch, the size of a tensor every step makes: two uploads in twelve
 * steps are no batch stream, so the data uploaded before the model is not
 * taken for frozen weights beside streamed batches. */
static void test_an_upload_an_epoch_is_no_batch_stream(void **state)
{
	(void)state;
	struct builder b;
	struct vt_model *m = begin_job(&b);
	static const uint64_t w[3] = {4 * MIB, 2 * MIB, 1 * MIB};
	const uint64_t data = 0xc00000000ull;
	uint64_t t = 1;
	b.stack = 40;
	b_alloc(&b, t++, data, 40 * MIB, 0);
	b_htod(&b, t++, data, 40 * MIB, 0);
	t = load_weights(&b, t, w, 3);
	for (int s = 0; s < 12; s++) {
		mark_step(&b, t++, s);
		if (s % 6 == 0) {
			b.stack = 41;
			b_alloc(&b, t++, 0xd00000000ull, 64 << 10, 0);
			b_htod(&b, t++, 0xd00000000ull, 64 << 10, 0);
			b_free(&b, t++, 0xd00000000ull, 0);
		}
		b.stack = 42;
		b_alloc(&b, t++, 0xd10000000ull, 64 << 10, 0);
		t = three_layer_step(&b, t, w, s == 0);
		b_free(&b, t++, 0xd10000000ull, 0);
	}
	vt_model_end_process(m, b.proc);
	vt_model_finish(m);
	vt_classify(m);
	assert_int_equal(category_of(m, data), VT_CAT_DATASET);
	vt_model_free(m);
}

/* A recurrent layer's parameters packed into one flat buffer (uploaded
 * one by one, copied in, the uploads freed), so only their gradients (3
 * and 5 MiB) show each step beside the other layers'; SGD makes a
 * momentum buffer per parameter at its first update, after the backward
 * pass: optimizer state, not weights (no weight of those sizes is alive).
 * A weight a lazy module makes in the first forward pass (6 MiB), before
 * its gradient, stays a weight. */
static void test_slot_made_after_its_gradient(void **state)
{
	(void)state;
	struct builder b;
	struct vt_model *m = begin_job(&b);
	static const uint64_t w[3] = {4 * MIB, 2 * MIB, 1 * MIB}, packed[2] = {3 * MIB, 5 * MIB};
	const uint64_t flat = 0xb00000000ull, lazy = 0xb80000000ull, up = 0x700000000ull;
	uint64_t t = load_weights(&b, 1, w, 3);
	for (uint64_t k = 0; k < 2; k++) {
		b_alloc(&b, t++, up + k * 0x10000000ull, packed[k], 0);
		b_htod(&b, t++, up + k * 0x10000000ull, packed[k], 0);
	}
	b.stack = 2;
	b_alloc(&b, t++, flat, 8 * MIB, 0);
	for (uint64_t k = 0; k < 2; k++) {
		b_dtod(&b, t++, flat + k * 3 * MIB, up + k * 0x10000000ull, packed[k], 0);
		b_free(&b, t++, up + k * 0x10000000ull, 0);
	}
	for (int s = 0; s < 6; s++) {
		mark_step(&b, t++, s);
		b.stack = 7;
		if (s == 0)
			b_alloc(&b, t++, lazy, 6 * MIB, 0);
		t = three_layer_step(&b, t, w, s == 0);
		b.stack = 8;
		for (uint64_t k = 0; k < 3; k++)
			b_alloc(&b, t++, 0xd00000000ull + k * 0x10000000ull,
			        k < 2 ? packed[k] : 6 * MIB, 0);
		b.stack = 9;
		for (uint64_t k = 0; s == 0 && k < 2; k++)
			b_alloc(&b, t++, 0xe00000000ull + k * 0x10000000ull, packed[k], 0);
		for (uint64_t k = 0; k < 3; k++)
			b_free(&b, t++, 0xd00000000ull + k * 0x10000000ull, 0);
	}
	vt_model_end_process(m, b.proc);
	vt_model_finish(m);
	vt_classify(m);
	for (uint64_t k = 0; k < 2; k++)
		assert_int_equal(category_of(m, 0xe00000000ull + k * 0x10000000ull),
		                 VT_CAT_OPTIMIZER);
	assert_int_equal(category_of(m, lazy), VT_CAT_WEIGHTS);
	vt_model_free(m);
}

/* No markers. A set-up pass encodes six batches with a 21 MiB encoder and
 * keeps each batch's 512 KiB latents (the live bytes end that pass at 24
 * MiB, the level the steps return to later); the encoder goes, and the
 * model it trains (7 MiB) is loaded. Each of the 12 steps climbs through
 * its activations (66 tensors), then its optimizer returns to the level once a
 * parameter (40 temporaries): a pattern of 41 valleys a step, which holds
 * for the valleys and for the allocations, where "every valley a step"
 * holds for the valleys alone. The steps are 12, after the model's load. */
/* Keras 3's prefetcher (and a DataLoader's) holds the next batch at every
 * step end but an epoch's last, and an evaluation pass after each epoch
 * ends the same way: the lowest level that recurs is the end of each epoch
 * and of its evaluation, and the steps end one batch (x and y) above it. */
static void upload_batch(struct builder *b, uint64_t *t, uint64_t at)
{
	b->stack = 64;
	b_alloc(b, (*t)++, at, MIB, 0);
	b_htod(b, (*t)++, at, MIB, 0);
	b_alloc(b, (*t)++, at + 0x100000, 4 << 10, 0);
	b_htod(b, (*t)++, at + 0x100000, 4 << 10, 0);
}

/* A pass over `batches` batches with a prefetcher two deep that stops at
 * the pass's end: each batch's temp buffer, then the batch freed and the
 * one after the next uploaded. */
static void prefetched_pass(struct builder *b, uint64_t *t, uint64_t *next, int batches,
                            uint64_t temp_bytes)
{
	const uint64_t temp = 0x900000000ull, first = *next;
	for (int k = 0; k < 2; k++, *next += 0x1000000)
		upload_batch(b, t, *next);
	for (int s = 0; s < batches; s++) {
		uint64_t batch = first + (uint64_t)s * 0x1000000;
		b->stack = 65;
		b_alloc(b, (*t)++, temp, temp_bytes, 0);
		b_free(b, (*t)++, temp, 0);
		b_free(b, (*t)++, batch, 0);
		b_free(b, (*t)++, batch + 0x100000, 0);
		if (s + 2 < batches)
			upload_batch(b, t, *next), *next += 0x1000000;
	}
}

static void test_steps_end_one_batch_above_the_epochs_end(void **state)
{
	(void)state;
	struct builder b;
	struct vt_model *m = begin_job(&b);
	static const uint64_t w[3] = {4 * MIB, 2 * MIB, 1 * MIB};
	uint64_t t = load_weights(&b, 1, w, 3), next = 0xa00000000ull;
	for (int epoch = 0; epoch < 3; epoch++) {
		prefetched_pass(&b, &t, &next, 6, 20 * MIB); /* training */
		prefetched_pass(&b, &t, &next, 2, 4 * MIB);  /* evaluation: no gradients */
	}
	vt_model_end_process(m, b.proc);
	vt_model_finish(m);
	vt_classify(m);
	assert_int_equal(m->procs[0].step_source, VT_STEPS_PERIOD);
	assert_int_equal(m->procs[0].nsteps, 18);
	vt_model_free(m);
}

/* Epochs of three steps with an evaluation pass between them that keeps a
 * little of every batch (its outputs, for the metrics) until the pass
 * ends: the pass's valleys climb a staircase, each within the slack of the
 * last. The steps after it return to the level the steps had before; they
 * are still step ends, not passes below the level. */
static void test_steps_after_an_evaluation_staircase(void **state)
{
	(void)state;
	struct builder b;
	struct vt_model *m = begin_job(&b);
	static const uint64_t w[3] = {4 * MIB, 2 * MIB, 1 * MIB};
	uint64_t t = load_weights(&b, 1, w, 3);
	const uint64_t outs = 0xe00000000ull, act = 0xe80000000ull;
	uint64_t starts[15];
	for (int epoch = 0; epoch < 5; epoch++) {
		b.stack = 70;
		for (uint64_t k = 0; epoch > 0 && k < 3; k++) {
			b_alloc(&b, t++, outs + k * 0x100000ull, 64 << 10, 0);
			b_alloc(&b, t++, act, MIB, 0);
			b_free(&b, t++, act, 0);
		}
		for (uint64_t k = 0; epoch > 0 && k < 3; k++)
			b_free(&b, t++, outs + k * 0x100000ull, 0);
		for (int s = 0; s < 3; s++) {
			starts[3 * epoch + s] = t;
			t = three_layer_step(&b, t, w, epoch == 0 && s == 0);
		}
	}
	classified_job(&b);
	assert_int_equal(m->procs[0].step_source, VT_STEPS_PERIOD);
	assert_int_equal(m->procs[0].nsteps, 15);
	for (int s = 1; s < 15; s++) /* each step begins after the last one's start, by its own */
		assert_true(m->procs[0].step_t[s] > starts[s - 1] &&
		            m->procs[0].step_t[s] <= starts[s]);
	vt_model_free(m);
}

/* A training step of many temporaries (a forward's and backward's), 200
 * made and freed, after the batch's handover: the next batch uploaded and
 * the last one freed, its float copy made and the last copy freed. Each
 * buffer's free is a return to the level, one allocation apart. */
static uint64_t handover_step(struct builder *b, uint64_t t, int s)
{
	const uint64_t batch = 0xc00000000ull, copy = 0xc80000000ull, temp = 0xd00000000ull;
	b->stack = 71;
	b_alloc(b, t++, batch + (uint64_t)s * 0x1000000ull, MIB, 0);
	b_htod(b, t++, batch + (uint64_t)s * 0x1000000ull, MIB, 0);
	if (s > 0)
		b_free(b, t++, batch + (uint64_t)(s - 1) * 0x1000000ull, 0);
	b->stack = 72;
	b_alloc(b, t++, copy + (uint64_t)s * 0x1000000ull, 4 * MIB, 0);
	if (s > 0)
		b_free(b, t++, copy + (uint64_t)(s - 1) * 0x1000000ull, 0);
	b->stack = 73;
	for (uint64_t k = 0; k < 200; k++)
		b_alloc(b, t++, temp + k * 0x100000ull, 64 << 10, 0);
	for (uint64_t k = 0; k < 200; k++)
		b_free(b, t++, temp + k * 0x100000ull, 0);
	return t;
}

/* Epochs of five such steps with a short evaluation pass between them at
 * the same level: the returns a step (the handover's two, the step's end)
 * make no pattern that repeats through the passes, and every return was a
 * step (three a step). Returns a few allocations apart are one. */
static void test_batch_handover_returns_are_one_step_end(void **state)
{
	(void)state;
	struct builder b;
	struct vt_model *m = begin_job(&b);
	static const uint64_t w[3] = {4 * MIB, 2 * MIB, 1 * MIB};
	uint64_t t = load_weights(&b, 1, w, 3);
	const uint64_t eval = 0xe00000000ull;
	int s = 0;
	for (int epoch = 0; epoch < 4; epoch++) {
		for (int k = 0; k < 5; k++, s++)
			t = handover_step(&b, t, s);
		b.stack = 74;
		for (uint64_t k = 0; k < 2 + (uint64_t)epoch % 2; k++) {
			b_alloc(&b, t++, eval, 2 * MIB, 0);
			b_free(&b, t++, eval, 0);
		}
	}
	classified_job(&b);
	assert_int_equal(m->procs[0].step_source, VT_STEPS_PERIOD);
	assert_int_equal(m->procs[0].nsteps, 20);
	vt_model_free(m);
}

/* A server that loads its model tensor by tensor, slowly (uploads into
 * fresh pages take most of the run's time; its last tensors, of one size,
 * come quickly), then serves many requests, each
 * uploading its input into one buffer, with no steps: the weights, of one
 * size, live through all the requests' events though not through most of
 * the clock. They are not batches made again and again. */
static void test_slow_loaded_weights_of_one_size_are_no_batches(void **state)
{
	(void)state;
	struct builder b;
	struct vt_model *m = begin_job(&b);
	const uint64_t slow = 100000000, in = 0xc00000000ull, out = 0xd00000000ull;
	uint64_t t = 1;
	b.stack = 1;
	for (int l = 0; l < 8; l++, t += slow) { /* the model's other tensors */
		b_alloc(&b, t, W_ADDR(l), (uint64_t)(l + 1) * MIB + 4096, 0);
		b_htod(&b, t + slow - 1, W_ADDR(l), (uint64_t)(l + 1) * MIB + 4096, 0);
	}
	for (int l = 8; l < 12; l++) { /* the last ones, of one size */
		b_alloc(&b, t++, W_ADDR(l), 8 * MIB, 0);
		b_htod(&b, t++, W_ADDR(l), 8 * MIB, 0);
	}
	b.stack = 2;
	b_alloc(&b, t++, in, 64 << 10, 0);
	b_alloc(&b, t++, out, MIB, 0);
	for (int r = 0; r < 200; r++)
		b_htod(&b, t++, in, 64 << 10, 0);
	b_free(&b, t++, in, 0);
	b_free(&b, t++, out, 0);
	for (int l = 0; l < 12; l++)
		b_free(&b, t++, W_ADDR(l), 0);
	classified_job(&b);
	assert_int_equal(m->procs[0].nsteps, 0);
	for (int l = 8; l < 12; l++)
		assert_int_not_equal(alloc_at(m, W_ADDR(l))->category, VT_CAT_PREFETCH);
	vt_model_free(m);
}

static void test_steps_with_per_parameter_returns_after_a_set_up_pass(void **state)
{
	(void)state;
	struct builder b;
	struct vt_model *m = begin_job(&b);
	static const uint64_t w[3] = {4 * MIB, 2 * MIB, 1 * MIB};
	const uint64_t enc = 0xe00000000ull, cache = 0xf00000000ull;
	uint64_t t = 1;
	b.stack = 60;
	b_alloc(&b, t++, enc, 21 * MIB, 0);
	b_htod(&b, t++, enc, 21 * MIB, 0);
	for (uint64_t k = 0; k < 6; k++) {
		b.stack = 61;
		b_alloc(&b, t++, 0xd00000000ull, MIB, 0);
		b_htod(&b, t++, 0xd00000000ull, MIB, 0);
		b_alloc(&b, t++, 0xd10000000ull, 2 * MIB, 0);
		b_alloc(&b, t++, cache + k * 0x1000000ull, 512 << 10, 0);
		b_free(&b, t++, 0xd10000000ull, 0);
		b_free(&b, t++, 0xd00000000ull, 0);
	}
	b_alloc(&b, t++, 0xd20000000ull, 4 << 10, 0); /* the pass's last valley: 24 MiB */
	b_free(&b, t++, enc, 0);
	b_free(&b, t++, 0xd20000000ull, 0);
	t = load_weights(&b, t, w, 3);
	const uint64_t last_weight = t - 2; /* its allocation; its upload came after */
	for (int s = 0; s < 12; s++) {
		b.stack = 63;
		for (uint64_t k = 0; k < 60; k++)
			b_alloc(&b, t++, 0xb00000000ull + k * 0x1000000ull, 256 << 10, 0);
		t = three_layer_step(&b, t, w, s == 0);
		for (uint64_t k = 0; k < 60; k++)
			b_free(&b, t++, 0xb00000000ull + k * 0x1000000ull, 0);
		b.stack = 62;
		for (int k = 0; k < 40; k++) {
			b_alloc(&b, t++, 0xc00000000ull, 64 << 10, 0);
			b_free(&b, t++, 0xc00000000ull, 0);
		}
	}
	vt_model_end_process(m, b.proc);
	vt_model_finish(m);
	vt_classify(m);
	assert_int_equal(m->procs[0].step_source, VT_STEPS_PERIOD);
	assert_int_equal(m->procs[0].nsteps, 12);
	assert_true(m->procs[0].step_t[0] > last_weight);
	for (int l = 0; l < 3; l++)
		assert_int_equal(category_of(m, W_ADDR(l)), VT_CAT_WEIGHTS);
	vt_model_free(m);
}

/* An inference server: weights uploaded per tensor, a KV cache made on the
 * device and kept, each request's tokens uploaded and its activations made
 * and freed; no training step. The cache is no weight: unknown, with
 * weights the alternative. */
static void test_serving_cache_is_not_a_weight(void **state)
{
	(void)state;
	const uint64_t kv = 0x50000000;
	struct builder b;
	struct vt_model *m = begin_job(&b);
	static const uint64_t w[3] = {2 * MIB, 3 * MIB, 4 * MIB};
	uint64_t t = load_weights(&b, 1, w, 3);
	b.stack = 2;
	b_alloc(&b, t++, kv, 48 * MIB, 0);
	for (int r = 0; r < 10; r++) {
		b.stack = 3;
		b_alloc(&b, t++, 0x200000000ull, 64 << 10, 0);
		b_htod(&b, t++, 0x200000000ull, 64 << 10, 0);
		b.stack = 4;
		b_alloc(&b, t++, 0x300000000ull, 4 * MIB, 0);
		b_free(&b, t++, 0x300000000ull, 0);
		b_free(&b, t++, 0x200000000ull, 0);
		t += 1000 * (uint64_t)(r % 3 + 1); /* requests come when they come */
	}
	vt_model_finish(m);
	vt_classify(m);
	for (int l = 0; l < 3; l++)
		assert_int_equal(category_of(m, W_ADDR(l)), VT_CAT_WEIGHTS);
	/* nothing trains: a request's scratch is no buffer hiding gradients */
	assert_int_equal(category_of(m, 0x300000000ull), VT_CAT_ACTIVATIONS);
	/* a workspace for the requests' activations or a cache: a guess, the
	 * cache (unknown) its first alternative */
	const struct vt_alloc *a = alloc_at(m, kv);
	assert_guess(a, VT_CAT_ACTIVATIONS, VT_CAT_UNKNOWN);
	/* its period is a pass over requests: nothing trains */
	assert_int_equal(m->procs[0].trains, 0);
	vt_model_free(m);
}

/* Inference without steps: three weights loaded (2, 1 and 1 MiB), then
 * two requests, each making a 4 MiB scratch tensor twice, the sum of the
 * weights. Made again and again the size of a run of weights, it would be
 * a flat gradient bucket in a job that steps; here nothing steps, and
 * nothing trains. */
static void test_scratch_the_size_of_the_weights_without_steps(void **state)
{
	(void)state;
	struct builder b;
	struct vt_model *m = begin_job(&b);
	static const uint64_t w[3] = {2 * MIB, 1 * MIB, 1 * MIB};
	uint64_t t = load_weights(&b, 1, w, 3);
	for (int r = 0; r < 2; r++) {
		t += 5000;
		b.stack = 3;
		b_alloc(&b, t++, 0x200000000ull, 64 << 10, 0);
		b_htod(&b, t++, 0x200000000ull, 64 << 10, 0);
		b.stack = 4;
		for (int k = 0; k < 2; k++) {
			b_alloc(&b, t++, 0x300000000ull, 4 * MIB, 0);
			b_free(&b, t++, 0x300000000ull, 0);
		}
		b_free(&b, t++, 0x200000000ull, 0);
	}
	vt_model_finish(m);
	vt_classify(m);
	assert_int_equal(m->procs[0].nsteps, 0);
	for (int l = 0; l < 3; l++)
		assert_int_equal(category_of(m, W_ADDR(l)), VT_CAT_WEIGHTS);
	assert_int_equal(count_cat(m, VT_CAT_GRADIENTS), 0);
	assert_int_equal(category_of(m, 0x300000000ull), VT_CAT_ACTIVATIONS);
	assert_int_equal(m->procs[0].trains, 0);
	vt_model_free(m);
}

/* An inference job loading a model tensor by tensor (eight layers through
 * one helper), its embedding before them and its head after them through
 * call paths of their own, then requests (tokens uploaded, activations
 * made and freed; a prompt's tokens are too few to be a streamed batch).
 * Nothing trains: a lone upload beside a model loaded
 * tensor by tensor is more likely a part of it than the whole dataset;
 * weights, not sure, and no finding. */
static void test_lone_uploads_beside_a_loaded_model(void **state)
{
	(void)state;
	struct builder b;
	struct vt_model *m = begin_job(&b);
	uint64_t t = 1;
	b.stack = 2;
	b_alloc(&b, t++, 0x700000000ull, 128 * MIB, 0);
	b_htod(&b, t++, 0x700000000ull, 128 * MIB, 0);
	static const uint64_t w[8] = {22 * MIB, 22 * MIB, 22 * MIB, 22 * MIB,
	                              22 * MIB, 22 * MIB, 22 * MIB, 22 * MIB};
	t = load_weights(&b, t, w, 8);
	b.stack = 3;
	b_alloc(&b, t++, 0x780000000ull, 128 * MIB, 0);
	b_htod(&b, t++, 0x780000000ull, 128 * MIB, 0);
	for (int r = 0; r < 6; r++) {
		t += 1000;
		b.stack = 4;
		b_alloc(&b, t++, 0x200000000ull, 2048, 0);
		b_htod(&b, t++, 0x200000000ull, 2048, 0);
		b.stack = 5;
		b_alloc(&b, t++, 0x300000000ull, 4 * MIB, 0);
		b_free(&b, t++, 0x300000000ull, 0);
		b_free(&b, t++, 0x200000000ull, 0);
	}
	vt_model_finish(m);
	vt_classify(m);
	for (uint64_t at = 0x700000000ull; at <= 0x780000000ull; at += 0x80000000ull) {
		const struct vt_alloc *a = alloc_at(m, at);
		assert_int_equal(a->category, VT_CAT_WEIGHTS);
		assert_true(a->confidence < VT_CONFIDENT);
	}
	assert_int_equal(whole_dataset_findings(m), 0);
	vt_model_free(m);
}

/* A job that preloads its images: its first tensor, a hash grid made on
 * the host and uploaded, then the images (eight times larger), then steps
 * that make rays on the device and upload nothing. Through another call
 * path (`grid_stack` 2, the images' 3), the first tensor is no whole
 * dataset: a model comes before its data. */
static struct vt_model *first_upload_job(uint32_t grid_stack)
{
	struct builder b;
	struct vt_model *m = begin_job(&b);
	uint64_t t = 1;
	b.stack = grid_stack;
	b_alloc(&b, t++, 0x700000000ull, 8 * MIB, 0);
	b_htod(&b, t++, 0x700000000ull, 8 * MIB, 0);
	b.stack = 3;
	b_alloc(&b, t++, 0x800000000ull, 64 * MIB, 0);
	b_htod(&b, t++, 0x800000000ull, 64 * MIB, 0);
	for (int s = 0; s < 8; s++) {
		t += 1000;
		b.stack = 5;
		b_alloc(&b, t++, 0x300000000ull, 4 * MIB, 0);
		b_alloc(&b, t++, 0x310000000ull, 1 * MIB, 0);
		b_free(&b, t++, 0x310000000ull, 0);
		b_free(&b, t++, 0x300000000ull, 0);
	}
	vt_model_finish(m);
	vt_classify(m);
	return m;
}

static void test_first_upload_before_the_data_is_no_dataset(void **state)
{
	(void)state;
	struct vt_model *m = first_upload_job(2);
	const struct vt_alloc *grid = alloc_at(m, 0x700000000ull);
	assert_int_equal(grid->category, VT_CAT_WEIGHTS);
	assert_true(grid->confidence < VT_CONFIDENT);
	assert_int_equal(category_of(m, 0x800000000ull), VT_CAT_DATASET);
	assert_int_equal(whole_dataset_findings(m), 1);
	vt_model_free(m);
}

/* The same uploads through one stack (a job's dense features converted
 * right before the sparse ids of the same rows): the first is data like
 * the second, large enough for a finding of its own. (Through the same
 * functions from another line, the symbolised stacks decide: ctest
 * corpus_labels_join.) */
static void test_first_upload_through_the_data_path_is_data(void **state)
{
	(void)state;
	struct vt_model *m = first_upload_job(3);
	assert_int_equal(category_of(m, 0x700000000ull), VT_CAT_DATASET);
	assert_int_equal(category_of(m, 0x800000000ull), VT_CAT_DATASET);
	uint64_t bytes[2];
	assert_int_equal(dataset_finding_bytes(m, bytes, 2), 2);
	assert_int_equal(bytes[0] + bytes[1], 72 * MIB);
	vt_model_free(m);
}

/* A server's cache growing while requests repeat like steps: the weights
 * loaded, one 2 MiB cache block made before the first pass and a dozen more
 * kept in the first two, and every pass a 2 MiB scratch tensor. An
 * optimizer makes a few slots per weight of a size, not twelve for the one
 * tensor of that size made before: the blocks are no slots, the one before
 * is no weight with a gradient twin, and the scratch no gradient. */
static void test_cache_blocks_are_no_optimizer_state(void **state)
{
	(void)state;
	struct builder b;
	struct vt_model *m = begin_job(&b);
	static const uint64_t w[4] = {16 * MIB, 16 * MIB, 16 * MIB, 16 * MIB};
	uint64_t t = load_weights(&b, 1, w, 4);
	b.stack = 2;
	b_alloc(&b, t++, 0x800000000ull, 2 * MIB, 0);
	for (int s = 0; s < 10; s++) {
		char text[24]; /* "step " and any int */
		snprintf(text, sizeof text, "step %d", s);
		b_mark(&b, t += 100, text);
		b.stack = 3;
		b_alloc(&b, t++, 0x200000000ull, 2 * MIB, 0);
		b.stack = 2;
		for (uint64_t k = 0; s < 2 && k < 6; k++)
			b_alloc(&b, t++, 0x900000000ull + (uint64_t)(s * 6 + k) * 4 * MIB, 2 * MIB,
			        0);
		b.stack = 4;
		b_alloc(&b, t++, 0x300000000ull, 512 << 10, 0);
		b_free(&b, t++, 0x300000000ull, 0);
		b_free(&b, t++, 0x200000000ull, 0);
	}
	vt_model_finish(m);
	vt_classify(m);
	for (int l = 0; l < 4; l++)
		assert_int_equal(category_of(m, W_ADDR(l)), VT_CAT_WEIGHTS);
	assert_int_not_equal(category_of(m, 0x800000000ull), VT_CAT_WEIGHTS);
	assert_int_equal(count_cat(m, VT_CAT_OPTIMIZER), 0);
	assert_int_equal(count_cat(m, VT_CAT_GRADIENTS), 0);
	vt_model_free(m);
}

/* An inference engine: its weights in one blob uploaded in one copy, a
 * long load, then a workspace, an input binding refilled by every request
 * (partial copies, a batch each) and, with `answered`, an output binding
 * the host reads back after each. Over the run the requests are a short
 * burst; over the binding's own life they are all of it. */
static struct vt_model *engine_job(int answered)
{
	struct builder b;
	struct vt_model *m = begin_job(&b);
	uint64_t t = 1;
	b.stack = 1;
	b_alloc(&b, t++, ENGINE_BLOB, 48 * MIB, 0);
	b_htod(&b, t++, ENGINE_BLOB, 48 * MIB, 0);
	t += 10000000; /* deserialising the engine */
	b.stack = 2;
	b_alloc(&b, t++, ENGINE_WORK, 192 * MIB, 0);
	b_alloc(&b, t++, ENGINE_IN, 8 * MIB, 0);
	b_alloc(&b, t++, ENGINE_OUT, 128 << 10, 0);
	for (int r = 0; r < 24; r++) {
		b.stack = 3;
		b_htod(&b, t++, ENGINE_IN, (uint64_t)(r % 4 + 1) * 2 * MIB, 0);
		b.stack = 4;
		if (answered)
			b_dtoh(&b, t++, ENGINE_OUT, 128 << 10, 0);
		t += 1000;
	}
	vt_model_finish(m);
	vt_classify(m);
	return m;
}

/* Each request answered: the input is a reused batch buffer, the output
 * each request's result, the blob weights, the workspace not-confident
 * activations, and no whole-dataset finding. */
static void test_engine_bindings(void **state)
{
	(void)state;
	struct vt_model *m = engine_job(1);
	assert_int_equal(category_of(m, ENGINE_BLOB), VT_CAT_WEIGHTS);
	assert_int_equal(category_of(m, ENGINE_IN), VT_CAT_PREFETCH);
	assert_int_equal(category_of(m, ENGINE_OUT), VT_CAT_ACTIVATIONS);
	assert_int_equal(category_of(m, ENGINE_WORK), VT_CAT_ACTIVATIONS);
	assert_true(alloc_at(m, ENGINE_WORK)->confidence < VT_CONFIDENT);
	assert_int_equal(whole_dataset_flags(m), 0);
	vt_model_free(m);
}

/* The same uploads with nothing read back: a burst of refills at the end
 * of a short-lived buffer is no evidence of batches being served, so the
 * blob stays what one whole upload is, a dataset (frozen weights the
 * alternative). */
static void test_refills_unanswered_serve_nothing(void **state)
{
	(void)state;
	struct vt_model *m = engine_job(0);
	assert_int_not_equal(category_of(m, ENGINE_IN), VT_CAT_PREFETCH);
	assert_int_equal(category_of(m, ENGINE_BLOB), VT_CAT_DATASET);
	vt_model_free(m);
}

/* Three weights (3, 2 and 1 MiB) uploaded from the host one after another,
 * as a model loaded tensor by tensor: the start of the jobs below. */
static const uint64_t three_weights[3] = {3 * MIB, 2 * MIB, 1 * MIB};

static void upload_three_weights(struct builder *b, uint64_t *t)
{
	b->stack = 1;
	for (uint64_t l = 0; l < 3; l++) {
		b_alloc(b, (*t)++, W_ADDR(l), three_weights[l], 0);
		b_htod(b, (*t)++, W_ADDR(l), three_weights[l], 0);
	}
}

/* The start of step s: its marker, then its batch (512 KiB at
 * 0x200000000) made and uploaded; the step frees it. */
static void begin_step_with_batch(struct builder *b, uint64_t *t, int s)
{
	char text[24]; /* "step " and any int */
	snprintf(text, sizeof text, "step %d", s);
	b_mark(b, *t += 1000, text);
	b->stack = 3;
	b_alloc(b, (*t)++, 0x200000000ull, 512 << 10, 0);
	b_htod(b, (*t)++, 0x200000000ull, 512 << 10, 0);
}

/* JAX with buffer donation: parameters uploaded, Adam's mu and nu made on
 * the device as zeros_like(params), and the gradients inside the step's temp
 * buffer, so no gradient shows. Buffers the size of a loaded weight made
 * after it mirror the weights: optimizer state, not a server's cache; the
 * temp buffer is a pool. */
static void test_state_mirroring_loaded_weights_is_optimizer(void **state)
{
	(void)state;
	const uint64_t *wb = three_weights;
	struct builder b;
	struct vt_model *m = begin_job(&b);
	uint64_t t = 1;
	upload_three_weights(&b, &t);
	b.stack = 2;
	for (uint64_t l = 0; l < 3; l++)
		for (uint64_t k = 0; k < 2; k++)
			b_alloc(&b, t++, SLOT_ADDR(l, k), wb[l], 0);
	for (int s = 0; s < 8; s++) {
		begin_step_with_batch(&b, &t, s);
		b.stack = 4;
		b_alloc(&b, t++, 0x300000000ull, 24 * MIB, 0);
		b_free(&b, t++, 0x300000000ull, 0);
		b_free(&b, t++, 0x200000000ull, 0);
	}
	vt_model_finish(m);
	vt_classify(m);
	for (uint64_t l = 0; l < 3; l++) {
		assert_int_equal(category_of(m, W_ADDR(l)), VT_CAT_WEIGHTS);
		for (uint64_t k = 0; k < 2; k++)
			assert_int_equal(category_of(m, SLOT_ADDR(l, k)), VT_CAT_OPTIMIZER);
	}
	/* the step's temp buffer holds the gradients no allocation shows */
	const struct vt_alloc *temp = alloc_at(m, 0x300000000ull);
	assert_int_equal(temp->category, VT_CAT_POOL);
	assert_true(temp->confidence < VT_CONFIDENT);
	assert_int_equal(flags_of_kind(m, VT_FINDING_OPAQUE_POOL), 0); /* a guess: no advice */
	vt_model_free(m);
}

/* jax.pmap over two devices: each parameter uploaded to device 0 and copied
 * whole to device 1 (device_put_replicated), then Adam's mu and nu made on
 * each device as zeros_like(params), the gradients inside the step's temp
 * buffer. Device 1's parameters came from the host by way of device 0:
 * weights, and the state mirroring them optimizer, as on device 0. */
static void test_replicated_weights_and_their_state(void **state)
{
	(void)state;
	static const uint64_t wb[3] = {3 * MIB, 2 * MIB, 1 * MIB};
	const uint64_t dev1 = 0x4000000000ull;
	struct builder b;
	struct vt_model *m = begin_job(&b);
	uint64_t t = 1;
	for (uint64_t l = 0; l < 3; l++) {
		b.stack = 1;
		b_alloc(&b, t++, W_ADDR(l), wb[l], 0);
		b_htod(&b, t++, W_ADDR(l), wb[l], 0);
		b.stack = 2;
		b_alloc(&b, t++, dev1 + W_ADDR(l), wb[l], 1);
		b_dtod(&b, t++, dev1 + W_ADDR(l), W_ADDR(l), wb[l], 1);
	}
	b.stack = 3;
	for (uint8_t d = 0; d < 2; d++)
		for (uint64_t l = 0; l < 3; l++)
			for (uint64_t k = 0; k < 2; k++)
				b_alloc(&b, t++, d * dev1 + SLOT_ADDR(l, k), wb[l], d);
	for (int s = 0; s < 8; s++) {
		char text[24]; /* "step " and any int */
		snprintf(text, sizeof text, "step %d", s);
		b_mark(&b, t += 1000, text);
		for (uint8_t d = 0; d < 2; d++) {
			b.stack = 4;
			b_alloc(&b, t++, d * dev1 + 0x200000000ull, 512 << 10, d);
			b_htod(&b, t++, d * dev1 + 0x200000000ull, 512 << 10, d);
			b.stack = 5;
			b_alloc(&b, t++, d * dev1 + 0x300000000ull, 24 * MIB, d);
			b_free(&b, t++, d * dev1 + 0x300000000ull, d);
			b_free(&b, t++, d * dev1 + 0x200000000ull, d);
		}
	}
	vt_model_finish(m);
	vt_classify(m);
	for (uint64_t d = 0; d < 2; d++)
		for (uint64_t l = 0; l < 3; l++) {
			assert_int_equal(category_of(m, d * dev1 + W_ADDR(l)), VT_CAT_WEIGHTS);
			for (uint64_t k = 0; k < 2; k++)
				assert_int_equal(category_of(m, d * dev1 + SLOT_ADDR(l, k)),
				                 VT_CAT_OPTIMIZER);
		}
	assert_int_equal(whole_dataset_flags(m), 0);
	vt_model_free(m);
}

/* JAX evaluation: a model restored tensor by tensor, the uint8 images
 * uploaded whole, `x / 255.0` made on the device (four times the bytes,
 * nothing uploaded into it) and the uint8 array dropped, the labels
 * uploaded; then batches sliced on the device. The float array is the
 * dataset made over: a dataset, with weights the alternative; the uploaded
 * arrays stay the finding. */
/* Six weights, then the data: `data` bytes copied from the host into an
 * allocation of `held`, converted on the device into one of `conv` that
 * outlives it, 40 steps slicing batches out of the conversion. The
 * conversion's category. */
static int converted_job(uint64_t held, uint64_t data, uint64_t conv_bytes,
                         struct vt_alternative *alt0)
{
	const uint64_t raw = 0x500000000ull, conv = 0x600000000ull, labels = 0x700000000ull;
	struct builder b;
	struct vt_model *m = begin_job(&b);
	uint64_t t = 1;
	b.stack = 1;
	for (int l = 0; l < 6; l++) {
		b_alloc(&b, t++, W_ADDR(l), (uint64_t)(l % 3 + 1) * MIB, 0);
		b_htod(&b, t++, W_ADDR(l), (uint64_t)(l % 3 + 1) * MIB, 0);
	}
	b.stack = 2;
	b_alloc(&b, t++, raw, held, 0);
	b_htod(&b, t++, raw, data, 0);
	b.stack = 3;
	b_alloc(&b, t++, conv, conv_bytes, 0);
	b.stack = 2;
	b_free(&b, t++, raw, 0);
	b_alloc(&b, t++, labels, 32 << 10, 0);
	b_htod(&b, t++, labels, 32 << 10, 0);
	for (int s = 0; s < 40; s++) {
		b.stack = 4;
		b_alloc(&b, t++, 0x200000000ull, 2 * MIB, 0);
		b_dtod(&b, t++, 0x200000000ull, conv + (uint64_t)s * 2 * MIB, 2 * MIB, 0);
		b.stack = 5;
		b_alloc(&b, t++, 0x300000000ull, 16 * MIB, 0);
		b_free(&b, t++, 0x300000000ull, 0);
		b_dtoh(&b, t++, 0x200000000ull, 4, 0);
		b_free(&b, t++, 0x200000000ull, 0);
		t += 1000;
	}
	vt_model_finish(m);
	vt_classify(m);
	for (int l = 0; l < 6; l++)
		assert_int_equal(category_of(m, W_ADDR(l)), VT_CAT_WEIGHTS);
	const struct vt_alloc *a = alloc_at(m, conv);
	int cat = a->category;
	struct vt_alternative alt[2];
	if (alt0) {
		assert_true(vt_alloc_alternatives(a, alt, 2) >= 1);
		*alt0 = alt[0];
	}
	vt_model_free(m);
	return cat;
}

static void test_dataset_converted_on_the_device(void **state)
{
	(void)state;
	struct vt_alternative alt;
	assert_int_equal(converted_job(24 * MIB, 24 * MIB, 96 * MIB, &alt), VT_CAT_DATASET);
	assert_int_equal(alt.category, VT_CAT_WEIGHTS);
}

/* airbench's loader: uint8 images (50,000 x 3,072 B) and int64 labels
 * uploaded whole, a half copy made and dropped, the normalised half copy
 * kept, a padded copy (36 x 36) kept, and a cropped copy made at each
 * epoch's start and kept through it, while three layers train. Nothing
 * copies the derived arrays from the host and one size recurs among them
 * (a twin, a slot to the size rules); they share the images' rows (the
 * odd part of their bytes, 9,375): the dataset. A per-sample table the job
 * trains (50,000 x 64 floats, its gradient every step) shares the rows
 * too, and stays the model's. */
#define ROWS_N 50000ull
#define ROWS_IMAGES 0x1600000000ull
#define ROWS_LABELS 0x1640000000ull
#define ROWS_HALF 0x1680000000ull
#define ROWS_NORM 0x1700000000ull
#define ROWS_PAD 0x1780000000ull
#define ROWS_CROP(e) (0x1800000000ull + (uint64_t)(e)*0x40000000ull)
#define ROWS_TABLE 0x1a00000000ull
#define ROWS_TABLE_GRAD 0x1a80000000ull
#define ROWS_BATCH 0x1b00000000ull

static void rows_upload(struct builder *b, uint64_t *t)
{
	b->stack = 2;
	b_alloc(b, (*t)++, ROWS_IMAGES, ROWS_N * 3072, 0);
	b_htod(b, (*t)++, ROWS_IMAGES, ROWS_N * 3072, 0);
	b_alloc(b, (*t)++, ROWS_LABELS, ROWS_N * 8, 0);
	b_htod(b, (*t)++, ROWS_LABELS, ROWS_N * 8, 0);
	b->stack = 7;
	b_alloc(b, (*t)++, ROWS_HALF, ROWS_N * 3072 * 2, 0);
	b_alloc(b, (*t)++, ROWS_NORM, ROWS_N * 3072 * 2, 0);
	b_free(b, (*t)++, ROWS_HALF, 0);
	b_free(b, (*t)++, ROWS_IMAGES, 0);
	b_alloc(b, (*t)++, ROWS_PAD, ROWS_N * 3 * 36 * 36 * 2, 0);
}

static void test_dataset_derived_on_the_device(void **state)
{
	(void)state;
	const uint64_t w[3] = {1 * MIB, 2 * MIB, 3 * MIB};
	struct builder b;
	struct vt_model *m = begin_job(&b);
	uint64_t t = load_weights(&b, 1, w, 3);
	b.stack = 8;
	b_alloc(&b, t++, ROWS_TABLE, ROWS_N * 64 * 4, 0);
	rows_upload(&b, &t);
	for (int s = 0; s < 24; s++) {
		mark_step(&b, t++, s);
		if (s % 6 == 0) {
			b.stack = 9;
			if (s)
				b_free(&b, t++, ROWS_CROP(s / 6 - 1), 0);
			b_alloc(&b, t++, ROWS_CROP(s / 6), ROWS_N * 3072 * 2, 0);
		}
		b.stack = 4;
		b_alloc(&b, t++, ROWS_BATCH, 512 * 3072 * 2, 0);
		t = three_layer_step(&b, t, w, s == 0);
		b.stack = 6;
		b_alloc(&b, t++, ROWS_TABLE_GRAD, ROWS_N * 64 * 4, 0);
		b_free(&b, t++, ROWS_TABLE_GRAD, 0);
		b_free(&b, t++, ROWS_BATCH, 0);
		t += 1000;
	}
	m = classified_job(&b);
	assert_int_equal(category_of(m, ROWS_NORM), VT_CAT_DATASET);
	assert_int_equal(category_of(m, ROWS_PAD), VT_CAT_DATASET);
	for (int e = 0; e < 4; e++)
		assert_int_equal(category_of(m, ROWS_CROP(e)), VT_CAT_DATASET);
	assert_int_equal(category_of(m, ROWS_TABLE), VT_CAT_WEIGHTS);
	for (int l = 0; l < 3; l++)
		assert_int_equal(category_of(m, W_ADDR(l)), VT_CAT_WEIGHTS);
	vt_model_free(m);
}

/* The odd part of a greatest common divisor: the rows two sizes share. */
static void test_shared_odd_rows(void **state)
{
	(void)state;
	assert_int_equal(vt_shared_odd_rows(153600000, 0), 9375);
	assert_int_equal(vt_shared_odd_rows(388800000, 9375), 9375);
	assert_int_equal(vt_shared_odd_rows(200000, 9375), 3125);
	assert_int_equal(vt_shared_odd_rows(4096 * 4096, 9375), 1);
	assert_int_equal(vt_shared_odd_rows(0, 0), 0);
}

/* An RMM-like pool: the data (120,000,000 B) in the pool's first region of
 * 128 MiB, then a region of 128 MiB and one of 256 MiB made by the pool's
 * growth (by its own size), outliving the first. Their sizes are the
 * pool's, twice and four times no array: no conversion of the data, which
 * the bytes it holds, not the region's size, would have shown. */
static void test_region_the_size_of_the_data_region_is_no_conversion(void **state)
{
	(void)state;
	const uint64_t data = 120000000ull;
	assert_int_not_equal(converted_job(128 * MIB, data, 128 * MIB, NULL), VT_CAT_DATASET);
	assert_int_not_equal(converted_job(128 * MIB, data, 256 * MIB, NULL), VT_CAT_DATASET);
	assert_int_equal(converted_job(128 * MIB, data, 2 * data, NULL), VT_CAT_DATASET);
}

/* Megatron's and DDP's gradient buffers: made with the model, before
 * training, one the size of each weight (here one per weight, the hooks
 * adding each step's .grad into it), while Adam makes its two slots of
 * every size lazily at the first step. A tensor of a weight's size made
 * before training, where the optimizer's state of that size comes later, is
 * no slot: the gradient buffer (not confident, a slot the alternative). */
static void test_gradient_buffer_made_with_the_model(void **state)
{
	(void)state;
	const uint64_t *wb = three_weights, grad_buf = 0x600000000ull;
	struct builder b;
	struct vt_model *m = begin_job(&b);
	uint64_t t = 1;
	upload_three_weights(&b, &t);
	b.stack = 2;
	for (uint64_t l = 0; l < 3; l++)
		b_alloc(&b, t++, grad_buf + l * 0x10000000ull, wb[l], 0);
	for (int s = 0; s < 8; s++) {
		begin_step_with_batch(&b, &t, s);
		b.stack = 4;
		for (uint64_t l = 0; l < 3; l++)
			b_alloc(&b, t++, 0x300000000ull + l * 0x10000000ull, wb[l], 0);
		b.stack = 5;
		for (uint64_t l = 0; s == 0 && l < 3; l++)
			for (uint64_t k = 0; k < 2; k++)
				b_alloc(&b, t++, SLOT_ADDR(l, k), wb[l], 0);
		for (uint64_t l = 0; l < 3; l++)
			b_free(&b, t++, 0x300000000ull + l * 0x10000000ull, 0);
		b_free(&b, t++, 0x200000000ull, 0);
	}
	vt_model_finish(m);
	vt_classify(m);
	for (uint64_t l = 0; l < 3; l++) {
		assert_int_equal(category_of(m, W_ADDR(l)), VT_CAT_WEIGHTS);
		const struct vt_alloc *g = alloc_at(m, grad_buf + l * 0x10000000ull);
		assert_int_equal(g->category, VT_CAT_GRADIENTS);
		assert_true(g->confidence < VT_CONFIDENT);
		for (uint64_t k = 0; k < 2; k++)
			assert_int_equal(category_of(m, SLOT_ADDR(l, k)), VT_CAT_OPTIMIZER);
	}
	vt_model_free(m);
}

/* QLoRA: the frozen base (three sizes) uploaded, two adapters of one size
 * uploaded after it; every step the logits, exactly the embedding's bytes,
 * the adapters' .grads, and at the first step AdamW's two slots per
 * adapter. One size got optimizer state during training: the optimizer
 * makes its state lazily, so a size that got none does not train, and the
 * logits of its size are activations, not its gradient. */
static void test_one_trained_size_freezes_the_rest(void **state)
{
	(void)state;
	const uint64_t adapter = 256 << 10, logits = 0x300000000ull;
	const uint64_t lora[2] = {0x700000000ull, 0x710000000ull};
	struct builder b;
	struct vt_model *m = begin_job(&b);
	uint64_t t = 1;
	upload_three_weights(&b, &t);
	for (int k = 0; k < 2; k++) {
		b_alloc(&b, t++, lora[k], adapter, 0);
		b_htod(&b, t++, lora[k], adapter, 0);
	}
	for (int s = 0; s < 8; s++) {
		begin_step_with_batch(&b, &t, s);
		b.stack = 4;
		b_alloc(&b, t++, logits, three_weights[0], 0);
		b.stack = 5;
		for (uint64_t k = 0; k < 2; k++)
			b_alloc(&b, t++, 0x400000000ull + k * 0x10000000ull, adapter, 0);
		b.stack = 6;
		for (uint64_t k = 0; s == 0 && k < 4; k++)
			b_alloc(&b, t++, SLOT_ADDR(k, 0), adapter, 0);
		b_free(&b, t++, logits, 0);
		for (uint64_t k = 0; k < 2; k++)
			b_free(&b, t++, 0x400000000ull + k * 0x10000000ull, 0);
		b_free(&b, t++, 0x200000000ull, 0);
	}
	vt_model_finish(m);
	vt_classify(m);
	for (uint64_t l = 0; l < 3; l++)
		assert_int_equal(category_of(m, W_ADDR(l)), VT_CAT_WEIGHTS);
	assert_int_equal(category_of(m, logits), VT_CAT_ACTIVATIONS);
	assert_int_equal(category_of(m, 0x400000000ull), VT_CAT_GRADIENTS);
	for (uint64_t k = 0; k < 4; k++)
		assert_int_equal(category_of(m, SLOT_ADDR(k, 0)), VT_CAT_OPTIMIZER);
	vt_model_free(m);
}

/* ZeRO's _sync_params: a rank copies the parameters it owns whole to the
 * other rank every step. Read whole step after step, a parameter is not a
 * dataset sliced into batches. */
static void test_parameter_broadcast_is_not_sliced_data(void **state)
{
	(void)state;
	struct builder b;
	struct vt_model *m = begin_job(&b);
	uint64_t t = 1;
	b.stack = 1;
	b_alloc(&b, t++, W_ADDR(0), 8 * MIB, 0);
	b_htod(&b, t++, W_ADDR(0), 8 * MIB, 0);
	b_alloc(&b, t++, W_ADDR(1), 8 * MIB, 1);
	for (int s = 0; s < 8; s++) {
		char text[24]; /* "step " and any int */
		snprintf(text, sizeof text, "step %d", s);
		b_mark(&b, t += 1000, text);
		b.stack = 3;
		b_alloc(&b, t++, 0x200000000ull, 512 << 10, 0);
		b_htod(&b, t++, 0x200000000ull, 512 << 10, 0);
		b_free(&b, t++, 0x200000000ull, 0);
		b_dtod(&b, t++, W_ADDR(1), W_ADDR(0), 8 * MIB, 1);
	}
	vt_model_finish(m);
	vt_classify(m);
	assert_int_not_equal(category_of(m, W_ADDR(0)), VT_CAT_DATASET);
	vt_model_free(m);
}

/* FSDP: each step gathers the full parameters of a unit from the sharded
 * ones (its own shard copied in, the other rank's by a peer copy) into a
 * buffer made for the step and freed after it: weights while the unit
 * runs, whatever its size matches. */
static void test_gathered_parameters_are_weights(void **state)
{
	(void)state;
	struct builder b;
	struct vt_model *m = begin_job(&b);
	uint64_t t = 1;
	b.stack = 1;
	b_alloc(&b, t++, W_ADDR(0), 4 * MIB, 0); /* this rank's shard */
	b_htod(&b, t++, W_ADDR(0), 4 * MIB, 0);
	b_alloc(&b, t++, W_ADDR(1), 4 * MIB, 1); /* the other rank's */
	b_htod(&b, t++, W_ADDR(1), 4 * MIB, 1);
	const uint64_t full = 0x600000000ull;
	for (int s = 0; s < 8; s++) {
		char text[24]; /* "step " and any int */
		snprintf(text, sizeof text, "step %d", s);
		b_mark(&b, t += 1000, text);
		b.stack = 3;
		b_alloc(&b, t++, 0x200000000ull, 512 << 10, 0);
		b_htod(&b, t++, 0x200000000ull, 512 << 10, 0);
		b.stack = 4;
		b_alloc(&b, t++, full, 8 * MIB, 0);
		b_dtod(&b, t++, full, W_ADDR(0), 4 * MIB, 0);
		b_dtod(&b, t++, full + 4 * MIB, W_ADDR(1), 4 * MIB, 0);
		b.stack = 5;
		b_alloc(&b, t++, 0x300000000ull, 8 * MIB, 0);
		b_free(&b, t++, 0x300000000ull, 0);
		b_free(&b, t++, full, 0);
		b_free(&b, t++, 0x200000000ull, 0);
	}
	vt_model_finish(m);
	vt_classify(m);
	for (uint32_t i = 0; i < m->nallocs; i++)
		if (m->allocs[i].addr == full)
			assert_int_equal(m->allocs[i].category, VT_CAT_WEIGHTS);
	assert_int_equal(category_of(m, 0x300000000ull), VT_CAT_ACTIVATIONS);
	vt_model_free(m);
}

static void test_chunked_upload_is_not_a_pool(void **state)
{
	(void)state;
	struct builder b;
	struct vt_model *m = begin_job(&b);
	b_alloc(&b, 1, 0x10000000, 64 * MIB, 0);
	for (int i = 0; i < 8; i++)
		b_htod(&b, 2 + (uint64_t)i, 0x10000000 + (uint64_t)i * 8 * MIB, 8 * MIB, 0);
	vt_model_finish(m);
	vt_classify(m);
	assert_int_not_equal(m->allocs[0].category, VT_CAT_POOL);
	assert_false(m->procs[0].pool_mode);
	vt_model_free(m);
}

/* XLA's autotuner: a RedzoneAllocator buffer gets its two red zones
 * written (copies at both ends) and is freed soon after; seen on an H200.
 * Scratch, not an allocator region: no pool, and the job is not pooled. */
/* A caching allocator's segment made after a slow first upload (fresh
 * pages on a loaded machine: most of a short run's time), copies landing
 * at two offsets, kept through the rest of the run: a region. Kept is
 * counted in events, not in the time the first upload took. */
static void test_segment_after_a_slow_first_upload_is_a_pool(void **state)
{
	(void)state;
	struct builder b;
	struct vt_model *m = begin_job(&b);
	b_alloc(&b, 1, 0x10000000, 16 * MIB, 0);
	b_htod(&b, 900000000, 0x10000000, 16 * MIB, 0); /* 0.9 s of page faults */
	b_alloc(&b, 900000001, 0x20000000, 20 * MIB, 0);
	b_htod(&b, 900000002, 0x20000000, 4 * MIB, 0);
	b_htod(&b, 900000003, 0x20000000 + 4 * MIB, 4 * MIB, 0);
	for (uint64_t k = 0; k < 40; k++) { /* the rest of the run: 80 us */
		b_alloc(&b, 900000010 + 2 * k * 1000, 0x30000000, 1 * MIB, 0);
		b_free(&b, 900000010 + (2 * k + 1) * 1000, 0x30000000, 0);
	}
	b_free(&b, 900100000, 0x20000000, 0);
	vt_model_finish(m);
	vt_classify(m);
	assert_int_equal(m->allocs[1].category, VT_CAT_POOL);
	vt_model_free(m);
}

static void test_short_lived_scratch_is_not_a_pool(void **state)
{
	(void)state;
	struct builder b;
	struct vt_model *m = begin_job(&b);
	b_alloc(&b, 1, 0x10000000, 18 * MIB, 0);
	b_htod(&b, 2, 0x10000000, 64 * 1024, 0);
	b_htod(&b, 3, 0x10000000 + 18 * MIB - 64 * 1024, 64 * 1024, 0);
	b_free(&b, 5, 0x10000000, 0);
	for (uint64_t k = 0; k < 40; k++) { /* the job goes on long after */
		b_alloc(&b, 1000 + 2 * k, 0x20000000, 1 * MIB, 0);
		b_free(&b, 1001 + 2 * k, 0x20000000, 0);
	}
	b_alloc(&b, 2000, 0x20000000, 1 * MIB, 0);
	vt_model_finish(m);
	vt_classify(m);
	assert_int_not_equal(m->allocs[0].category, VT_CAT_POOL);
	assert_false(m->procs[0].pool_mode);
	vt_model_free(m);
}

static void test_framework_from_modules(void **state)
{
	(void)state;
	struct vt_proc p;
	memset(&p, 0, sizeof p);
	struct vt_module mods[2] = {
	    {.path = (char *)"/usr/lib/libc.so.6"},
	    {.path = (char *)"/site-packages/tensorflow/libtensorflow_framework.so.2"},
	};
	p.modules = mods;
	p.nmodules = 1;
	assert_int_equal(vt_framework_of(&p), VT_FW_NONE);
	p.nmodules = 2;
	assert_int_equal(vt_framework_of(&p), VT_FW_TENSORFLOW);
	mods[1].path = (char *)"/site-packages/torch/lib/libc10_cuda.so";
	assert_int_equal(vt_framework_of(&p), VT_FW_PYTORCH);
	mods[1].path = (char *)"/site-packages/jaxlib/xla_extension.so";
	assert_int_equal(vt_framework_of(&p), VT_FW_JAX);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_markers_twins),
	    cmocka_unit_test(test_adversarial),
	    cmocka_unit_test(test_period_with_drift),
	    cmocka_unit_test(test_encoder_passes_are_batches_not_layers),
	    cmocka_unit_test(test_period_with_steep_drift),
	    cmocka_unit_test(test_activations_of_weight_size),
	    cmocka_unit_test(test_first_step_shorter_than_period),
	    cmocka_unit_test(test_first_step_longer_than_period),
	    cmocka_unit_test(test_accumulated_gradients_outlive_activations),
	    cmocka_unit_test(test_step_with_lazy_state_below_the_level),
	    cmocka_unit_test(test_each_device_its_own_steps),
	    cmocka_unit_test(test_lagging_rank_keeps_its_own_first_step),
	    cmocka_unit_test(test_state_handed_from_step_to_step),
	    cmocka_unit_test(test_frozen_model_beside_a_trained_one),
	    cmocka_unit_test(test_first_tensor_of_a_step_is_no_gradient),
	    cmocka_unit_test(test_update_temporaries_freed_after_the_gradients),
	    cmocka_unit_test(test_stopped_mid_step),
	    cmocka_unit_test(test_killed_before_upload),
	    cmocka_unit_test(test_host_weights_per_tensor),
	    cmocka_unit_test(test_pool_region),
	    cmocka_unit_test(test_array_converted_twice_into_a_pool),
	    cmocka_unit_test(test_first_batch_in_a_pool_is_no_dataset),
	    cmocka_unit_test(test_labels_in_another_region_join_the_data),
	    cmocka_unit_test(test_region_made_for_one_array_is_that_array),
	    cmocka_unit_test(test_table_uploaded_by_column_is_one_finding),
	    cmocka_unit_test(test_arrays_converted_in_a_row_join_the_data),
	    cmocka_unit_test(test_row_store_is_a_dataset),
	    cmocka_unit_test(test_serving_cache_is_not_a_weight),
	    cmocka_unit_test(test_evaluation_passes_are_not_steps),
	    cmocka_unit_test(test_evaluation_between_epochs_below_the_level),
	    cmocka_unit_test(test_grown_rows_and_slots),
	    cmocka_unit_test(test_lone_uploads_beside_a_loaded_model),
	    cmocka_unit_test(test_first_upload_before_the_data_is_no_dataset),
	    cmocka_unit_test(test_first_upload_through_the_data_path_is_data),
	    cmocka_unit_test(test_upload_into_a_caching_segment_is_no_dataset),
	    cmocka_unit_test(test_unmarked_rank_steps_by_its_opener),
	    cmocka_unit_test(test_arrays_uploaded_while_training_are_data),
	    cmocka_unit_test(test_batches_of_varying_sizes_are_no_dataset),
	    cmocka_unit_test(test_bank_updated_every_step_is_no_dataset),
	    cmocka_unit_test(test_chunks_of_a_warmed_allocator_are_activations),
	    cmocka_unit_test(test_scratch_the_size_of_the_weights_without_steps),
	    cmocka_unit_test(test_engine_bindings),
	    cmocka_unit_test(test_refills_unanswered_serve_nothing),
	    cmocka_unit_test(test_state_mirroring_loaded_weights_is_optimizer),
	    cmocka_unit_test(test_state_of_a_table_updated_by_rows),
	    cmocka_unit_test(test_evaluation_after_the_last_step_is_scratch),
	    cmocka_unit_test(test_parameter_broadcast_is_not_sliced_data),
	    cmocka_unit_test(test_gathered_parameters_are_weights),
	    cmocka_unit_test(test_frozen_weights_are_not_a_dataset),
	    cmocka_unit_test(test_lone_upload_is_a_dataset_with_an_alternative),
	    cmocka_unit_test(test_upload_with_the_model_is_frozen_weights),
	    cmocka_unit_test(test_checkpoint_copy_the_size_of_a_batch_streams_nothing),
	    cmocka_unit_test(test_upload_after_the_model_is_a_dataset),
	    cmocka_unit_test(test_sliced_upload_is_a_confident_dataset),
	    cmocka_unit_test(test_prefetch_counts_batches_not_arrays),
	    cmocka_unit_test(test_batches_into_a_segment_give_their_depth),
	    cmocka_unit_test(test_prefetch_of_a_few_bytes_is_no_finding),
	    cmocka_unit_test(test_model_loaded_while_training_is_no_dataset),
	    cmocka_unit_test(test_checkpoint_staged_before_training_is_no_batch),
	    cmocka_unit_test(test_model_parts_and_fed_batches_are_no_dataset),
	    cmocka_unit_test(test_implausible_prefetch_depth_is_no_finding),
	    cmocka_unit_test(test_refilled_ring_is_prefetch),
	    cmocka_unit_test(test_labels_tied_only_by_time_stay_apart),
	    cmocka_unit_test(test_labels_allocated_beside_the_data_join_its_finding),
	    cmocka_unit_test(test_each_day_of_data_is_its_own_finding),
	    cmocka_unit_test(test_bucket_written_from_gradients_is_gradients),
	    cmocka_unit_test(test_kept_gradients_beside_a_target_network),
	    cmocka_unit_test(test_kept_gradients_with_momentum),
	    cmocka_unit_test(test_bucket_written_from_kept_gradients),
	    cmocka_unit_test(test_channel_fed_from_the_bucket_is_no_weight),
	    cmocka_unit_test(test_flattened_parameters_are_weights),
	    cmocka_unit_test(test_flat_weights_with_per_parameter_state_train),
	    cmocka_unit_test(test_fused_from_staging_copies_is_weights),
	    cmocka_unit_test(test_matrix_assembled_from_data_is_data),
	    cmocka_unit_test(test_caching_allocator_segments_are_pools),
	    cmocka_unit_test(test_cached_segments_made_in_training_are_activations),
	    cmocka_unit_test(test_stream_ordered_beside_caching_segments),
	    cmocka_unit_test(test_growing_regions_are_pools),
	    cmocka_unit_test(test_regions_of_a_scoring_job),
	    cmocka_unit_test(test_regions_after_a_large_request_are_pools),
	    cmocka_unit_test(test_chunk_next_to_a_pool_chunk_is_pool),
	    cmocka_unit_test(test_chunk_released_within_a_step_is_not_pool),
	    cmocka_unit_test(test_device_made_buffers_need_a_weight_beside),
	    cmocka_unit_test(test_ema_copy_beside_per_step_gradients),
	    cmocka_unit_test(test_ema_deepcopy_before_training),
	    cmocka_unit_test(test_donated_model_and_state_made_on_the_device),
	    cmocka_unit_test(test_evaluation_temp_the_size_of_a_weight_hides_no_gradient),
	    cmocka_unit_test(test_rollout_store_written_from_batches),
	    cmocka_unit_test(test_chunked_upload_is_not_a_pool),
	    cmocka_unit_test(test_short_lived_scratch_is_not_a_pool),
	    cmocka_unit_test(test_segment_after_a_slow_first_upload_is_a_pool),
	    cmocka_unit_test(test_framework_from_modules),
	    cmocka_unit_test(test_replicated_weights_and_their_state),
	    cmocka_unit_test(test_dataset_converted_on_the_device),
	    cmocka_unit_test(test_dataset_derived_on_the_device),
	    cmocka_unit_test(test_shared_odd_rows),
	    cmocka_unit_test(test_region_the_size_of_the_data_region_is_no_conversion),
	    cmocka_unit_test(test_cache_blocks_are_no_optimizer_state),
	    cmocka_unit_test(test_gradient_buffer_made_with_the_model),
	    cmocka_unit_test(test_one_trained_size_freezes_the_rest),
	    cmocka_unit_test(test_kept_activations_adding_up_to_a_bucket),
	    cmocka_unit_test(test_rows_every_step_before_the_model),
	    cmocka_unit_test(test_labels_uploaded_right_after_the_data),
	    cmocka_unit_test(test_grown_table_replaces_the_old),
	    cmocka_unit_test(test_an_upload_an_epoch_is_no_batch_stream),
	    cmocka_unit_test(test_slot_made_after_its_gradient),
	    cmocka_unit_test(test_steps_with_per_parameter_returns_after_a_set_up_pass),
	    cmocka_unit_test(test_steps_end_one_batch_above_the_epochs_end),
	    cmocka_unit_test(test_steps_after_an_evaluation_staircase),
	    cmocka_unit_test(test_batch_handover_returns_are_one_step_end),
	    cmocka_unit_test(test_slow_loaded_weights_of_one_size_are_no_batches),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
