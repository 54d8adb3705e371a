/* Training steps of each process: from "step N" markers (vramtrace_mark)
 * when present, else from the period of the job's recurring allocation and
 * free pattern. Fills vt_proc.step_t / nsteps / step_period_ns / step_source.
 *
 * Without markers a step is found as a valley of the process's live bytes on
 * its busiest device: every step allocates its transient tensors and frees
 * them again, so live bytes come back to the same level (the long-lived
 * state plus the batches in flight) once per step. The step-end level is the
 * lowest valley level (within 0.5 %, so a slow drift is one level) that
 * recurs at least 3 times across at least half of the run (or one batch
 * above it, where a prefetcher drains at each epoch's end); valleys at or
 * below it end steps; one more step is counted after the last valley when
 * the job allocates about a step's worth after it. That works whether or not
 * the job uploads anything per step (a dataset sliced on the device uploads
 * nothing). */
#ifndef VT_STEPS_H
#define VT_STEPS_H

#include "model.h"

void vt_steps_find(struct vt_model *m);

/* Index of the step that contains time t in process p (-1: before the
 * first step). */
int vt_step_of(const struct vt_proc *p, uint64_t t_ns);

/* ... the same over any step table (start times, ascending). */
int vt_step_in(const uint64_t *step_t, uint32_t nsteps, uint64_t t_ns);

/* Steps found from one device's own allocations alone (the period rule
 * above, on dev instead of the busiest device): where two devices are
 * driven by two threads, each has its own steps. 0 when none are found;
 * the caller frees out->t. */
struct vt_step_table {
	uint64_t *t; /* start time of each step */
	uint32_t n;
	uint64_t period_ns; /* median step length */
};
int vt_steps_on_device(const struct vt_model *m, const struct vt_proc *p, int dev,
                       struct vt_step_table *out);

const char *vt_step_source_name(enum vt_step_source s);

#endif
