/* A job for the accounting test: allocates FRAMEWORK_MIB MiB itself and has
 * the library stand-in (libcublasLt.so) allocate LIBRARY_MIB MiB, marks a
 * step (the shim reads cuMemGetInfo there), then exits.
 *   accounting_job FRAMEWORK_MIB LIBRARY_MIB */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

int cublasLtFakeWorkspace(size_t bytes);

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
	if (argc != 3) {
		fprintf(stderr, "usage: accounting_job FRAMEWORK_MIB LIBRARY_MIB\n");
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
	return 0;
}
