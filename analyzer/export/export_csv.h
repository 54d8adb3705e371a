/* CSV of every allocation charged to a device, in the order they were made:
 *   start_ns,end_ns,device,bytes,category,site
 * Times are nanoseconds from the trace start; end_ns is empty for an
 * allocation still live at the end; device is empty when unknown. Fields
 * are quoted per RFC 4180 (a field holding a comma or a quote is enclosed
 * in quotes, quotes doubled); lines end in LF. A site name is text from the
 * traced program, so nothing in it may act on the reader: a control byte
 * (0x00-0x1f, 0x7f: ESC, BEL, line breaks) is written as the four
 * characters \xNN, and a field starting with '=', '+', '-' or '@' (a
 * spreadsheet formula) gets a leading '. */
#ifndef VT_EXPORT_CSV_H
#define VT_EXPORT_CSV_H

#include <stdio.h>

#include "export_data.h"

int vt_export_csv(const struct vt_export *x, FILE *out);
/* One field, quoted only when it must be, made inert as above. */
void vt_csv_field(FILE *out, const char *s);

#endif
