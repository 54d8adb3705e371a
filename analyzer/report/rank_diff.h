/* Two runs of a distributed job compared rank to rank (`vramtrace diff` of
 * two job folders, or of two traces whose processes carry ranks): each
 * rank's own peak and bytes by category at it (ranks.h), matched by the
 * launcher's rank number, or by position when a side has unranked
 * processes (then said: host:pid never matches across runs). */
#ifndef VT_RANK_DIFF_H
#define VT_RANK_DIFF_H

#include <stdint.h>

#include "ranks.h"

struct vt_rank_change {
	const struct vt_rank_row *base, *new_; /* NULL where that run lacks the rank */
	int64_t peak_delta;                    /* new peak - base peak */
	int64_t cat_delta[VT_CAT_COUNT];
	int top_category; /* the category that moved most, -1: none moved */
};

struct vt_rank_diff {
	struct vt_rank_change *v; /* base's order, then ranks only new has */
	uint32_t n;
	int by_rank;  /* matched by rank number; 0: by position */
	int32_t most; /* the change that moved the most bytes, -1: none moved */
};

/* 0, or -1 when out of memory. */
int vt_rank_diff_build(struct vt_rank_diff *d, const struct vt_job *base,
                       const struct vt_job *new_);
void vt_rank_diff_free(struct vt_rank_diff *d);

/* Bytes change c moved: its peak's or its largest category's, whichever
 * is larger (a rank can trade one category for another at one peak). */
uint64_t vt_rank_change_size(const struct vt_rank_change *c);

#endif
