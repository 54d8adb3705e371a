/* The peak at another batch size (`vramtrace predict`): traces of one job at
 * two or more batch sizes, each reported on its own (report.h: the
 * classifier's bytes by category at each device's peak), and per device and
 * category a line bytes = a + b * batch through them.
 *
 * The line goes through the runs at the smallest and the largest batch;
 * every other run checks it (a miss of more than VT_PREDICT_MISS of its
 * bytes makes the category uncertain). A prediction is the sum of its
 * categories, each rounded the way the allocator rounds: every allocation
 * up to the granularity (its count at the peak held), a pool category up
 * to whole chunks when its allocations share one (BFC regions, caching
 * segments). A category that shrinks as the batch grows is held at the
 * most it reached, never extrapolated down.
 *
 *   struct vt_predict p; vt_predict_init(&p, granularity);
 *   for each trace: vt_predict_add_run(&p, &report, batch, dir);
 *   vt_predict_fit(&p, err, errlen);
 *   vt_predict_peak(&p, dev, batch), vt_predict_largest_fit(&p, usable)
 *   vt_predict_free(&p);
 */
#ifndef VT_PREDICT_H
#define VT_PREDICT_H

#include <stddef.h>
#include <stdint.h>

#include "model.h"
#include "report.h"

#define VT_PREDICT_MISS 0.05           /* an extra run off the line by more: uncertain */
#define VT_PREDICT_NO_LIMIT UINT64_MAX /* largest fit: memory does not grow with the batch */
#define VT_PREDICT_MAX_BATCH (1ull << 30)

/* Why a category's prediction is uncertain (bits of vt_predict_cat.uncertain). */
enum vt_predict_doubt {
	VT_DOUBT_SHRINKS = 1u << 0,     /* fewer bytes at a larger batch */
	VT_DOUBT_OFF_LINE = 1u << 1,    /* an extra run missed the line */
	VT_DOUBT_COUNT = 1u << 2,       /* a different number of allocations at the peak */
	VT_DOUBT_POOL_CHUNKS = 1u << 3, /* pool growth in chunks: rounded up */
};

/* What one trace contributes: its batch and, per device, what the report
 * counted at that device's peak. */
struct vt_predict_run {
	char dir[512];
	uint64_t batch;
	uint64_t allocs_per_step_x10; /* main process, middle steps, x10; 0 unknown */
	struct vt_predict_dev {
		int used;
		uint64_t peak;                /* the device's peak, measured */
		uint64_t total;               /* device memory from the trace, 0 unknown */
		uint64_t cats[VT_CAT_COUNT];  /* bytes at the peak (the report's) */
		uint32_t count[VT_CAT_COUNT]; /* allocations behind them */
		uint64_t slack[VT_CAT_COUNT]; /* their rounding up to the granularity */
		uint64_t chunk[VT_CAT_COUNT]; /* gcd of the category's allocation sizes */
	} dev[VT_MAX_DEVICES];
};

enum vt_predict_shape { VT_SHAPE_ABSENT = 0, VT_SHAPE_CONSTANT, VT_SHAPE_LINEAR };

struct vt_predict_cat {
	int shape;   /* enum vt_predict_shape */
	double a, b; /* bytes = a + b * batch (b: bytes per sample), to show */
	/* the line in whole bytes, which predictions use: bytes at batch x0,
	 * changing by dy every dx samples */
	uint64_t y0, x0, dx;
	int64_t dy;
	uint64_t most;      /* the most any run had: a shrinking category's value */
	uint32_t count;     /* allocations at the peak in the largest run */
	uint64_t slack;     /* their rounding in the largest run */
	uint64_t chunk;     /* pool chunk, 0 when not chunked */
	unsigned uncertain; /* enum vt_predict_doubt bits */
	double worst_miss;  /* largest relative miss of an extra run */
};

struct vt_predict {
	struct vt_predict_run *runs; /* sorted by batch after fit */
	int nruns, cap_runs;
	uint64_t granularity;
	int allocs_per_step_differ; /* runs disagree on allocations per step */
	int dev_used[VT_MAX_DEVICES];
	struct vt_predict_cat cat[VT_MAX_DEVICES][VT_CAT_COUNT];
};

void vt_predict_init(struct vt_predict *p, uint64_t granularity);
void vt_predict_free(struct vt_predict *p);

/* Summarise a built report of the run at `batch` (its model may be freed
 * afterwards). */
void vt_predict_add_run(struct vt_predict *p, const struct vt_report *r, uint64_t batch,
                        const char *dir);

/* The batch size a trace states in a "batch_size N" (or "batch_size=N")
 * marker; 0 when it has none. */
uint64_t vt_predict_batch_mark(const struct vt_model *m);

/* Fit every device and category over the runs added. Returns 0, or -1 with
 * a one-line reason (fewer than two runs, two runs at one batch size). */
int vt_predict_fit(struct vt_predict *p, char *err, size_t errlen);

/* One category's bytes at batch, rounded as the allocator rounds. */
uint64_t vt_predict_cat_bytes(const struct vt_predict *p, int dev, int cat, uint64_t batch);
/* Device dev's predicted peak at batch: its categories summed. */
uint64_t vt_predict_peak(const struct vt_predict *p, int dev, uint64_t batch);
/* 1 when some device's prediction grows with the batch. */
int vt_predict_peak_grows(const struct vt_predict *p);
/* The largest batch (1..VT_PREDICT_MAX_BATCH) whose predicted peak stays
 * within usable[dev] on every device used; 0 when not even 1 does,
 * VT_PREDICT_NO_LIMIT when the peak does not grow with the batch and fits. */
uint64_t vt_predict_largest_fit(const struct vt_predict *p, const uint64_t *usable);
/* Any category uncertain, or allocations per step that differ; with
 * ignore_chunks, pool chunks alone (a prediction rounded up) do not count. */
int vt_predict_uncertain(const struct vt_predict *p, int ignore_chunks);

#endif
