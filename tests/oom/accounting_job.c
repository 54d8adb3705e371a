/* A job for the accounting test: allocates FRAMEWORK_MIB MiB itself and has
 * the library stand-in (libcublasLt.so) allocate LIBRARY_MIB MiB, marks a
 * step (the shim reads cuMemGetInfo there), then exits.
 *   accounting_job FRAMEWORK_MIB LIBRARY_MIB [free]
 * With "free" it then frees its own allocation (the shim takes its peak
 * reading right before) and prints "libnvidia-ml mapped: yes" or "no": is
 * libnvidia-ml in its /proc/self/maps after that reading? */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int cublasLtFakeWorkspace(size_t bytes);

static int nvml_mapped(void)
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[4096];
	int found = 0;
	while (f && fgets(line, sizeof line, f))
		found |= strstr(line, "libnvidia-ml") != NULL;
	if (f)
		fclose(f);
	return found;
}

#define MIB (1024ull * 1024ull)

static void *need(void *lib, const char *name)
{
	void *f = dlsym(lib, name);
	if (!f) {
		fprintf(stderr, "accounting_job: no %s\n", name);
		exit(1);
	}
	return f;
}

int main(int argc, char **argv)
{
	if (argc != 3 && !(argc == 4 && !strcmp(argv[3], "free"))) {
		fprintf(stderr, "usage: accounting_job FRAMEWORK_MIB LIBRARY_MIB [free]\n");
		return 2;
	}
	void *cuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
	if (!cuda) {
		fprintf(stderr, "accounting_job: %s\n", dlerror());
		return 1;
	}
	int (*init)(unsigned), (*get)(int *, int), (*retain)(void **, int), (*set)(void *);
	int (*alloc)(uint64_t *, size_t);
	*(void **)&init = need(cuda, "cuInit");
	*(void **)&get = need(cuda, "cuDeviceGet");
	*(void **)&retain = need(cuda, "cuDevicePrimaryCtxRetain");
	*(void **)&set = need(cuda, "cuCtxSetCurrent");
	*(void **)&alloc = need(cuda, "cuMemAlloc_v2");
	int dev;
	void *ctx;
	uint64_t p;
	if (init(0) || get(&dev, 0) || retain(&ctx, dev) || set(ctx) ||
	    alloc(&p, strtoull(argv[1], NULL, 10) * MIB) ||
	    cublasLtFakeWorkspace(strtoull(argv[2], NULL, 10) * MIB)) {
		fprintf(stderr, "accounting_job: a driver call failed\n");
		return 1;
	}
	void (*mark)(const char *);
	*(void **)&mark = dlsym(RTLD_DEFAULT, "vramtrace_mark");
	if (mark)
		mark("step 0");
	if (argc == 4) {
		int (*mem_free)(uint64_t);
		*(void **)&mem_free = need(cuda, "cuMemFree_v2");
		if (mem_free(p)) {
			fprintf(stderr, "accounting_job: cuMemFree failed\n");
			return 1;
		}
		printf("libnvidia-ml mapped: %s\n", nvml_mapped() ? "yes" : "no");
	}
	return 0;
}
