/* A writer of Chrome Trace Event Format JSON (ui.perfetto.dev,
 * chrome://tracing), shared by the full export (export_perfetto.c) and the
 * streaming one (export_stream.c). Events are flat objects written straight
 * to the FILE, one per line, so millions stream out without building a
 * tree. Not vt_json: its numbers are %.6g, and "ts" must be exact
 * (microseconds with ns decimals). */
#ifndef VT_TRACE_EVENT_H
#define VT_TRACE_EVENT_H

#include <stdint.h>
#include <stdio.h>

struct vt_te_writer {
	FILE *out;
	int first_event;
	int first_member; /* no member written yet at the current object level */
};

/* The document's head ("displayTimeUnit":"ns", the trace directory) up to
 * the opening of "traceEvents"; vt_te_close ends it. */
void vt_te_open(struct vt_te_writer *j, FILE *out, const char *trace_dir);
void vt_te_close(struct vt_te_writer *j);

/* An event's required fields: name, ph, ts, pid, tid. Members may follow;
 * vt_te_end_object closes it. */
void vt_te_event(struct vt_te_writer *j, const char *name, const char *ph, uint64_t t_ns,
                 uint64_t pid, uint64_t tid);
/* An instant ("ph":"i") of scope "g", "p" or "t". */
void vt_te_instant(struct vt_te_writer *j, const char *name, const char *scope, uint64_t t_ns,
                   uint64_t pid, uint64_t tid);
/* A whole metadata event ("ph":"M"): args {key: text}, or {key: number}
 * when text is NULL. */
void vt_te_metadata(struct vt_te_writer *j, const char *what, uint64_t pid, uint64_t tid,
                    const char *key, const char *text, int64_t number);

void vt_te_kv_string(struct vt_te_writer *j, const char *key, const char *v);
void vt_te_kv_u64(struct vt_te_writer *j, const char *key, uint64_t v);
void vt_te_kv_i64(struct vt_te_writer *j, const char *key, int64_t v);
/* "args":{ ... closed by vt_te_end_object. */
void vt_te_args_begin(struct vt_te_writer *j);
void vt_te_end_object(struct vt_te_writer *j);

#endif
