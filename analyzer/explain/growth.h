/* Memory that grows every step (the `growth_per_step` finding): bytes
 * allocated in a training step that are still live at a later moment, from
 * the same site, step after step: a tensor kept in a Python list, a cache
 * that never evicts, a tensor captured by a closure.
 *
 * Per process, device and site (the report's site name, so stacks that
 * differ only below the job's own frame are one site), over the closed
 * steps (those whose next step began by the moment looked at) after the
 * first VT_GROWTH_WARMUP_STEPS:
 *  - the site kept bytes (allocations still live at the moment) in at
 *    least VT_GROWTH_MIN_STEPS of them and in at least half of them;
 *  - and still did in the last quarter of them (at least the last 2): a
 *    cache or a pool that filled in the first steps and stopped is no
 *    growth.
 * The moment is the end of the trace, or the process's first out-of-memory
 * failure when it had one (what it kept up to then filled the device).
 * Bytes per step is the median of what each counted step kept (steps that
 * kept nothing count as 0); the device fills at that rate from the live
 * bytes then to its capacity. */
#ifndef VT_GROWTH_H
#define VT_GROWTH_H

#include <stddef.h>
#include <stdint.h>

#include "model.h"

/* Steps left out at the start: frameworks make what they keep in the first
 * steps (optimizer state, cuBLAS workspaces, autotuned kernels, a jit
 * cache's first traces). */
#define VT_GROWTH_WARMUP_STEPS 3
/* Steps that must keep bytes: four steps in a row is no coincidence of a
 * prefetched batch or a step cut short. */
#define VT_GROWTH_MIN_STEPS 4

struct vt_growth {
	uint32_t proc;           /* index into vt_model.procs */
	uint32_t stack_id;       /* a stack of the site (the first kept allocation's) */
	uint8_t device;          /* ordinal */
	uint64_t bytes_per_step; /* median over the counted steps */
	uint64_t kept_bytes;     /* all the site's step allocations live then */
	uint64_t kept_allocs;
	uint32_t steps_kept;     /* counted steps that kept bytes */
	uint32_t steps_counted;  /* closed steps after the warm-up */
	uint32_t first_step;     /* first step (0-based) that kept bytes, warm-up included */
	uint64_t t_first_ns;     /* the first kept allocation */
	uint64_t at_ns;          /* the moment looked at */
	int out_of_memory;       /* the moment is the process's out-of-memory failure */
	uint64_t live_bytes;     /* live on the device then, all processes */
	uint64_t capacity_bytes; /* 0: unknown */
	uint64_t steps_to_fill;  /* at that rate; UINT64_MAX: unknown capacity */
	uint64_t t_fill_ns;      /* about when; VT_T_NEVER: unknown */
	int confidence;          /* 60..95, from the share of counted steps that kept */
};

struct vt_growths {
	struct vt_growth *v;
	uint32_t n;
};

/* What grew every step up to at_ns (VT_T_NEVER: the end of the trace), in
 * processes, devices and bytes kept (most first). Needs the model's steps
 * (vt_steps_find, or vt_classify), and nothing else: it can run on a model
 * of a job that still runs, at any moment. */
void vt_growth_find(const struct vt_model *m, uint64_t at_ns, struct vt_growths *out);
void vt_growths_free(struct vt_growths *g);

/* The rate and when the device fills, in words, steps counted from 1: "1.00
 * MiB a step since step 4 (7 of 7 steps, 7.00 MiB live); at that rate GPU 0 fills in 1017 steps,
 * at about t=12.5 s" ("GPU 0 filled: out of memory at t=..." after one). */
void vt_growth_text(const struct vt_growth *g, char *buf, size_t len);

#endif
