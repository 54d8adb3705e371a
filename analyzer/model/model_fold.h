/* The folding model: the full model's history, less the short-lived
 * allocations of a steady training loop, which are counted instead.
 *
 * A full model (model_history.h) keeps a 64-byte record per allocation of
 * the trace: 4 GiB at 100 M events, and most of them are the activations
 * and gradients of step after step, each made and freed within a step or
 * two. The classifier reads such an allocation only through its (size,
 * device) counts, its step, its place among its size's allocations of that
 * step, and its stack. A folding model replays with the same code
 * (model.c) and keeps every record the full model keeps, except that an
 * allocation freed
 *   - in a process whose steps come from step markers (so its step is
 *     known when it is freed), born in step VT_FOLD_KEEP_STEPS or later
 *     and freed in the same or the next step,
 *   - with no mapping, no handle, charged to a known device, and either
 *     no copies or only host-to-device ones, each of the whole allocation
 *     (an upload: a batch buffer made, filled and freed every step),
 *   - not live at its device's peak so far nor at a failed allocation,
 * is folded into a group (struct vt_fold_group) of allocations alike in
 * all of those (an upload's group also by the stack of its first copy,
 * with its copies summed), and its record and copy statistics are reused.
 * What the classifier's counting rules read over all allocations of a
 * (size, device) is counted as the replay goes, for every allocation
 * (struct vt_fold_size); what the rules read per step and device (the
 * steps that allocated, the uploads a step made and how many were alive
 * at once) per process and device (struct vt_fold_dev).
 *
 * The classifier (explain/classify*.c) reads the groups where it reads
 * records; where the folded evidence cannot give the full model's answer
 * (a folded allocation that would be long-lived, processes sharing a
 * device, step markers out of time order...) it says so
 * (vt_fold_set_inexact) and the caller loads the full model instead, so
 * the classification never differs from the full model's.
 *
 * Memory: the records the full model would keep that are not folded (the
 * first steps, the long-lived, those live at the peak, those with other
 * copies), the groups (per process, device, size, stack, place in step)
 * and the counters; the free list reuses folded records, so a steady loop
 * faults in no fresh pages. Step markers are still kept one by one, as
 * their times (vt_proc.step_marks, 8 bytes a step); the replay itself
 * keeps the last few. */
#ifndef VT_MODEL_FOLD_H
#define VT_MODEL_FOLD_H

#include <stdint.h>

#include "model.h"

#define VT_FOLD_KEEP_STEPS 8 /* the first steps, kept whole */
#define VT_FOLD_HIST 16      /* distinct per-step counts kept per (size, device) */

/* Folded allocations alike in all the classifier and the report read. */
struct vt_fold_group {
	uint64_t bytes;
	uint32_t proc, stack_id;
	uint32_t place;       /* its place among its (size, device)'s allocations of its step */
	uint8_t device, span; /* span: step of the free - step of the allocation (0, 1) */
	uint8_t api, rt_api, kind;
	/* set by the classifier, as in struct vt_alloc */
	uint8_t category, confidence, reason;
	uint64_t count;
	/* an upload's (h2d_copies > 0): the stack of each one's first
	 * host-to-device copy, their copies summed, the earliest first one */
	uint32_t h2d_stack_id;
	uint64_t h2d_bytes, h2d_copies, t_first_h2d;
};

/* Every allocation of one (size, device) of a process, counted as the
 * classifier's count_keys and count_sizes count them. */
struct vt_fold_size {
	uint64_t bytes;
	uint32_t proc;
	uint8_t device;
	uint32_t count, steps_seen; /* allocations; steps that made one */
	int last_step;
	uint64_t folded;  /* of them folded */
	uint64_t uploads; /* of the folded, uploads (filled from the host) */
	/* of the folded, those freed after the latest allocation on their
	 * device then (its vt_fold_dev.allocs was torn_mark): the device's
	 * teardown frees them when no allocation came after */
	uint64_t torn, torn_mark;
	/* from step VT_FOLD_KEEP_STEPS on: how many steps made n of them, for
	 * the first VT_FOLD_HIST values of n in the order they came */
	int era_step;
	uint32_t in_step;
	uint64_t era_allocs;
	struct {
		uint32_t count, steps;
	} hist[VT_FOLD_HIST];
	uint32_t nhist;
};

