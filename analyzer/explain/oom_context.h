/* Findings read again in the light of an out-of-memory failure: advice must
 * fit what the job had reached when it died.
 *
 *   - a process that failed before its third step began never reached a
 *     steady prefetch: its prefetch_depth counts the buffers of a start
 *     that never settled, and is dropped;
 *   - whole_dataset_upload is dropped for uploads that were batches: the
 *     same bytes uploaded from the same site into several allocations on
 *     one device, or one upload made during the step the job died in (a
 *     batch not yet consumed is live at the failure and looks like data
 *     kept on the device; a dataset is uploaded before training). */
#ifndef VT_OOM_CONTEXT_H
#define VT_OOM_CONTEXT_H

#include <stdint.h>

#include "findings.h"
#include "model.h"

/* Process proc failed at t_ns; f holds the findings of m. */
void vt_findings_before_oom(const struct vt_model *m, uint32_t proc, uint64_t t_ns,
                            struct vt_findings *f);

#endif
