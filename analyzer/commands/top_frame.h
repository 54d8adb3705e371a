/* What `vramtrace top` shows at one refresh, worked out from a followed
 * trace (model_load.h, vt_trace_follow) and, once the job has ended (or
 * for --once), from the report's own builder (report.h): the categories
 * and findings need the whole run classified, so they come from the code
 * path `vramtrace report` takes, and agree with it. */
#ifndef VT_TOP_FRAME_H
#define VT_TOP_FRAME_H

#include <stdint.h>
#include <stdio.h>

#include "model.h"

struct vt_trace_follow;

#define VT_TOP_SITES 10
#define VT_TOP_FINDINGS 8

struct vt_top_device {
	int ordinal;
	uint64_t live, peak, capacity; /* capacity 0: unknown */
	int have_cats;                 /* cats: from the report (job ended / --once) */
	uint64_t cats[VT_CAT_COUNT];   /* at the device's peak */
};

struct vt_top_site {
	char name[160];
	int device;
	uint64_t bytes, allocs;
};

struct vt_top_proc {
	int32_t pid, exit_code;
	int state; /* enum vt_follow_state */
};

struct vt_top_frame {
	const char *dir;
	int state; /* the job's: enum vt_follow_state (running while any runs) */
	uint32_t nprocs, joined, left; /* left: processes gone */
	struct vt_top_proc procs[16];  /* the first 16 */
	uint64_t events, steps;        /* fed so far */
	double events_per_s, steps_per_s;
	struct vt_top_device devs[VT_MAX_DEVICES];
	int ndevs;
	struct vt_top_site sites[VT_TOP_SITES]; /* live now, biggest first */
	int nsites;
	char findings[VT_TOP_FINDINGS][256];
	int nfindings;
	int have_report; /* categories and findings filled */
};

/* Fill fr from f after a poll; dt_s: seconds since the previous frame
 * (0: no rates), prev: that frame or NULL. */
void vt_top_frame_fill(struct vt_top_frame *fr, struct vt_trace_follow *f, const char *dir,
                       const struct vt_top_frame *prev, double dt_s);
/* The categories and findings from the report's builder over the whole
 * trace (a full model, loaded once). 0, or -1 when it cannot be built. */
int vt_top_frame_add_report(struct vt_top_frame *fr, const char *dir);

const char *vt_top_state_name(int state);
/* The frame as text (--once) or one JSON object (--json). 0 or -1. */
int vt_top_frame_text(const struct vt_top_frame *fr, FILE *out);
int vt_top_frame_json(const struct vt_top_frame *fr, FILE *out);

#endif
