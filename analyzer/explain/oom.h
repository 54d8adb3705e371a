/* The out-of-memory post-mortem (`vramtrace oom`), computed from a classified
 * model; rendered by cmd_oom.c as text or JSON.
 *
 * Which event: the N-th driver out-of-memory (a failed allocation that
 * returned CUDA_ERROR_OUT_OF_MEMORY), in trace time order; when the trace
 * has none, the N-th framework OOM message `vramtrace run` saw on the job's
 * stderr (VT_MARK_FRAMEWORK_OOM, run_relay.h): the framework's pool was
 * exhausted without the driver ever failing.
 *
 * What it says about that moment, on that device: the failed request, the
 * device's capacity and free memory (the VT_REC_MEMINFO the shim takes right
 * after an OOM; otherwise the last reading before it, moved by the tracked
 * bytes allocated and freed since: an estimate, said so), live bytes by
 * category, the top live sites, the largest live allocations, untracked bytes
 * (used per cuMemGetInfo minus tracked live bytes: contexts, kernel images,
 * other processes), how much would have had to be freed, and the advice of
 * the flags that held memory then. And, for every process of the job,
 * whether it exited cleanly; for one that did not, its last state.
 */
#ifndef VT_OOM_H
#define VT_OOM_H

#include <stdint.h>

#include "findings.h"
#include "model.h"
#include "stderr_scan.h"

#define VT_OOM_TOP 5
#define VT_OOM_SITE_LEN 256

enum vt_oom_source { VT_OOM_NONE = 0, VT_OOM_DRIVER, VT_OOM_FRAMEWORK };

struct vt_oom_site {
	char name[VT_OOM_SITE_LEN];
	int category; /* of most of its live bytes */
	uint64_t bytes;
	uint64_t by_cat[VT_CAT_COUNT];
	uint32_t allocs;
};

struct vt_oom_alloc {
	uint64_t bytes, t_alloc, addr;
	int category;
	uint8_t device;
	char site[VT_OOM_SITE_LEN];
};

/* How one process of the job ended, and what it held at its last event. */
struct vt_oom_proc {
	uint32_t proc; /* index into model.procs */
	int clean;     /* exited through exit()/return */
	int execed;    /* replaced by execve (its next image has a log) */
	int launcher;  /* `vramtrace run`'s own log, not the job */
	int running;   /* not exited, and its process runs now */
	uint64_t last_t_ns;
	const char *last_mark; /* text of its last step/user mark, NULL if none */
	uint64_t live_bytes;   /* its allocations live at its last event */
	uint32_t live_allocs;
	uint64_t cats[VT_CAT_COUNT];
};

struct vt_oom_report {
	struct vt_model *m;
	struct vt_findings findings;
	int source;     /* enum vt_oom_source */
	uint32_t index; /* 1-based, among events of that source */
	uint32_t driver_count, framework_count;
	/* the driver OOM */
	const struct vt_failed_alloc *failed;
	/* the framework OOM (its mark, and the message parsed again) */
	const struct vt_mark *fw_mark;
	uint32_t fw_proc;
	int fw_parsed;
	struct vt_oom_message fw;
	/* where and when */
	char site[VT_OOM_SITE_LEN]; /* the failed request's site ("" if none) */
	uint64_t t_ns;
	int device; /* -1: unknown, all devices counted */
	struct vt_moment at;
	uint64_t request_bytes; /* 0 when unknown */
	int have_meminfo;
	uint64_t free_bytes, total_bytes;
	int free_estimated;          /* from an earlier reading, moved by the tracked
	                                bytes allocated and freed since */
	uint64_t tracked_at_meminfo; /* tracked live bytes at that reading */
	uint64_t tracked_bytes;      /* live, charged, on device, all processes */
	uint32_t live_allocs;
	int have_untracked;
	uint64_t untracked_bytes;
	int have_need;
	uint64_t need_to_free; /* request - free, when the request exceeded it */
	uint64_t cats[VT_CAT_COUNT];
	struct vt_oom_site *sites; /* live sites then, most bytes first */
	uint32_t nsites;
	struct vt_oom_alloc largest[VT_OOM_TOP];
	uint32_t nlargest;
	uint32_t advice[64]; /* indexes into flags.v of contributing flags */
	uint32_t nadvice;
	/* a growth_per_step flag on that device: "growth_per_step: SITE keeps
	 * 1.00 MiB a step since step 4 ..." ("" when none) */
	char likely_cause[1024];
	/* the processes */
	struct vt_oom_proc *procs;
	uint32_t nprocs;
	int clean_exit; /* every job process exited cleanly */
	int running;    /* some job process still runs */
};

/* Classifies m (if not yet) and computes the report for the index-th event
 * (1 = first). Returns 0, or -1 with a one-line reason in err (index past
 * the last event). */
int vt_oom_build(struct vt_oom_report *r, struct vt_model *m, uint32_t index, char *err,
                 size_t errlen);

/* vt_oom_build on a model finished and classified already (the report's
 * own post-mortem, right after it classified the model). */
int vt_oom_build_classified(struct vt_oom_report *r, struct vt_model *m, uint32_t index, char *err,
                            size_t errlen);
void vt_oom_free(struct vt_oom_report *r);

#endif
