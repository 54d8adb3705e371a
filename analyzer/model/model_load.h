/* A trace directory (trace_dir.h) read into a model: full (model_history.h)
 * or streaming (model_stream.h), finished. */
#ifndef VT_MODEL_LOAD_H
#define VT_MODEL_LOAD_H

#include <stddef.h>
#include <stdint.h>

struct vt_model;

/* Read a trace directory into a new full model, finished.
 * NULL and a one-line reason in err on failure. */
struct vt_model *vt_model_load_trace(const char *dir, char *err, size_t errlen);
/* Optional progress while vt_model_load_trace reads: bytes of the logs read
 * so far and in all, called every few thousand records (a progress bar,
 * term.h). fn NULL turns it off. Process-wide: set it before loading. */
typedef void (*vt_load_progress_fn)(uint64_t done, uint64_t total, void *ctx);
void vt_model_set_load_progress(vt_load_progress_fn fn, void *ctx);

/* vt_model_load_trace with a streaming model. */
struct vt_model *vt_model_load_trace_streaming(const char *dir, char *err, size_t errlen);

#endif
