/* The frames of an allocation's stack as text, for exports that show whole
 * stacks (folded flame graphs, the HTML site view). Frames are symbolized
 * through the stacks part (sites.h), each inlined function its own entry;
 * a model without it (built in memory) gives "module+0xOFFSET". Python
 * frames take the place of the interpreter's eval-loop frames
 * they ran in (pystack.h), and the interpreter's other C frames are left
 * out of such stacks. */
#ifndef VT_EXPORT_STACK_H
#define VT_EXPORT_STACK_H

#include <stdint.h>

#include "model.h"

/* Called per entry, innermost first. */
typedef void (*vt_frame_text_fn)(const char *text, void *ctx);

enum vt_frame_style {
	VT_FRAME_FUNCTION = 0,     /* "function" (flame graphs merge by function) */
	VT_FRAME_LOCATION = 1,     /* "function (file:line)" */
};

/* Returns the number of entries visited (0: no stack). */
int vt_export_stack_frames(const struct vt_model *m, uint32_t proc, uint32_t stack_id,
                           enum vt_frame_style style, vt_frame_text_fn fn, void *ctx);

#endif
