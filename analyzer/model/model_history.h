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

/* The full model's consumer (model_consumer.h): the folding model
 * (model_fold.h) hands it every record it keeps. */
struct vt_replay_consumer;
const struct vt_replay_consumer *vt_model_history_consumer(void);

#endif
