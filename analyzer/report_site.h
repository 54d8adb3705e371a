/* Naming a call site for reports: ONE function, so switching from raw
 * addresses to symbolized frames (analyzer/sites.h, the stacks part) is one
 * change. Until then a site is the first frame outside the CUDA libraries
 * and the shim, written "module+0xOFFSET" (or "0xADDRESS" when no module
 * contains it), "(no stack)" without one. */
#ifndef VT_REPORT_SITE_H
#define VT_REPORT_SITE_H

#include <stddef.h>
#include <stdint.h>

#include "model.h"

void vt_report_site(const struct vt_model *m, uint32_t proc, uint32_t stack_id, char *buf,
                    size_t len);

#endif
