/* Human-readable sizes and times for reports. */
#ifndef VT_UNITS_H
#define VT_UNITS_H

#include <stddef.h>
#include <stdint.h>

/* "512 B", "3.0 KiB", "1.50 MiB", "2.10 GiB" */
void vt_format_bytes(uint64_t bytes, char *buf, size_t len);
/* "0.000123 s" style: seconds with enough digits for the span */
void vt_format_seconds(uint64_t ns, char *buf, size_t len);

/* "1 step", "2 steps": n, then one or many. Returns buf. */
const char *vt_count(uint64_t n, const char *one, const char *many, char *buf, size_t len);

#endif
