/* One scan of the classified model for the finding rules (findings.c,
 * findings_dataset.c): the allocations they look at, each device's upload
 * per step, and what the upload stacks' names say. */
#ifndef VT_FINDINGS_SCAN_H
#define VT_FINDINGS_SCAN_H

#include <stdint.h>

#include "frame_evidence.h"
#include "model.h"

struct vt_findings_scan {
	uint64_t step_h2d[VT_MAX_DEVICES]; /* host-to-device bytes per step */
	uint32_t *idx;                     /* datasets, pools, prefetch buffers */
	uint32_t n;
	struct vt_frame_evidence *fe; /* what the upload stacks' names say */
};

/* Scan m (classified): its datasets, pools and prefetch buffers, and each
 * device's host-to-device bytes per step in training. ds->fe is the
 * caller's to set. */
void vt_findings_scan_make(const struct vt_model *m, struct vt_findings_scan *ds);

/* Bytes worth a whole-dataset finding on device dev: 1 MiB at least, and
 * four times the per-step upload or a tenth of the device. */
int vt_findings_big_enough(const struct vt_model *m, const struct vt_findings_scan *ds, uint8_t dev,
                           uint64_t bytes);

/* The stack that filled the bytes names a framework path that makes
 * something other than data (a CONTEXT rule of another category). */
int vt_findings_not_data(const struct vt_findings_scan *ds, uint32_t proc, uint32_t stack_id);

#endif
