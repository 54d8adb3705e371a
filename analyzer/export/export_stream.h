/* `vramtrace export DIR --stream`: the streaming model's timeline
 * (model_stream.h, live_curve.h), for traces too long for the full model.
 *   csv:      pid,device,t_ns,bucket_ns,max_bytes, one line per bucket of
 *             each process's curve on each GPU (the most bytes live in
 *             [t_ns, t_ns + bucket_ns));
 *   perfetto: Chrome trace-event JSON for ui.perfetto.dev: a counter track
 *             "GPU n live bytes" per process and GPU (one point per bucket,
 *             its maximum), an instant event at each peak and each failed
 *             allocation with what was live then by site; written with
 *             the full export's event writer (trace_event.h), ts exact.
 * Bounded: 1024 points per process and GPU, whatever the trace's length. */
#ifndef VT_EXPORT_STREAM_H
#define VT_EXPORT_STREAM_H

#include <stdio.h>

#include "model.h"

int vt_export_stream_csv(const struct vt_model *m, FILE *out);
/* dir: the trace directory, named in the file. */
int vt_export_stream_perfetto(const struct vt_model *m, const char *dir, FILE *out);

#endif
