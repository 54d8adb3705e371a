/* What `vramtrace top` costs the job it watches, in one run.
 *
 *   bench_top                  run both cases, print TSV rows
 *   bench_top job N            child: N cuMemAlloc+cuMemFree pairs (2 N
 *                              events) through the preloaded shim; prints
 *                              its events per second
 *
 * The job runs under the shim on a driver that does nothing (null_driver.c),
 * so it makes events as fast as recording allows (millions a second). It is
 * run alone and then with a viewer following its trace the way top does
 * (vt_trace_follow_poll and a frame every REFRESH_MS), in this process, on
 * the same machine. Each case runs RUNS times and keeps the fastest (other
 * load only ever adds time). Rows "top<TAB>case<TAB>value<TAB>unit". */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "model_load.h"
#include "top_frame.h"

#define PAIRS 10000000L
#define RUNS 3
#define REFRESH_MS 200

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

typedef int (*alloc_fn)(unsigned long long *, size_t);
typedef int (*free_fn)(unsigned long long);

static int child_job(long n)
{
	void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
	if (!h)
		return 3;
	int (*init)(unsigned) = (int (*)(unsigned))dlsym(h, "cuInit");
	int (*dev_get)(int *, int) = (int (*)(int *, int))dlsym(h, "cuDeviceGet");
	int (*retain)(void **, int) = (int (*)(void **, int))dlsym(h, "cuDevicePrimaryCtxRetain");
	int (*set_current)(void *) = (int (*)(void *))dlsym(h, "cuCtxSetCurrent");
	alloc_fn mem_alloc = (alloc_fn)dlsym(RTLD_DEFAULT, "cuMemAlloc_v2");
	free_fn mem_free = (free_fn)dlsym(RTLD_DEFAULT, "cuMemFree_v2");
	int dev;
	void *ctx;
	if (!init || !dev_get || !retain || !set_current || !mem_alloc || !mem_free || init(0) ||
	    dev_get(&dev, 0) || retain(&ctx, dev) || set_current(ctx))
		return 3;
	double t0 = now_s();
	for (long i = 0; i < n; i++) {
		unsigned long long p;
		mem_alloc(&p, 4096);
		mem_free(p);
	}
	printf("%.0f\n", 2.0 * (double)n / (now_s() - t0));
	return 0;
}

/* One run of the job into a fresh directory; with a viewer when watch.
 * Returns the job's events per second (0 on failure); *events_read: events the
 * viewer read. */
static double run_case(const char *self, int watch, uint64_t *events_read)
{
	char dir[] = "/tmp/vt-bench-top-XXXXXX", out[64] = "";
	if (!mkdtemp(dir))
		return 0;
	int pipefd[2];
	if (pipe(pipefd) < 0)
		return 0;
	pid_t pid = fork();
	if (pid == 0) {
		dup2(pipefd[1], 1);
		setenv("LD_PRELOAD", VT_BENCH_SHIM, 1);
		setenv("LD_LIBRARY_PATH", VT_BENCH_NULLDRIVER_DIR, 1);
		setenv("VRAMTRACE_DIR", dir, 1);
		char n[32];
		snprintf(n, sizeof n, "%ld", PAIRS);
		execl(self, self, "job", n, (char *)NULL);
		_exit(127);
	}
	close(pipefd[1]);
	*events_read = 0;
	int status = 0;
	if (watch) {
		char err[256];
		struct vt_trace_follow *f = vt_trace_follow_open(dir, err, sizeof err);
		static struct vt_top_frame fr, prev;
		while (f && waitpid(pid, &status, WNOHANG) == 0) {
			*events_read += vt_trace_follow_poll(f);
			prev = fr;
			vt_top_frame_fill(&fr, f, dir, &prev, REFRESH_MS / 1000.0);
			usleep(REFRESH_MS * 1000);
		}
		if (f)
			*events_read += vt_trace_follow_poll(f);
		vt_trace_follow_close(f);
	}
	if (!watch)
		waitpid(pid, &status, 0);
	ssize_t got = read(pipefd[0], out, sizeof out - 1);
	close(pipefd[0]);
	char cmd[128];
	snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
	if (system(cmd) != 0)
		fprintf(stderr, "bench_top: could not remove %s\n", dir);
	return got > 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0 ? atof(out) : 0;
}

int main(int argc, char **argv)
{
	if (argc == 3 && !strcmp(argv[1], "job"))
		return child_job(atol(argv[2]));
	char self[4096];
	ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
	if (n <= 0)
		return 1;
	self[n] = '\0';
	double best[2] = {0, 0};
	uint64_t read_events = 0;
	for (int run = 0; run < RUNS; run++) {
		for (int watch = 0; watch < 2; watch++) {
			uint64_t r = 0;
			double rate = run_case(self, watch, &r);
			best[watch] = rate > best[watch] ? rate : best[watch];
			if (watch)
				read_events = r;
		}
	}
	printf("top\tjob alone (events/s, best of %d)\t%.2f\tM/s\n", RUNS, best[0] / 1e6);
	printf("top\tjob with top following it (%d ms refresh)\t%.2f\tM/s\n", REFRESH_MS,
	       best[1] / 1e6);
	printf("top\tslowdown with top\t%.1f\t%%\n",
	       best[0] > 0 ? 100.0 * (best[0] - best[1]) / best[0] : 0.0);
	printf("top\tevents the viewer read (of %ld)\t%llu\tevents\n", 2 * PAIRS,
	       (unsigned long long)read_events);
	return best[0] > 0 && best[1] > 0 ? 0 : 1;
}