/* How many steps made n uploads (or batch buffers), n up to
 * VT_UPLOADS_CAP (the last: that many or more), and the most bytes one
 * such step made: what a batch is, whether its steps are kept or folded. */
#define VT_UPLOADS_CAP 8
struct vt_uploads_per_step {
	uint32_t steps[VT_UPLOADS_CAP + 1];
	uint64_t bytes[VT_UPLOADS_CAP + 1];
};
/* One step that made n (n > 0) of `bytes` in all. */
void vt_uploads_count(struct vt_uploads_per_step *u, uint32_t n, uint64_t bytes);
/* Add the steps of `from` to `into`. */
void vt_uploads_merge(struct vt_uploads_per_step *into, const struct vt_uploads_per_step *from);

/* What the rules read per step of one device of a process, of the
 * allocations folded there. */
#define VT_FOLD_RUNS 32
#define VT_FOLD_OPEN_STEPS 4
struct vt_fold_dev {
	/* the folded allocation made last (by seq), and the latest free */
	uint64_t last_seq, last_t_alloc, last_t_free;
	/* the folded upload made first (by seq; seq 0: none) */
	uint64_t first_up_seq, first_up_t;
	/* allocations made there, the latest one's time; skew: a folded free
	 * came before an allocation but later in time (clocks of threads) */
	uint64_t allocs, last_made_t;
	int skew;
	/* the steps that made a folded allocation, as runs of steps in a row */
	struct {
		int first, last;
	} runs[VT_FOLD_RUNS];
	uint32_t nruns;
	struct vt_uploads_per_step up; /* folded uploads */
	int lost; /* a step came after later ones, or more runs: runs and up_* unknown */
	/* at most this many allocations made from step VT_FOLD_KEEP_STEPS on
	 * and filled from the host were alive at once (a bound: each counts
	 * from its first copy, with the frees since it was made) */
	uint32_t up_high;
	/* replay state: the filled ones alive, the steps still open */
	uint32_t up_live;
	int top;
	struct {
		int step;
		uint32_t any, uploads;
		uint64_t bytes;
	} open[VT_FOLD_OPEN_STEPS];
};

struct vt_model *vt_model_new_folding(void);
int vt_model_is_folding(const struct vt_model *m);

/* The first step whose allocations may be folded. */
uint32_t vt_fold_keep_steps(const struct vt_model *m);
/* The groups (NULL, 0 for another model). */
struct vt_fold_group *vt_fold_groups(const struct vt_model *m, uint32_t *n);
/* The counters of (proc, bytes, device), NULL when none was folded there. */
const struct vt_fold_size *vt_fold_size_of(const struct vt_model *m, uint32_t proc, uint64_t bytes,
                                           uint8_t device);
/* The folded allocations of (proc, device), NULL when none. */
const struct vt_fold_dev *vt_fold_dev_of(const struct vt_model *m, uint32_t proc, uint8_t device);
/* Whether step s is among the steps of d that made a folded allocation;
 * -1 when d does not know (lost). */
int vt_fold_dev_made_in(const struct vt_fold_dev *d, int s);
/* Allocations of process proc that were folded. */
uint64_t vt_fold_folded(const struct vt_model *m, uint32_t proc);
/* Of them, uploads (filled from the host). */
uint64_t vt_fold_uploads(const struct vt_model *m, uint32_t proc);
/* Whether process proc may have folded an allocation made between the
 * allocations of seq a and b: the kept records around a folded one are not
 * neighbours in the full model (a rule that reads the records next to one
 * must then say it is inexact). */
int vt_fold_made_between(const struct vt_model *m, uint32_t proc, uint64_t seq_a, uint64_t seq_b);
/* 1 while the folded evidence gives the full model's answers; 0 and why
 * once a rule found it cannot. */
int vt_fold_exact(const struct vt_model *m, const char **why);
void vt_fold_set_inexact(const struct vt_model *m, const char *why);
/* Allocation records held at most at once: the model's memory bound. */
uint32_t vt_fold_records_high(const struct vt_model *m);

#endif
