/* Creating a process log file and filling its header (used by log_writer.c).
 *
 * Runs once per process image (and once in a forked child, lazily), so it may
 * make syscalls freely, but it never mallocs and never uses stdio: it can run
 * in a forked child of a multi-threaded process, where malloc may be locked.
 */
#ifndef VT_LOG_FILE_H
#define VT_LOG_FILE_H

#include <stddef.h>
#include <stdint.h>

#include "vramtrace/format.h"

#define VT_PATH_MAX 4096

/* A tiny bounded string builder (no malloc, no stdio). */
struct vt_sbuf {
	char *buf;
	size_t cap;
	size_t len;  /* always < cap; buf[len] == '\0' */
};
void vt_sbuf_init(struct vt_sbuf *s, char *buf, size_t cap);
void vt_sbuf_str(struct vt_sbuf *s, const char *str);
void vt_sbuf_u64(struct vt_sbuf *s, uint64_t v);

/* One line "vramtrace: <text>\n" on stderr with a single write(2), only
 * while fd 2 is the file (device and inode) it was when noted: never into a
 * file of the job's that took a closed fd 2. */
void vt_warn_line(const char *text);
/* Note fd 2's file now (log_writer.h: vt_log_note_stderr). */
void vt_warn_note_stderr(void);

/* Create `dir` (and missing parents) with mode 0700, then create
 * dir/vramtrace.<pid>.<n>.log with O_CREAT|O_EXCL|O_NOFOLLOW|O_CLOEXEC, 0600,
 * trying n = 0, 1, ... past existing regular files (earlier exec images of
 * the same pid). An existing symlink or non-regular file at the name is an
 * error: it is never followed or replaced. On success returns the fd and
 * fills path and *exec_index; on failure returns -1 with a reason in why. */
int vt_log_file_create(const char *dir, int pid, char *path, size_t pathlen,
                       uint32_t *exec_index, char *why, size_t whylen);

/* Fill exe, cmdline and hostname from /proc/self and uname(2). */
void vt_log_file_describe(struct vt_file_header *hdr);

#endif
