/* Log file creation: directory, safe name, header description.
 * No malloc, no stdio (see log_file.h). */
#define _GNU_SOURCE /* strerrordesc_np, MADV_WIPEONFORK */
#include "log_file.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

#define VT_MAX_EXEC_INDEX 10000u

void vt_sbuf_init(struct vt_sbuf *s, char *buf, size_t cap)
{
	s->buf = buf;
	s->cap = cap;
	s->len = 0;
	if (cap)
		buf[0] = '\0';
}

void vt_sbuf_str(struct vt_sbuf *s, const char *str)
{
	while (*str && s->len + 1 < s->cap)
		s->buf[s->len++] = *str++;
	if (s->cap)
		s->buf[s->len] = '\0';
}

void vt_sbuf_u64(struct vt_sbuf *s, uint64_t v)
{
	char digits[24];
	size_t n = sizeof digits;
	digits[--n] = '\0';
	do {
		digits[--n] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	vt_sbuf_str(s, digits + n);
}

/* The stderr warnings may go to: the file fd 2 was when the process began
 * (vt_warn_note_stderr), or at the first warning if nobody noted it. */
static struct {
	int state; /* atomic: 0 not noted, 1 noted open, 2 noted closed */
	dev_t dev;
	ino_t ino;
} g_stderr;

void vt_warn_note_stderr(void)
{
	struct stat st;
	int open = fstat(STDERR_FILENO, &st) == 0;
	if (open) {
		g_stderr.dev = st.st_dev;
		g_stderr.ino = st.st_ino;
	}
	__atomic_store_n(&g_stderr.state, open ? 1 : 2, __ATOMIC_RELEASE);
}

/* fd 2 is still the stderr noted: a job that started with it closed and
 * opened a file since has that file on fd 2, never to be written into. */
static int stderr_is_noted(void)
{
	int state = __atomic_load_n(&g_stderr.state, __ATOMIC_ACQUIRE);
	if (state == 0) {
		vt_warn_note_stderr();
		state = __atomic_load_n(&g_stderr.state, __ATOMIC_ACQUIRE);
	}
	struct stat st;
	return state == 1 && fstat(STDERR_FILENO, &st) == 0 && st.st_dev == g_stderr.dev &&
	       st.st_ino == g_stderr.ino;
}

void vt_warn_line(const char *text)
{
	if (!stderr_is_noted())
		return;
	char line[1024];
	struct vt_sbuf s;
	vt_sbuf_init(&s, line, sizeof line - 1);
	vt_sbuf_str(&s, "vramtrace: ");
	vt_sbuf_str(&s, text);
	line[s.len++] = '\n';
	/* one write: lines from several processes do not interleave */
	ssize_t rc;
	do
		rc = write(STDERR_FILENO, line, s.len);
	while (rc < 0 && errno == EINTR);
}

static void why_errno(char *why, size_t whylen, const char *what, const char *path, int err)
{
	struct vt_sbuf s;
	vt_sbuf_init(&s, why, whylen);
	vt_sbuf_str(&s, what);
	vt_sbuf_str(&s, " ");
	vt_sbuf_str(&s, path);
	vt_sbuf_str(&s, ": ");
	const char *desc = strerrordesc_np(err); /* no locale, no malloc */
	vt_sbuf_str(&s, desc ? desc : "unknown error");
}

/* mkdir -p with mode 0700 for the components that are missing. */
static int make_dirs(const char *dir, char *why, size_t whylen)
{
	char path[VT_PATH_MAX];
	size_t len = strlen(dir);
	if (len == 0 || len >= sizeof path) {
		why_errno(why, whylen, "cannot use trace directory", dir, ENAMETOOLONG);
		return -1;
	}
	memcpy(path, dir, len + 1);
	for (size_t i = 1; i <= len; i++) {
		if (path[i] != '/' && path[i] != '\0')
			continue;
		char saved = path[i];
		path[i] = '\0';
		if (mkdir(path, 0700) < 0 && errno != EEXIST) {
			why_errno(why, whylen, "cannot create trace directory", path, errno);
			return -1;
		}
		path[i] = saved;
	}
	return 0;
}

static void log_name(struct vt_sbuf *s, int pid, uint32_t n)
{
	vt_sbuf_str(s, "vramtrace.");
	vt_sbuf_u64(s, (uint64_t)pid);
	vt_sbuf_str(s, ".");
	vt_sbuf_u64(s, n);
	vt_sbuf_str(s, ".log");
}

/* The name exists: an earlier image of this pid (regular file: try the next
 * n) or something planted there (symlink, fifo, ...: refuse). */
static int existing_is_log(int dirfd, const char *name, const char *path, char *why, size_t whylen)
{
	struct stat st;
	if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
		why_errno(why, whylen, "cannot inspect", path, errno);
		return 0;
	}
	if (S_ISREG(st.st_mode))
		return 1;
	struct vt_sbuf s;
	vt_sbuf_init(&s, why, whylen);
	vt_sbuf_str(&s, path);
	vt_sbuf_str(&s, S_ISLNK(st.st_mode) ? " is a symbolic link" : " is not a regular file");
	vt_sbuf_str(&s, "; not following it");
	return 0;
}

