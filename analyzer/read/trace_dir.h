/* A trace directory: the logs of every process of one run, read together. */
#ifndef VT_TRACE_DIR_H
#define VT_TRACE_DIR_H

#include <stddef.h>
#include <stdint.h>

#include "log_reader.h"

/* A trace directory: every vramtrace.*.log inside it, sorted by pid and
 * exec index. */
struct vt_trace {
	char *dir;
	struct vt_log **logs;
	size_t nlogs;
};
int vt_trace_open(const char *dir, struct vt_trace *out, char *err, size_t errlen);
void vt_trace_close(struct vt_trace *t);
/* Open the logs that appeared in t's directory since it was opened (or
 * last asked), appended to t->logs: a trace whose job still runs gains one
 * per new process. A trace opened with no log yet is {dir, NULL, 0}.
 * Returns how many were added. */
size_t vt_trace_open_new(struct vt_trace *t);

/* vt_log_for_each over every log in order; stops at the first non-zero
 * return of fn and returns it. For passes that need nothing per log. */
int vt_trace_for_each(const struct vt_trace *t, vt_record_fn fn, void *ctx);

/* The bytes the logs of a trace directory (or one log file) hold on disk,
 * without opening them; 0 if there are none. */
uint64_t vt_trace_log_bytes(const char *dir);

/* Trace start: the smallest clock_base_ns over its logs (same host clock). */
uint64_t vt_trace_start_ns(const struct vt_trace *t);

#endif
