/* One view of a distributed job: the processes of one or more traces (one
 * trace directory per host) as ranks, each with its own peak, the
 * imbalance between them per category, and how their timelines were lined
 * up. Built from the traces' reports (report.h); rendered by ranks_out.h. */
#ifndef VT_RANKS_H
#define VT_RANKS_H

#include <stdint.h>

#include "report.h"

#define VT_RANK_DIFF_SITES 3 /* sites named per imbalance */

struct vt_rank_row {
	const struct vt_report *r; /* the trace it is in */
	uint32_t trace;            /* index of that trace among the job's */
	uint32_t proc;             /* in r->m->procs */
	int32_t rank;              /* from the launcher's environment; -1: none */
	int device;                /* the device most of its peak was on, -1: none */
	uint64_t peak_bytes;       /* its own most bytes live at once, all devices */
	struct vt_moment peak;
	uint64_t cats[VT_CAT_COUNT]; /* live at its peak, by category */
	uint32_t findings;           /* findings whose site is in this process */
	uint32_t failed_allocs;      /* its driver allocations that failed (out of memory) */
	int peak_step;               /* step its peak fell in, -1: before any / none */
	uint64_t start_wall_ns;      /* CLOCK_REALTIME its log started at */
	uint64_t step0_wall_ns;      /* CLOCK_REALTIME its first step started at, 0: none */
};

/* What one rank holds more of than another, in one category. */
struct vt_rank_site_gap {
	char name[256];
	uint64_t hi_bytes, lo_bytes; /* at the two ranks' peaks */
};

struct vt_rank_imbalance {
	int category;
	uint32_t hi, lo; /* rows holding the most and the least of it at their peaks */
	struct vt_rank_site_gap sites[VT_RANK_DIFF_SITES];
	uint32_t nsites;
};

enum vt_align_by { VT_ALIGN_WALL_CLOCK = 0, VT_ALIGN_STEP_MARKERS };

struct vt_rank_alignment {
	enum vt_align_by by;
	uint32_t common_steps;    /* steps every rank marked (step markers) */
	uint64_t max_skew_ns;     /* most wall-clock spread of one step's start over ranks */
	uint64_t start_spread_ns; /* last log start - first, wall clock */
};

struct vt_job {
	struct vt_rank_row *rows; /* by rank, then unranked by host and pid */
	uint32_t nrows;
	int all_ranked; /* every row has a rank from its environment */
	struct vt_rank_imbalance imbalance[VT_CAT_COUNT]; /* most bytes apart first */
	uint32_t nimbalance;
	struct vt_rank_alignment alignment;
};

/* The job over n traces' reports: a row per process that allocated device
 * memory. Returns 0, or -1 when out of memory. */
int vt_job_build(struct vt_job *j, const struct vt_report *const *reports, uint32_t n);
void vt_job_free(struct vt_job *j);

/* Whether the traces make a job worth the rank view: several traces, or
 * one with two or more processes that recorded a rank. */
int vt_job_wanted(const struct vt_report *const *reports, uint32_t n);

/* "rank 2" or "host:pid" (a process with no rank environment). */
void vt_rank_label(const struct vt_rank_row *row, char *buf, size_t len);

/* The same for a process of a model. */
void vt_proc_rank_label(const struct vt_proc *p, char *buf, size_t len);

/* CLOCK_REALTIME of trace time t_ns in process p: its log's wall-clock
 * base plus the time since its log started (how hosts are lined up). */
uint64_t vt_proc_wall_ns(const struct vt_proc *p, uint64_t t_ns);

/* The row of rank `rank`, or NULL. */
const struct vt_rank_row *vt_job_find_rank(const struct vt_job *j, int32_t rank);

#endif