int vt_log_file_create(const char *dir, int pid, char *path, size_t pathlen,
                       uint32_t *exec_index, char *why, size_t whylen)
{
	if (whylen)
		why[0] = '\0';
	if (make_dirs(dir, why, whylen) < 0)
		return -1;
	int dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dirfd < 0) {
		why_errno(why, whylen, "cannot open trace directory", dir, errno);
		return -1;
	}
	int fd = -1;
	for (uint32_t n = 0; n < VT_MAX_EXEC_INDEX; n++) {
		char name[64];
		struct vt_sbuf s;
		vt_sbuf_init(&s, name, sizeof name);
		log_name(&s, pid, n);
		vt_sbuf_init(&s, path, pathlen);
		vt_sbuf_str(&s, dir);
		vt_sbuf_str(&s, "/");
		vt_sbuf_str(&s, name);
		fd = openat(dirfd, name, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
		if (fd >= 0) {
			*exec_index = n;
			break;
		}
		if (errno != EEXIST) {
			why_errno(why, whylen, "cannot create", path, errno);
			break;
		}
		if (!existing_is_log(dirfd, name, path, why, whylen))
			break;
	}
	if (fd < 0 && why[0] == '\0')
		why_errno(why, whylen, "too many logs for one pid in", dir, EEXIST);
	close(dirfd);
	return fd;
}

/* Read a whole small /proc file into buf; returns bytes read. */
static size_t read_small_file(const char *path, char *buf, size_t cap)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	size_t got = 0;
	while (got < cap) {
		ssize_t rc = read(fd, buf + got, cap - got);
		if (rc < 0 && errno == EINTR)
			continue;
		if (rc <= 0)
			break;
		got += (size_t)rc;
	}
	close(fd);
	return got;
}

void vt_log_file_describe(struct vt_file_header *hdr)
{
	ssize_t n = readlink("/proc/self/exe", hdr->exe, sizeof hdr->exe - 1);
	hdr->exe_len = n > 0 ? (uint32_t)n : 0;
	hdr->exe[hdr->exe_len] = '\0';

	size_t len = read_small_file("/proc/self/cmdline", hdr->cmdline, sizeof hdr->cmdline);
	/* drop the final NUL so cmdline_len counts the separators only */
	while (len > 0 && hdr->cmdline[len - 1] == '\0')
		len--;
	hdr->cmdline_len = (uint32_t)len;

	struct utsname uts;
	if (uname(&uts) == 0) {
		size_t h = strnlen(uts.nodename, sizeof hdr->hostname - 1);
		memcpy(hdr->hostname, uts.nodename, h);
		hdr->hostname[h] = '\0';
	}
}
