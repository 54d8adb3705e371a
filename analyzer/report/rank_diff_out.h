/* Two jobs compared rank to rank (rank_diff.h), as text and as the JSON
 * keys "ranks_matched_by", "ranks" and "rank_changed_most" (written into an
 * object the caller opened). */
#ifndef VT_RANK_DIFF_OUT_H
#define VT_RANK_DIFF_OUT_H

#include <stdio.h>

#include "json_out.h"
#include "rank_diff.h"

void vt_rank_diff_write_text(const struct vt_rank_diff *d, FILE *out);
void vt_rank_diff_json_fields(const struct vt_rank_diff *d, struct vt_json *j);

/* "rank 2" or "host:pid" of whichever side has the change's rank. */
void vt_rank_change_label(const struct vt_rank_change *c, char *buf, size_t len);

#endif
