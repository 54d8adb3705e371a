/* The full model: keeps the whole history of the trace (model_history.c).
 *
 *   struct vt_model *m = vt_model_new();
 *   ... vt_model_begin_process / vt_model_feed / vt_model_finish (model.h)
 *
 * Every query of model.h and the classifier (classify.h) work on it; a
 * streaming model (model_stream.h) answers fewer questions in less memory. */
#ifndef VT_MODEL_HISTORY_H
#define VT_MODEL_HISTORY_H

struct vt_model;

/* An empty full model; vt_model_free frees it. NULL when out of memory. */
struct vt_model *vt_model_new(void);

#endif
