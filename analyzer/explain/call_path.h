/* Whether two uploads of a process rode together: the same call path
 * (the conversion that made x made y), and a size that shares the data's
 * rows. What ties a label array to its features, where time alone ties
 * nothing (a job may load, right after its data, the model that scores
 * it). */
#ifndef VT_CALL_PATH_H
#define VT_CALL_PATH_H

#include <stdint.h>

#include "model.h"

/* Whether process proc's stacks a and b are one call path: equal, or the
 * same functions calling one another from other lines (`x = convert(x_np)`
 * and, a line below, `y = convert(y_np)`), the latter only for an array of
 * `bytes` that shares the rows of the data's `data_bytes`. */
int vt_same_call_path(const struct vt_model *m, uint32_t proc, uint32_t a, uint32_t b,
                      uint64_t data_bytes, uint64_t bytes);

#endif
