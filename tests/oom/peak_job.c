/* A job for the shim's own readings of used memory (peak_sample.c).
 *   peak_job peak   16 x 16 MiB, all freed, then 8 MiB: the peak (256 MiB)
 *                   is mid-run
 *   peak_job loop N N times 1 MiB allocated and freed: the shim may read
 *                   only a few times a second
 * Prints "meminfo_calls C seconds S": the driver's cuMemGetInfo calls (the
 * job makes none, so all are the shim's) and the run time. */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MIB (1024ull * 1024ull)
#define PEAK_ALLOCS 16

typedef int (*alloc_fn)(uint64_t *, size_t);
typedef int (*free_fn)(uint64_t);

static void *need(void *lib, const char *name)
{
	void *f = dlsym(lib, name);
	if (!f) {
		fprintf(stderr, "peak_job: no %s\n", name);
		exit(1);
	}
	return f;
}

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int grow_and_shrink(alloc_fn alloc, free_fn release)
{
	uint64_t p[PEAK_ALLOCS], tail;
	for (int i = 0; i < PEAK_ALLOCS; i++)
		if (alloc(&p[i], 16 * MIB))
			return 1;
	for (int i = 0; i < PEAK_ALLOCS; i++)
		if (release(p[i]))
			return 1;
	return alloc(&tail, 8 * MIB);
}

static int loop(alloc_fn alloc, free_fn release, long n)
{
	for (long i = 0; i < n; i++) {
		uint64_t p;
		if (alloc(&p, MIB) || release(p))
			return 1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	int is_loop = argc == 3 && !strcmp(argv[1], "loop");
	if (!is_loop && !(argc == 2 && !strcmp(argv[1], "peak"))) {
		fprintf(stderr, "usage: peak_job peak | peak_job loop N\n");
		return 2;
	}
	void *cuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
	if (!cuda) {
		fprintf(stderr, "peak_job: %s\n", dlerror());
		return 1;
	}
	int (*init)(unsigned), (*get)(int *, int), (*retain)(void **, int), (*set)(void *);
	unsigned long (*meminfo_calls)(void);
	*(void **)&init = need(cuda, "cuInit");
	*(void **)&get = need(cuda, "cuDeviceGet");
	*(void **)&retain = need(cuda, "cuDevicePrimaryCtxRetain");
	*(void **)&set = need(cuda, "cuCtxSetCurrent");
	*(void **)&meminfo_calls = need(cuda, "vtsim_meminfo_calls");
	alloc_fn alloc = (alloc_fn)need(cuda, "cuMemAlloc_v2");
	free_fn release = (free_fn)need(cuda, "cuMemFree_v2");
	int dev;
	void *ctx;
	double start = now_s();
	if (init(0) || get(&dev, 0) || retain(&ctx, dev) || set(ctx) ||
	    (is_loop ? loop(alloc, release, strtol(argv[2], NULL, 10))
	             : grow_and_shrink(alloc, release))) {
		fprintf(stderr, "peak_job: a driver call failed\n");
		return 1;
	}
	printf("meminfo_calls %lu seconds %.3f\n", meminfo_calls(), now_s() - start);
	return 0;
}
