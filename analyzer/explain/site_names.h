/* Naming a call site for reports: ONE function. For a trace loaded by
 * vt_model_load_trace a site is "function (file:line)" of the frame the
 * stacks part's rules choose (analyzer/sites.h: past the driver, runtime,
 * shim and framework allocators); for a model fed by hand (tests), it is
 * "module+0xOFFSET" of the first frame outside libcuda, libcudart and the
 * shim. Either way a frame that more than half of the process's
 * allocation stacks pass through (the job's own allocator wrapper) is
 * stepped over to the next frame out. "(no stack)" without one. Names are
 * cached on the model. */
#ifndef VT_SITE_NAMES_H
#define VT_SITE_NAMES_H

#include <stddef.h>
#include <stdint.h>

#include "model.h"

void vt_name_site(const struct vt_model *m, uint32_t proc, uint32_t stack_id, char *buf,
                    size_t len);

#endif
