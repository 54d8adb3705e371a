/* Stack capture cost per intercepted call, on the simulated driver.
 *
 *   bench_stacks            run every case (children), print TSV rows
 *   bench_stacks call       one child: cuMemAlloc_v2 + cuMemFree_v2 pairs
 *   bench_stacks unwind N   one child: unw_backtrace of N frames alone
 *
 * Cases (each child runs 150 frames deep, so 128-frame stacks are full):
 *   no shim           the driver alone
 *   shim, stacks off  LD_PRELOAD=libvramtrace.so VRAMTRACE_STACK_DEPTH=0
 *   shim, 24 frames   ... VRAMTRACE_STACK_DEPTH=24
 *   shim, 128 frames  ... VRAMTRACE_STACK_DEPTH=128
 *   unw_backtrace 24 / 128   the unwinder alone, same depth
 * Steady state: every call's stack was seen before (a dedupe hit), as in a
 * training loop. Output rows: "stacks<TAB>case<TAB>ns<TAB>ns/call", the best
 * of 21 runs of ~20 ms each (the minimum filters out other load on a shared
 * machine); "n/a" with the reason when a case cannot run.
 */
#define _GNU_SOURCE
#define UNW_LOCAL_ONLY
#include <dlfcn.h>
#include <libunwind.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define DEEP 150
#define RUNS 21
#define RUN_NS 20000000.0

typedef int (*alloc_fn)(unsigned long long *, size_t);
typedef int (*free_fn)(unsigned long long);

static alloc_fn mem_alloc;
static free_fn mem_free;
static unsigned unwind_depth;

static double now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static __attribute__((noinline)) void one_call_pair(void)
{
	unsigned long long p = 0;
	if (mem_alloc(&p, 256) == 0)
		mem_free(p);
}

static __attribute__((noinline)) void one_unwind(void)
{
	void *ips[512];
	unw_backtrace(ips, (int)unwind_depth);
}

/* Best ns per operation; an op of kind "call" is two intercepted calls. */
static double measure(void (*op)(void), double per)
{
	double best = 1e30;
	long n = 1000;
	for (int run = 0; run < RUNS; run++) {
		double t0 = now_ns();
		for (long i = 0; i < n; i++)
			op();
		double dt = now_ns() - t0;
		if (dt / n / per < best)
			best = dt / n / per;
		if (dt < RUN_NS) /* next run long enough to measure */
			n = (long)(n * (RUN_NS / (dt > 1 ? dt : 1)));
	}
	return best;
}

/* Recurse DEEP frames, then measure: the unwinder has frames to walk. */
static __attribute__((noinline)) double deep(int level, void (*op)(void), double per)
{
	if (level > 0) {
		double r = deep(level - 1, op, per);
		__asm__ volatile("" ::: "memory"); /* not a tail call */
		return r;
	}
	return measure(op, per);
}

static int setup_driver(void)
{
	void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
	if (!h) {
		printf("n/a (no libcuda.so.1)\n");
		return -1;
	}
	int (*init)(unsigned) = (int (*)(unsigned))dlsym(h, "cuInit");
	int (*dev_get)(int *, int) = (int (*)(int *, int))dlsym(h, "cuDeviceGet");
	int (*retain)(void **, int) = (int (*)(void **, int))dlsym(h, "cuDevicePrimaryCtxRetain");
	int (*set_current)(void *) = (int (*)(void *))dlsym(h, "cuCtxSetCurrent");
	/* the application's view: the first definition in the global scope,
	 * the shim's wrapper when it is preloaded */
	mem_alloc = (alloc_fn)dlsym(RTLD_DEFAULT, "cuMemAlloc_v2");
	mem_free = (free_fn)dlsym(RTLD_DEFAULT, "cuMemFree_v2");
	int dev;
	void *ctx;
	if (!init || !dev_get || !retain || !set_current || !mem_alloc || !mem_free ||
	    init(0) || dev_get(&dev, 0) || retain(&ctx, dev) || set_current(ctx)) {
		printf("n/a (driver setup failed)\n");
		return -1;
	}
	const char *preload = getenv("LD_PRELOAD");
	Dl_info info;
	if (preload && *preload &&
	    (!dladdr((void *)mem_alloc, &info) || !strstr(info.dli_fname, "libvramtrace"))) {
		printf("n/a (the shim does not wrap cuMemAlloc_v2 yet)\n");
		return -1;
	}
	return 0;
}

static int child(int argc, char **argv)
{
	if (!strcmp(argv[1], "call")) {
		if (setup_driver())
			return 0;
		printf("%.1f\n", deep(DEEP, one_call_pair, 2));
		return 0;
	}
	if (!strcmp(argv[1], "unwind") && argc > 2) {
		unwind_depth = (unsigned)atoi(argv[2]);
		printf("%.1f\n", deep(DEEP, one_unwind, 1));
		return 0;
	}
	fprintf(stderr, "usage: bench_stacks [call | unwind N]\n");
	return 2;
}

struct bench_case {
	const char *name;
	const char *mode;   /* child argument */
	const char *depth;  /* VRAMTRACE_STACK_DEPTH or unwind depth */
	int preload;
};

static const struct bench_case cases[] = {
	{"cuMemAlloc+cuMemFree, no shim", "call", NULL, 0},
	{"shim, stacks off (depth 0)", "call", "0", 1},
	{"shim, stacks 24 frames", "call", "24", 1},
	{"shim, stacks 128 frames", "call", "128", 1},
	{"unw_backtrace 24 frames alone", "unwind", "24", 0},
	{"unw_backtrace 128 frames alone", "unwind", "128", 0},
};

/* Run one case in a child with its environment; its one line of output is
 * the value (or "n/a (...)"). */
static void run_case(const char *self, const struct bench_case *c, const char *trace_dir)
{
	int fds[2];
	if (pipe(fds))
		return;
	pid_t pid = fork();
	if (pid == 0) {
		dup2(fds[1], 1);
		close(fds[0]);
		setenv("LD_LIBRARY_PATH", VT_BENCH_SIMDRIVER_DIR, 1);
		setenv("VRAMTRACE_DIR", trace_dir, 1);
		if (c->preload)
			setenv("LD_PRELOAD", VT_BENCH_SHIM, 1);
		if (c->depth && c->preload)
			setenv("VRAMTRACE_STACK_DEPTH", c->depth, 1);
		if (c->depth && !c->preload)
			execl(self, self, c->mode, c->depth, (char *)NULL);
		else
			execl(self, self, c->mode, (char *)NULL);
		_exit(127);
	}
	close(fds[1]);
	char line[256] = "";
	FILE *in = fdopen(fds[0], "r");
	if (!in || !fgets(line, sizeof line, in))
		snprintf(line, sizeof line, "n/a (child failed)\n");
	if (in)
		fclose(in);
	waitpid(pid, NULL, 0);
	line[strcspn(line, "\n")] = '\0';
	int numeric = line[0] >= '0' && line[0] <= '9';
	printf("stacks\t%s\t%s\t%s\n", c->name, line, numeric ? "ns/call" : "");
	fflush(stdout);
}

int main(int argc, char **argv)
{
	if (argc > 1)
		return child(argc, argv);
	char dir[] = "/tmp/vt_bench_stacks_XXXXXX";
	if (!mkdtemp(dir))
		return 1;
	char self[4096];
	ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
	if (n <= 0)
		return 1;
	self[n] = '\0';
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
		run_case(self, &cases[i], dir);
	char cmd[256];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	return system(cmd) == 0 ? 0 : 1;
}
