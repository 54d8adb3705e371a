/* What `vramtrace report` says, computed once from a classified model
 * (report.c) and rendered as text (report_text.h) or JSON (report_json.h). */
#ifndef VT_REPORT_H
#define VT_REPORT_H

#include <stdio.h>

#include "accounting.h"
#include "findings.h"
#include "model.h"
#include "oom_finding.h"

struct vt_site_stat {
	char name[256];
	int category;           /* the category of most of its bytes */
	uint64_t bytes_at_peak; /* live at its device's peak, summed */
	uint64_t allocs;        /* allocations made there, whole trace */
	uint64_t bytes_by_cat[VT_CAT_COUNT];
};

struct vt_report_options {
	int json;
	int top;           /* sites shown (default 10) */
	int with_allocs;   /* --allocs: every allocation in JSON */
	const char *at;    /* --at peak|end|SECONDS, NULL = peak */
	const char *title; /* trace directory, for the text header */
	int verbose;       /* --verbose: the recording cost after each process */
};

struct vt_report_stack_site; /* report_build.c: (process, stack) -> site */

struct vt_report {
	struct vt_model *m;
	struct vt_report_options opt;
	struct vt_findings findings;
	struct vt_oom_finding oom;           /* the first OOM, said first */
	struct vt_accounting accounting;     /* used memory per device, by holder */
	uint64_t cats_at_peak[VT_CAT_COUNT]; /* each device at its peak */
	/* of those, bytes the classifier was unsure of (confidence under
	 * VT_CONFIDENT), by [category][its most likely alternative]
	 * (VT_CAT_COUNT: none) */
	uint64_t unsure_at_peak[VT_CAT_COUNT][VT_CAT_COUNT + 1];
	uint64_t dev_cats[VT_MAX_DEVICES][VT_CAT_COUNT];
	struct vt_moment at; /* --at moment */
	char at_label[64];
	uint64_t at_cats[VT_CAT_COUNT];
	uint64_t at_dev_bytes[VT_MAX_DEVICES];
	struct vt_site_stat *sites; /* sorted, biggest first */
	uint32_t nsites;
	struct vt_report_stack_site *stack_sites; /* site of each allocating stack */
	uint32_t main_proc;                       /* the process steps are read from */
};

/* Classify m (if not yet), compute everything. Returns 0, or -1 with a
 * one-line reason in err (a malformed --at). */
int vt_report_build(struct vt_report *r, struct vt_model *m, const struct vt_report_options *opt,
                    char *err, size_t errlen);
void vt_report_free(struct vt_report *r);

/* The index in r->sites of the site that (process, stack) allocates at:
 * the site table's own grouping, so an export's site column agrees with
 * it. VT_NO_INDEX when that stack made no charged allocation. */
uint32_t vt_report_site_of(const struct vt_report *r, uint32_t proc, uint32_t stack_id);

/* A category's colour, 0xRRGGBB: the text report's bars and the HTML
 * page's bands use the same one. */
uint32_t vt_category_rgb(int cat);

/* The category holding most bytes at the peaks (the report's verdict). */
int vt_report_main_category(const struct vt_report *r);

/* The finding that matters most (the most bytes), or NULL when none. */
const struct vt_finding *vt_report_main_finding(const struct vt_report *r);

/* One line that says it all first: whether the job still runs, the
 * out-of-memory failure if there was one (and what held the device then),
 * else what fills the GPU at its peak and the finding that matters. */
void vt_report_verdict(const struct vt_report *r, char *buf, size_t len);

/* 1 if allocation idx is live at its own device's peak. */
int vt_report_live_at_peak(const struct vt_report *r, const struct vt_alloc *a);

#endif
