/* Folded stacks of the bytes live at the export's moment, one line per
 * (device, stack, category), outermost frame first, for flamegraph.pl and
 * speedscope:
 *   GPU 0;main;train;load_dataset;cuMemAlloc_v2;[dataset] 67108864
 * The root frame is the device, the leaf the category. */
#ifndef VT_EXPORT_FOLDED_H
#define VT_EXPORT_FOLDED_H

#include <stdio.h>

#include "export_data.h"

int vt_export_folded(const struct vt_export *x, FILE *out);

#endif
