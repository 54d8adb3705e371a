/* Whole-dataset uploads (docs/design/classification.md, "Findings"):
 * confident dataset tensors and pool ranges large enough, the arrays that
 * came with them (labels, a table's columns), one finding per upload. */
#ifndef VT_FINDINGS_DATASET_H
#define VT_FINDINGS_DATASET_H

#include "finding.h"
#include "findings_scan.h"

/* Append the whole-dataset findings of m to out (no advice yet). */
void vt_findings_datasets(const struct vt_model *m, const struct vt_findings_scan *ds,
                          struct vt_findings *out);

#endif
