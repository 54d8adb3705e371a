/* A job that does to its descriptors and address space what jobs do, one
 * scenario per run; the shim must not change what happens (fds.sh).
 *   closefrom FILE N    one allocation (the log opens), close every
 *                       descriptor >= 3, write 6 bytes to a new FILE, which
 *                       then takes every number from 3 to 31 (one of them
 *                       was the log's), N more allocations; FILE must
 *                       still hold the 6 bytes
 *   fork-close FILE     the same close and FILE, then fork: the child
 *                       allocates (it opens its own log) and must still be
 *                       able to write to FILE through every number
 *   stdio-closed        started with fd 0 and 1 closed: after an
 *                       allocation both must still be closed
 *   stderr-closed FILE N  started with fd 2 closed: FILE is opened (it gets
 *                       fd 2), N allocations fill a capped log; FILE must
 *                       hold only what the job wrote
 *   linger MS           one allocation and free, MS ms of sleep, another
 *                       pair: a worker that outlives the job's main process
 *   big-malloc MIB      one allocation (the log opens), then malloc MIB MiB:
 *                       it must succeed (run under ulimit -v)
 * Exit 0 when the job saw what it would see without the shim, 1 otherwise
 * (a line on stderr, or stdout when stderr is closed, says what). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "rel_cuda.h"

static struct rel_api g_api;

static void alloc_free(size_t bytes)
{
	CUdeviceptr d;
	if (g_api.alloc(&d, bytes) || g_api.free(d)) {
		fprintf(stderr, "fds: alloc/free failed\n");
		exit(3);
	}
}

static void close_from_3(void)
{
	for (int fd = 3; fd < 4096; fd++)
		close(fd);
}

static int open_file(const char *path)
{
	int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	if (fd < 0) {
		perror("fds: open");
		exit(3);
	}
	return fd;
}

#define FILL_TO 32
/* FILE on every number from fd + 1 to FILL_TO - 1 too. */
static void fill_numbers(int fd)
{
	for (int n = fd + 1; n < FILL_TO; n++)
		if (dup2(fd, n) != n) {
			perror("fds: dup2");
			exit(3);
		}
}

static long file_size(int fd)
{
	struct stat st;
	return fstat(fd, &st) == 0 ? (long)st.st_size : -1;
}

static int s_closefrom(const char *path, int n)
{
	alloc_free(4096);
	close_from_3();
	int fd = open_file(path);
	if (write(fd, "hello\n", 6) != 6) {
		perror("fds: write");
		return 1;
	}
	fill_numbers(fd);
	for (int i = 0; i < n; i++)
		alloc_free(4096);
	long size = file_size(fd);
	if (size != 6) {
		fprintf(stderr, "fds: the job's 6-byte file (fd %d) is %ld bytes\n", fd, size);
		return 1;
	}
	printf("allocs %d\n", n + 1);
	return 0;
}

static int s_fork_close(const char *path)
{
	alloc_free(4096);
	close_from_3();
	int fd = open_file(path);
	fill_numbers(fd);
	fflush(NULL);
	pid_t pid = fork();
	if (pid == 0) {
		alloc_free(8192);
		for (int n = fd; n < FILL_TO; n++)
			if (write(n, "c", 1) != 1) {
				fprintf(stderr, "fds: child cannot write its fd %d: %s\n", n,
				        strerror(errno));
				_exit(1);
			}
		_exit(0);
	}
	int st;
	if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st)) {
		fprintf(stderr, "fds: child failed\n");
		return 1;
	}
	long size = file_size(fd);
	if (size != FILL_TO - fd) {
		fprintf(stderr, "fds: file is %ld bytes, want the child's %d\n", size, FILL_TO - fd);
		return 1;
	}
	return 0;
}

static int s_stdio_closed(void)
{
	alloc_free(4096);
	int bad = 0;
	for (int fd = 0; fd <= 1; fd++)
		if (fcntl(fd, F_GETFD) >= 0 || errno != EBADF) {
			fprintf(stderr, "fds: fd %d, closed at start, is open after a record\n", fd);
			bad = 1;
		}
	if (write(1, "from the job\n", 13) >= 0) {
		fprintf(stderr, "fds: a write to the closed stdout succeeded\n");
		bad = 1;
	}
	return bad;
}

static int s_stderr_closed(const char *path, int n)
{
	int fd = open_file(path);
	if (fd != 2) {
		printf("fds: FILE got fd %d, want 2 (was stderr closed?)\n", fd);
		return 1;
	}
	if (write(fd, "job\n", 4) != 4)
		return 1;
	for (int i = 0; i < n; i++)
		alloc_free(4096);
	long size = file_size(fd);
	if (size != 4) {
		char buf[256] = "";
		ssize_t got = pread(fd, buf, sizeof buf - 1, 4);
		buf[got > 0 ? got : 0] = '\0';
		printf("fds: the job's file on fd 2 is %ld bytes, want 4; after the job's: %s\n",
		       size, buf);
		return 1;
	}
	return 0;
}

static int s_big_malloc(long mib)
{
	alloc_free(4096);
	void *p = malloc((size_t)mib << 20);
	if (!p) {
		fprintf(stderr, "fds: malloc(%ld MiB) failed\n", mib);
		return 1;
	}
	free(p);
	return 0;
}

static int s_linger(long ms)
{
	alloc_free(4096);
	usleep((useconds_t)ms * 1000);
	alloc_free(8192);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc < 2)
		return 2;
	if (rel_api_fill(REL_LINKED, &g_api) || rel_use_device(&g_api)) {
		fprintf(stderr, "fds: no device\n");
		return 3;
	}
	const char *s = argv[1];
	if (!strcmp(s, "closefrom") && argc == 4)
		return s_closefrom(argv[2], atoi(argv[3]));
	if (!strcmp(s, "fork-close") && argc == 3)
		return s_fork_close(argv[2]);
	if (!strcmp(s, "stdio-closed"))
		return s_stdio_closed();
	if (!strcmp(s, "stderr-closed") && argc == 4)
		return s_stderr_closed(argv[2], atoi(argv[3]));
	if (!strcmp(s, "linger") && argc == 3)
		return s_linger(atol(argv[2]));
	if (!strcmp(s, "big-malloc") && argc == 3)
		return s_big_malloc(atol(argv[2]));
	return 2;
}
