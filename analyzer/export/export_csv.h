/* CSV of every allocation charged to a device, in the order they were made:
 *   start_ns,end_ns,device,bytes,category,site
 * Times are nanoseconds from the trace start; end_ns is empty for an
 * allocation still live at the end; device is empty when unknown. Fields
 * are quoted per RFC 4180 (a field holding a comma, a quote or a line
 * break is enclosed in quotes, quotes doubled); lines end in LF. */
#ifndef VT_EXPORT_CSV_H
#define VT_EXPORT_CSV_H

#include <stdio.h>

#include "export_data.h"

int vt_export_csv(const struct vt_export *x, FILE *out);
/* One field, quoted only when it must be. */
void vt_csv_field(FILE *out, const char *s);

#endif
