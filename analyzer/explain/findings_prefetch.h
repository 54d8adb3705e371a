/* Prefetch depth (docs/design/classification.md, "Findings"): per process
 * and device, how many batch buffers (the prefetch category) were alive at
 * once, how large a batch is (the buffers a step makes together), and
 * when that depth was first reached. */
#ifndef VT_FINDINGS_PREFETCH_H
#define VT_FINDINGS_PREFETCH_H

#include "finding.h"
#include "findings_scan.h"

/* Append the prefetch-depth findings of m to out (no advice yet). Over a
 * folding model's groups of batch buffers, a finding the groups cannot
 * give as the full model would makes it say so (vt_fold_set_inexact). */
void vt_findings_prefetch(const struct vt_model *m, const struct vt_findings_scan *ds,
                          struct vt_findings *out);

#endif
