/* `vramtrace run --shm`: the logs written under /dev/shm, moved into the
 * trace directory when the job ends. */
#ifndef VT_RUN_COLLECT_H
#define VT_RUN_COLLECT_H

/* Move every file of log_dir into trace_dir. A log still being written (a
 * process of the job outlives it) is waited for a little, then left where
 * it is with one line saying where and how to collect it; log_dir is
 * removed only once empty. A copy lands under a temporary name and is
 * renamed when whole, so a partial copy (a full disk) never reads as a log.
 * 0, or -1 when something was left behind (said on stderr). */
int vt_run_collect_shm(const char *log_dir, const char *trace_dir);

#endif
