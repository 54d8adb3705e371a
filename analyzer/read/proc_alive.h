/* Is the process that writes a log still running? A log whose state word
 * says neither exited nor exec'd belongs to a process that is either still
 * running or gone without its exit record (killed, crashed). It is still
 * running when all of these hold:
 *   - the log was written on this host (header hostname);
 *   - the trace's run.json, when `vramtrace run` wrote one, does not say
 *     the job finished (the launcher writes that after reaping it);
 *   - /proc/PID exists and that process started no later than the log was
 *     created (a pid used again by a later process does not count). */
#ifndef VT_PROC_ALIVE_H
#define VT_PROC_ALIVE_H

#include "vramtrace/format.h"

/* 1 if the process of hdr runs now; trace_dir: the trace directory (its
 * run.json), or NULL. */
int vt_log_process_running(const struct vt_file_header *hdr, const char *trace_dir);

#endif
