/* The descriptors libunwind opens for the shim, kept out of the job's way.
 *
 * libunwind (the stack capture's unwinder, stack_unwind.h) checks that an
 * address is readable by writing a byte of it into a pipe it keeps open
 * (its "mem validate" pipe, made with pipe2 at its first use and made again
 * whenever a read from it fails). Those are the lowest free numbers, which
 * a job that closes its descriptors (daemonizing, closefrom) gets again for
 * its own files: libunwind then reads from and writes process memory into
 * the job's file, and, finding it no pipe, closes the job's descriptors
 * (a fork child's write failed with EBADF).
 *
 * So pipe2 is exported here: for every caller it is the system call and
 * nothing else; called while the shim works (vt_guard: the only time the
 * shim unwinds), both ends are moved to the numbers the log writer keeps
 * its own descriptor at (vt_log_fd_move_high), far above the ones a job's
 * next open() gets. No lookup of the real function: glibc's pipe2 is the
 * bare system call. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "log_writer.h" /* vt_log_fd_move_high */
#include "shim.h"
#include "shim_state.h"

VT_EXPORT int pipe2(int fds[2], int flags)
{
	long rc = syscall(SYS_pipe2, fds, flags);
	if (rc < 0 || vt_guard != VT_GUARD_SHIM)
		return (int)rc;
	int saved = errno;
	int hi[2] = {vt_log_fd_move_high(fds[0], flags & O_CLOEXEC),
	             vt_log_fd_move_high(fds[1], flags & O_CLOEXEC)};
	if (hi[0] < 0 || hi[1] < 0) { /* no number free up there: no pipe */
		if (hi[0] >= 0)
			close(hi[0]);
		if (hi[1] >= 0)
			close(hi[1]);
		errno = EMFILE;
		return -1;
	}
	fds[0] = hi[0];
	fds[1] = hi[1];
	errno = saved;
	return 0;
}
