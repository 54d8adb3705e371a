/* --shm logs into the trace directory (run_collect.h). */
#define _GNU_SOURCE
#include "run_collect.h"

#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "proc_alive.h"
#include "vramtrace/format.h"

#define WAIT_FOR_WRITERS_MS 2000 /* how long a live writer may take to finish */

/* Is `path` a log whose process has not finished it and still exists? (A
 * process that died without finishing leaves a log that nobody writes.) */
static int still_written(const char *path)
{
	struct vt_file_header h;
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
	if (fd < 0)
		return 0;
	ssize_t n = pread(fd, &h, sizeof h, 0);
	close(fd);
	if (n != (ssize_t)sizeof h || memcmp(h.magic, VT_MAGIC, VT_MAGIC_LEN))
		return 0;
	h.state = __atomic_load_n(&h.state, __ATOMIC_ACQUIRE);
	return vt_log_process_running(&h, NULL); /* its pid not reused since */
}

/* How many files of dir are logs still being written. */
static int count_live(const char *dir)
{
	DIR *d = opendir(dir);
	if (!d)
		return 0;
	int live = 0;
	struct dirent *e;
	char path[PATH_MAX * 2];
	while ((e = readdir(d))) {
		snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
		live += e->d_name[0] != '.' && still_written(path);
	}
	closedir(d);
	return live;
}

static void wait_for_writers(const char *dir)
{
	const struct timespec tick = {0, 50 * 1000 * 1000};
	for (int waited = 0; waited < WAIT_FOR_WRITERS_MS && count_live(dir); waited += 50)
		nanosleep(&tick, NULL);
}

/* from -> to.tmp, then renamed to `to` once whole; the source is kept. */
static int copy_whole(const char *from, const char *to)
{
	char tmp[PATH_MAX * 2 + 8];
	snprintf(tmp, sizeof tmp, "%s.tmp", to);
	int in = open(from, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (in < 0)
		return -1;
	int out = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (out < 0) {
		close(in);
		return -1;
	}
	char buf[1 << 16];
	ssize_t n;
	int rc = 0;
	while ((n = read(in, buf, sizeof buf)) > 0)
		if (write(out, buf, (size_t)n) != n) {
			rc = -1;
			break;
		}
	if (n < 0 || fsync(out))
		rc = -1;
	close(in);
	if (close(out) || rc || rename(tmp, to)) {
		unlink(tmp);
		return -1;
	}
	return 0;
}

/* One file: renamed (same file system) or copied whole, then unlinked. */
static int move_one(const char *from, const char *to)
{
	if (!rename(from, to))
		return 0;
	if (copy_whole(from, to))
		return -1;
	return unlink(from);
}

int vt_run_collect_shm(const char *log_dir, const char *trace_dir)
{
	wait_for_writers(log_dir);
	DIR *d = opendir(log_dir);
	if (!d)
		return -1;
	int failed = 0, live = 0;
	struct dirent *e;
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		char from[PATH_MAX * 2], to[PATH_MAX * 2];
		snprintf(from, sizeof from, "%s/%s", log_dir, e->d_name);
		snprintf(to, sizeof to, "%s/%s", trace_dir, e->d_name);
		if (still_written(from))
			live++; /* its process writes on: taking it would lose the rest */
		else if (move_one(from, to))
			failed++;
	}
	closedir(d);
	if (live)
		fprintf(stderr,
		        "vramtrace run: %d log%s in %s still being written by a process of the job "
		        "that outlived it; left there: when it ends, move %s into %s (mv "
		        "%s/vramtrace.* "
		        "%s/)\n",
		        live, live == 1 ? "" : "s", log_dir, live == 1 ? "it" : "them", trace_dir,
		        log_dir, trace_dir);
	if (failed)
		fprintf(stderr,
		        "vramtrace run: %d log%s could not be moved from %s into %s (disk full?); "
		        "they are still in %s\n",
		        failed, failed == 1 ? "" : "s", log_dir, trace_dir, log_dir);
	if (live || failed)
		return -1;
	rmdir(log_dir);
	return 0;
}
