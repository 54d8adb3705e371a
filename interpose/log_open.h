/* The log, created on first use (log_open.c): the constructor never creates
 * it, so a process that never touches the driver leaves no file. The first
 * record asks vt_shim_log_ready(), which creates it.
 *
 * What must happen once the log exists (the lifecycle's exit handler) is
 * given as a callback (vt_log_open_set_callbacks): this file calls nothing
 * of the shim's but the log writer. */
#ifndef VT_LOG_OPEN_H
#define VT_LOG_OPEN_H

/* Returns 1 when records can be written. Inline: one load once the log is
 * there. */
int vt_shim_log_ready_slow(void);
enum vt_log_state { VT_LOG_NONE, VT_LOG_OPENING, VT_LOG_READY }; /* READY only if enabled */
extern int vt_shim_log_state;
static inline int vt_shim_log_ready(void)
{
	if (__builtin_expect(__atomic_load_n(&vt_shim_log_state, __ATOMIC_ACQUIRE) == VT_LOG_READY,
	                     1))
		return 1;
	return vt_shim_log_ready_slow();
}

/* In a fork child: a creation the parent had under way when it forked is
 * forgotten (the child creates its own log). Async-signal-safe. */
void vt_shim_log_after_fork(void);

struct vt_log_open_callbacks {
	/* Run once, by the thread that created the log, right after; or by
	 * vt_log_open_set_callbacks if the log was created before. */
	void (*after_open)(void);
};
/* cb (static storage) is used from now on. */
void vt_log_open_set_callbacks(const struct vt_log_open_callbacks *cb);

#endif
