/* A job that prints each framework's OOM message on stderr, as the frameworks
 * print them, in pieces (separate write()s with pauses, so the relay sees
 * them cut across reads), among noise: colours, carriage-return progress, raw
 * bytes, a NUL, a line longer than the scanner's buffer, and no final
 * newline. It never touches a GPU.
 *
 *   oom_talker ISATTY_FILE [--cuda BYTES]
 *                             write to fd 2; record isatty(2) (and the
 *                             terminal's size) in the file;
 *                             with --cuda, hold BYTES of device memory
 *                             (libcuda.so.1 found at run time, as a
 *                             framework's pool would) while it talks
 *   oom_talker --expected     write the same bytes to stdout in one go */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

struct piece {
	const char *bytes;
	size_t len;     /* 0: strlen */
	int split;      /* write this piece one byte at a time */
};

#define TF_LINE "2026-12-02 16:00:00.000001: W tensorflow/core/framework/op_kernel.cc:1830] " \
	"OP_REQUIRES failed at constant_op.cc:81 : RESOURCE_EXHAUSTED: OOM when allocating tensor " \
	"with shape[262144,1024] and type float on /job:localhost/replica:0/task:0/device:GPU:0 by " \
	"allocator GPU_0_bfc\n"

static const struct piece pieces[] = {
	{"\x1b[31mred\x1b[0m progress 10%\r progress 20%\r", 0, 0},
	{TF_LINE, 80, 0},                 /* the TF line in three writes, cut mid-phrase */
	{TF_LINE + 80, 30, 1},
	{TF_LINE + 110, 0, 0},
	{"tensorflow.python.framework.errors_impl.ResourceExhaustedError: failed to allocate "
	 "memory [Op:AddV2]\n", 0, 0},
	{"\xff\xfe\x00 raw \x01\x02\n", 12, 0},
	{"jaxlib.xla_extension.XlaRuntimeError: RESOURCE_EXHAUSTED: Out of memory while trying "
	 "to allocate 7406166528 bytes.\n", 0, 1},
	{"torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total "
	 "capacity of 23.65 GiB of which 11.06 MiB is free.\r\n", 0, 0},
	{NULL, 0, 0},                     /* the long line */
	{"last words, no newline", 0, 0},
};

static void put(int fd, const char *p, size_t n)
{
	while (n) {
		ssize_t w = write(fd, p, n);
		if (w <= 0)
			exit(3);
		p += w;
		n -= (size_t)w;
	}
}

static void pause_ms(int ms)
{
	struct timespec ts = {0, ms * 1000000L};
	nanosleep(&ts, NULL);
}

/* The few driver calls a framework makes to take its pool. */
struct pool_hold {
	int (*mem_free)(unsigned long long);
	unsigned long long ptr;
};

static int take_pool(struct pool_hold *h, unsigned long long bytes)
{
	void *lib = dlopen("libcuda.so.1", RTLD_NOW);
	if (!lib)
		return -1;
	int (*init)(unsigned) = (int (*)(unsigned))dlsym(lib, "cuInit");
	int (*dev_get)(int *, int) = (int (*)(int *, int))dlsym(lib, "cuDeviceGet");
	int (*retain)(void **, int) = (int (*)(void **, int))dlsym(lib, "cuDevicePrimaryCtxRetain");
	int (*set_current)(void *) = (int (*)(void *))dlsym(lib, "cuCtxSetCurrent");
	int (*alloc)(unsigned long long *, size_t) =
		(int (*)(unsigned long long *, size_t))dlsym(lib, "cuMemAlloc_v2");
	h->mem_free = (int (*)(unsigned long long))dlsym(lib, "cuMemFree_v2");
	int dev;
	void *ctx;
	if (!init || !dev_get || !retain || !set_current || !alloc || !h->mem_free || init(0) ||
	    dev_get(&dev, 0) || retain(&ctx, dev) || set_current(ctx) || alloc(&h->ptr, bytes))
		return -1;
	return 0;
}

int main(int argc, char **argv)
{
	if (argc != 2 && !(argc == 4 && !strcmp(argv[2], "--cuda"))) {
		fprintf(stderr, "usage: oom_talker ISATTY_FILE [--cuda BYTES] | --expected\n");
		return 2;
	}
	struct pool_hold pool = {0};
	if (argc == 4 && take_pool(&pool, strtoull(argv[3], NULL, 10))) {
		fprintf(stderr, "oom_talker: no device memory\n");
		return 3;
	}
	int expected = !strcmp(argv[1], "--expected");
	int fd = expected ? 1 : 2;
	if (!expected) {
		FILE *f = fopen(argv[1], "w");
		if (!f)
			return 2;
		struct winsize ws = {0};
		if (isatty(2) && ioctl(2, TIOCGWINSZ, &ws) == 0)
			fprintf(f, "isatty=1 rows=%u cols=%u\n", ws.ws_row, ws.ws_col);
		else
			fprintf(f, "isatty=%d\n", isatty(2));
		fclose(f);
	}
	static char longline[20000];
	memset(longline, 'x', sizeof longline - 1);
	longline[sizeof longline - 1] = '\n';
	for (size_t i = 0; i < sizeof pieces / sizeof pieces[0]; i++) {
		const char *p = pieces[i].bytes ? pieces[i].bytes : longline;
		size_t n = pieces[i].bytes ? (pieces[i].len ? pieces[i].len : strlen(p)) : sizeof longline;
		if (pieces[i].split && !expected)
			for (size_t k = 0; k < n; k++)
				put(fd, p + k, 1);
		else
			put(fd, p, n);
		if (!expected)
			pause_ms(15);
	}
	if (pool.ptr) { /* the relay has time to see it all while the pool is held */
		pause_ms(300);
		pool.mem_free(pool.ptr);
	}
	return 0;
}
