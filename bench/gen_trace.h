/* A synthetic trace shaped like a long training job (gen_trace.c). */
#ifndef VT_GEN_TRACE_H
#define VT_GEN_TRACE_H

#include <stdint.h>

/* Write DIR/vramtrace.<pid>.0.log with at least `events` events (alloc,
 * free, copy) in steps of `layers` layers. 0, or -1 with a message. */
int vt_gen_trace(const char *dir, uint64_t events, int layers, uint64_t *events_out);

#endif
