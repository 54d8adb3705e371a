/* `vramtrace run`: the job's stderr, relayed byte for byte through the
 * launcher so framework OOM messages (stderr_scan.h) become marks in the
 * trace.
 *
 * Modes: when the launcher's stderr is a terminal the job writes into a
 * pseudo-terminal (it still sees isatty(2), colours and progress bars keep
 * working; the pty copies the terminal's settings and window size, with
 * output processing off so the bytes reach the terminal exactly as written);
 * otherwise into a pipe. VRAMTRACE_RELAY=0 (or a closed fd 2) turns the relay
 * off: the job then inherits stderr as before and nothing is scanned.
 *
 * The marks: the launcher is not a traced process, so it writes its own small
 * log in the trace directory with the same writer the shim uses
 * (logwriter/, the library both link: one writer of
 * the format, not two). The log is created at the first recognised message
 * only, so a run without one has no launcher log. It holds one
 * VT_MARK_LAUNCHER mark ("stderr relay of pid N", value = job pid) and a
 * VT_MARK_FRAMEWORK_OOM mark per recognised line (text = the line, value =
 * parsed bytes or 0).
 *
 * Use (cmd_run.c):
 *   struct vt_relay relay;
 *   vt_relay_setup(&relay, trace_dir);      before fork
 *   fork(): child  vt_relay_in_child(&relay); exec...
 *           parent vt_relay_start(&relay, pid);
 *   waitpid(...);
 *   vt_relay_finish(&relay, exit_code);     drains, stops, closes the log
 * The relay runs in a process of its own, forked in vt_relay_setup (all
 * signals blocked there), so the launcher's wait and signal forwarding are
 * unchanged, and the job's stderr outlives the launcher: if the launcher is
 * killed, the relay goes on until the job's stream ends (the launcher log is
 * then left unfinished: only the launcher knew the job's exit code).
 */
#ifndef VT_RUN_RELAY_H
#define VT_RUN_RELAY_H

#include <limits.h>
#include <stdint.h>
#include <sys/types.h>

#include "stderr_scan.h"

enum vt_relay_mode { VT_RELAY_OFF = 0, VT_RELAY_PIPE, VT_RELAY_PTY };

/* What the relay process and the launcher share (an anonymous shared
 * mapping): the job's pid and exit code one way, the counts the other. */
struct vt_relay_shared {
	pid_t job_pid;
	int exit_code; /* -1 until the launcher reaped the job */
	uint64_t bytes_relayed;
	unsigned marks;
};

struct vt_relay {
	int mode;        /* enum vt_relay_mode */
	int read_fd;     /* pipe read end / pty master */
	int child_fd;    /* pipe write end / pty slave: the job's fd 2 */
	int out_fd;      /* where the bytes go: the launcher's fd 2 */
	int wake[2];     /* control pipe, launcher to relay: 'x' = job exited */
	pid_t relay_pid; /* the relay process (0: none) */
	struct vt_relay_shared *shared;
	pid_t job_pid;
	int log_open;
	char trace_dir[PATH_MAX];
	struct vt_stderr_scan scan;
	uint64_t bytes_relayed; /* in the relay process; the launcher's after finish */
	unsigned marks;         /* framework OOM marks written (the same) */
};

const char *vt_relay_mode_name(int mode); /* "off", "pipe", "pty" */

/* Before fork. Never fails the run: on any error the mode is OFF (the job
 * keeps the launcher's stderr) and one line says why. */
void vt_relay_setup(struct vt_relay *r, const char *trace_dir);
/* In the child, before exec: the relay becomes fd 2. */
void vt_relay_in_child(struct vt_relay *r);
/* In the parent, after fork. */
void vt_relay_start(struct vt_relay *r, pid_t job_pid);
/* After the job was reaped: relay what is left (at most ~0.5 s more if a
 * grandchild still holds the stream open), stop, finish the launcher log
 * with the job's exit code. */
void vt_relay_finish(struct vt_relay *r, int exit_code);

#endif
