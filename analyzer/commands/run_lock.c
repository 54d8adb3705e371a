/* One launcher per trace directory (run_lock.h). flock on the directory
 * itself: taken atomically, released by the kernel when the launcher (and
 * its relay, which shares the descriptor) is gone, so a crashed launcher
 * never leaves a stale lock behind. The trace check comes after the lock:
 * a launcher that locked second finds the first one's run.json, or the
 * lock still held. */
#define _GNU_SOURCE
#include "run_lock.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

int vt_run_dir_holds_trace(const char *dir)
{
	DIR *d = opendir(dir);
	if (!d)
		return 0;
	int found = 0;
	struct dirent *e;
	while (!found && (e = readdir(d)))
		found = !strcmp(e->d_name, "run.json") || !strncmp(e->d_name, "vramtrace.", 10);
	closedir(d);
	return found;
}

int vt_run_lock_dir(const char *dir)
{
	/* close-on-exec: the job never holds it, the relay process does */
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0) {
		fprintf(stderr, "vramtrace run: cannot open trace directory %s: %s\n", dir,
		        strerror(errno));
		return -1;
	}
	if (flock(fd, LOCK_EX | LOCK_NB)) {
		if (errno == EWOULDBLOCK)
			fprintf(stderr, "vramtrace run: %s is in use by another vramtrace run\n",
			        dir);
		else
			fprintf(stderr, "vramtrace run: cannot lock trace directory %s: %s\n", dir,
			        strerror(errno));
		close(fd);
		return -1;
	}
	if (vt_run_dir_holds_trace(dir)) {
		fprintf(stderr,
		        "vramtrace run: %s already holds a trace; choose another -o or remove it\n",
		        dir);
		close(fd);
		return -1;
	}
	return 0; /* fd stays open: it is the lock */
}
