/* LD_PRELOAD test double for lifecycle.sh's signal-at-open job: the
 * readlink of /proc/self/exe into the log header's exe field takes 50 ms of
 * busy time. The shim names the executable that way while it creates its
 * log, so a timer signal every 300 us is sure to land during the creation
 * (it used to, by chance, in 1 run of 2-4). Other readlinks (the module list
 * reads the same link into a PATH_MAX buffer, once per new stack, and a
 * handler's stacks are all new) stay fast: slowing them starves the job. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "vramtrace/format.h"

typedef ssize_t (*readlink_fn)(const char *, char *, size_t);

ssize_t readlink(const char *restrict path, char *restrict buf, size_t n)
{
	static readlink_fn real;
	if (!real)
		real = (readlink_fn)dlsym(RTLD_NEXT, "readlink");
	if (!strcmp(path, "/proc/self/exe") && n == sizeof(((struct vt_file_header *)0)->exe) - 1) {
		/* busy, not asleep: a signal may arrive at any instruction */
		struct timespec t0, now;
		clock_gettime(CLOCK_MONOTONIC, &t0);
		do
			clock_gettime(CLOCK_MONOTONIC, &now);
		while ((now.tv_sec - t0.tv_sec) * 1000000000L + (now.tv_nsec - t0.tv_nsec) < 50000000L);
	}
	return real ? real(path, buf, n) : -1;
}
