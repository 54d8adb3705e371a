/* The out-of-memory finding (`out_of_memory`): the first out-of-memory event
 * of a trace, said first by `report` (text, JSON, HTML). A driver OOM (an
 * allocation that returned CUDA_ERROR_OUT_OF_MEMORY) when the trace has one,
 * else a framework's own OOM message seen on the job's stderr: the same
 * event `vramtrace oom DIR` explains at length (oom.h), here in brief: the
 * device, the bytes asked for, what was free then, and what held the device
 * by category and by site.
 *
 * It also reads the other findings again in the light of the failure
 * (oom_context.h), so that advice fits what the job had reached. */
#ifndef VT_OOM_FINDING_H
#define VT_OOM_FINDING_H

#include <stddef.h>
#include <stdint.h>

#include "findings.h"
#include "model.h"

#define VT_OOM_FINDING_SITES 3

struct vt_oom_holder {
	char site[256];
	int category; /* of most of its live bytes */
	uint64_t bytes;
};

struct vt_oom_finding {
	int present;     /* the trace holds an out-of-memory event */
	int source;      /* enum vt_oom_source (oom.h) */
	uint32_t events; /* events of that source in the trace */
	int32_t pid;     /* the process that failed (0: unknown) */
	int device;      /* -1: unknown */
	uint64_t t_ns;
	uint64_t request_bytes; /* 0: the message named no size */
	char api[48];           /* the failed call, or the framework's name */
	char site[256];         /* the failed request's site ("" if none) */
	int have_free, free_estimated;
	uint64_t free_bytes, total_bytes;
	uint64_t live_bytes; /* tracked live on the device then */
	uint64_t cats[VT_CAT_COUNT];
	struct vt_oom_holder holders[VT_OOM_FINDING_SITES]; /* most bytes first */
	uint32_t nholders;
	char message[512];       /* the framework's line, "" for a driver OOM */
	char likely_cause[1024]; /* growth on that device (oom.h), "" when none */
};

/* On m finished and classified (vt_classify), finds the first OOM event and fills out
 * (out->present 0 when there is none); with one, drops from findings
 * (computed on m) what the failure makes untrue (oom_context.h). */
void vt_oom_finding_find(struct vt_model *m, struct vt_findings *findings,
                         struct vt_oom_finding *out);

/* The category holding most of the live bytes then. */
int vt_oom_finding_main_category(const struct vt_oom_finding *f);

/* "vramtrace oom DIR", DIR quoted for a POSIX shell when it needs it. */
void vt_oom_finding_command(const char *dir, char *buf, size_t len);

#endif
