/* See fuzz_common.h. */
#define _GNU_SOURCE
#include "fuzz_common.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

/* Declared here, not through commands.h: there the commands are weak, and a
 * weak reference never pulls cmd_dump.o out of the static library. */
int cmd_dump(int argc, char **argv);

static int g_fd = -1;
static char g_path[64];

static void write_all(int fd, const void *p, size_t n, off_t at)
{
	const uint8_t *b = p;
	while (n > 0) {
		ssize_t w = pwrite(fd, b, n, at);
		if (w <= 0) {
			perror("fuzz: pwrite");
			abort();
		}
		b += w;
		n -= (size_t)w;
		at += w;
	}
}

const char *fz_file(const void *head, size_t nhead, const uint8_t *data, size_t size)
{
	if (g_fd < 0) {
		g_fd = memfd_create("vt-fuzz-input", MFD_CLOEXEC);
		if (g_fd < 0) {
			perror("fuzz: memfd_create");
			abort();
		}
		snprintf(g_path, sizeof g_path, "/proc/self/fd/%d", g_fd);
	}
	if (ftruncate(g_fd, 0) < 0) {
		perror("fuzz: ftruncate");
		abort();
	}
	if (nhead)
		write_all(g_fd, head, nhead, 0);
	if (size)
		write_all(g_fd, data, size, (off_t)nhead);
	return g_path;
}

void fz_quiet_stdout(void)
{
	static int done;
	if (done)
		return;
	done = 1;
	int null = open("/dev/null", O_WRONLY | O_CLOEXEC);
	if (null >= 0) {
		fflush(stdout);
		dup2(null, STDOUT_FILENO);
		close(null);
	}
}

int fz_dump(const char *path, int json)
{
	char *argv[] = {"dump", (char *)path, json ? "--json" : NULL, NULL};
	return cmd_dump(json ? 3 : 2, argv);
}
