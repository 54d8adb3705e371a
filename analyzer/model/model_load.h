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

/* vt_model_load_trace with a folding model (model_fold.h): what the
 * classifying report needs, in memory that does not grow with the steps.
 * Check vt_fold_exact after classifying; if 0, load the full model. */
struct vt_model *vt_model_load_trace_folding(const char *dir, char *err, size_t errlen);
/* vt_model_load_trace with a streaming model. */
struct vt_model *vt_model_load_trace_streaming(const char *dir, char *err, size_t errlen);

/* Following a trace directory while its job runs (vramtrace top): a
 * streaming model fed incrementally (log_reader.h, vt_log_follow) from
 * every log of the directory, new processes' logs as they appear. Memory:
 * the streaming model's (what is live, the unique stacks). The model is
 * never finished; a process is ended in it when its process is gone. */
struct vt_trace_follow;
enum vt_follow_state {
	VT_FOLLOW_RUNNING = 0,
	VT_FOLLOW_EXITED, /* wrote its exit: exit code valid */
	VT_FOLLOW_EXECED, /* replaced by exec: the next log of its pid goes on */
	VT_FOLLOW_KILLED, /* gone without its exit (signal, crash) */
};
/* NULL and a one-line reason in err when dir is no directory; a directory
 * without logs yet is fine (the job has not called the driver yet). */
struct vt_trace_follow *vt_trace_follow_open(const char *dir, char *err, size_t errlen);
void vt_trace_follow_close(struct vt_trace_follow *f);
/* Read what the logs gained since the last call; the records fed. */
uint64_t vt_trace_follow_poll(struct vt_trace_follow *f);
struct vt_model *vt_trace_follow_model(const struct vt_trace_follow *f);
/* The logs found so far; log i's process in the model, and its state. */
size_t vt_trace_follow_logs(const struct vt_trace_follow *f);
uint32_t vt_trace_follow_proc(const struct vt_trace_follow *f, size_t i);
enum vt_follow_state vt_trace_follow_state(const struct vt_trace_follow *f, size_t i);

#endif
