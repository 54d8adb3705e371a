/* The crash-safe log writer (format: include/vramtrace/format.h).
 *
 * Hot path contract: no lock, no malloc, no stdio. Each thread appends into a
 * chunk of the shared mapping that it alone owns; a record becomes visible to
 * readers when vt_log_commit() release-stores its header word.
 *
 * Every function is safe to call before vt_log_init(), after the log was
 * truncated, in a forked child and when recording is disabled: it then does
 * nothing (reserve returns NULL).
 */
#ifndef VT_LOG_WRITER_H
#define VT_LOG_WRITER_H

#include <stddef.h>
#include <stdint.h>

#include "vramtrace/format.h"

struct vt_log_config {
	const char *dir;      /* trace directory (created 0700 if missing) */
	uint64_t max_size;    /* bytes, 0 = no cap */
	uint32_t chunk_size;  /* 0 = VT_DEFAULT_CHUNK_SIZE */
	uint32_t stack_depth; /* recorded in the header only */
	int free_stacks;      /* VRAMTRACE_FREE_STACKS: header flag only */
};

/* Reads VRAMTRACE_DIR, VRAMTRACE_MAX_SIZE, VRAMTRACE_STACK_DEPTH... into cfg.
 * Does not allocate. */
void vt_log_config_from_env(struct vt_log_config *cfg);

/* Create this process's log file. Returns 0 or -1 (recording stays off, one
 * warning line on stderr says why). Idempotent. */
int vt_log_init(const struct vt_log_config *cfg);

/* Reserve `size` bytes (multiple of 8, <= VT_MAX_RECORD_SIZE) in the calling
 * thread's chunk. Returns NULL when recording is off or the log is full (the
 * drop is counted in header.events_dropped). The memory is zero. */
void *vt_log_reserve(uint32_t size);

/* Count one record the shim could not write (in header.events_dropped; kept
 * until the header exists when there is no log yet). Async-signal-safe. */
void vt_log_count_drop(void);

/* Add a timed call of the shim's own (self_cost.h) to the header's self_*
 * fields: the calls of its interval, its time times them, its histogram
 * bucket; nothing before the log exists. Async-signal-safe. */
void vt_log_add_self_cost(uint32_t calls, uint64_t est_ns, unsigned bucket);
/* A thread's first call, timed apart: self_first_*. */
void vt_log_add_self_first(uint64_t ns);
/* Calls after a thread's last timed one (at exit): self_tail_calls. */
void vt_log_add_self_tail(uint32_t calls);
/* Stack captures and the memo's hits, verified hits and mismatches since
 * the thread's last report (format.h stack_*). */
void vt_log_add_stack_counts(uint64_t captures, uint64_t hits, uint64_t verified,
                             uint64_t mismatches);

/* Publish a reserved record: release-stores VT_HDR(type, size) at rec. */
void vt_log_commit(void *rec, uint32_t type, uint32_t size);

/* Next process-wide sequence number (atomic, lock-free). */
uint64_t vt_log_next_seq(void);

/* Nanoseconds since header.clock_base_ns (CLOCK_MONOTONIC). */
uint64_t vt_log_now_ns(void);

/* An event as a VT_REC_PACKED record (vramtrace/event_packed.h), seq and
 * t_ns as given: what the hook wrappers write. Returns 0, or -1 if nothing
 * was written (the drop is counted). */
int vt_log_write_packed(uint32_t type, const struct vt_event *ev);

/* Convenience for the common 64-byte event: fills seq and t_ns if they are 0
 * and commits. Returns 0, or -1 if nothing was written. */
int vt_log_write_event(uint32_t type, const struct vt_event *ev);

/* Variable-length metadata helpers (copy text/bytes into the record). */
int vt_log_write_mark(uint16_t kind, const char *text, uint64_t value);
int vt_log_write_note(const char *text);

/* At exit: write VT_REC_EXIT, seal the calling thread's chunk and set the
 * state word (only in the process that created the log). */
void vt_log_finish(int exit_code);

/* A thread that recorded is exiting: seal its chunk (format.h). */
void vt_log_thread_exit(void);

/* Before execve: seal the calling thread's chunk and mark the state
 * VT_STATE_EXECED (undone by vt_log_exec_failed() if execve returns). */
void vt_log_before_exec(void);
void vt_log_exec_failed(void);

/* Note which file fd 2 is now (or that it is closed): the writer's warning
 * lines go there and nowhere else (a closed stderr: nowhere). Called by the
 * shim's constructor, before the job can change fd 2; without a call, the
 * first warning notes it. */
void vt_log_note_stderr(void);

/* fd moved to a number at or above the writer's floor for its own
 * descriptors (far above 0-2 and the numbers a job's next open() gets),
 * close-on-exec when cloexec; the original is closed. -1 (fd closed too)
 * when no number is free. For descriptors the shim keeps open for itself. */
int vt_log_fd_move_high(int fd, int cloexec);

/* True when a log is open in this process (not the parent's). */
int vt_log_active(void);

#endif
