/* Shim e2e client (-g -O0 -fno-inline), linked against the simulated
 * driver: allocations from three functions in two files, a library that
 * allocates, dlopen'ed after start and dlclose'd before exit, 16 threads.
 *   usage: shim_client [LIBRARY]   (run under LD_PRELOAD=libvramtrace.so) */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "shim_client.h"

static CUcontext ctx;

void check(CUresult rc, const char *what)
{
	if (rc != CUDA_SUCCESS) {
		fprintf(stderr, "shim_client: %s failed: %d\n", what, (int)rc);
		exit(1);
	}
}

static void load_weights(void)
{
	CUdeviceptr p;
	check(cuMemAlloc(&p, 4u << 20), "weights"); /* SHIM_SITE_WEIGHTS */
}

static void *thread_main(void *arg)
{
	(void)arg;
	check(cuCtxSetCurrent(ctx), "thread context");
	for (int i = 0; i < 50; i++)
		alloc_batch();
	return NULL;
}

int main(int argc, char **argv)
{
	CUdevice dev;
	check(cuInit(0), "cuInit");
	check(cuDeviceGet(&dev, 0), "cuDeviceGet");
	check(cuDevicePrimaryCtxRetain(&ctx, dev), "primary context");
	check(cuCtxSetCurrent(ctx), "cuCtxSetCurrent");
	load_weights();
	upload_dataset();
	alloc_batch();
	if (argc > 1) {
		void *h = dlopen(argv[1], RTLD_NOW);
		if (!h) {
			fprintf(stderr, "shim_client: %s\n", dlerror());
			return 1;
		}
		void (*lib_alloc)(void) = (void (*)(void))dlsym(h, "shim_lib_alloc");
		if (!lib_alloc)
			return 1;
		lib_alloc();
		dlclose(h);
	}
	pthread_t th[16];
	for (int i = 0; i < 16; i++)
		pthread_create(&th[i], NULL, thread_main, NULL);
	for (int i = 0; i < 16; i++)
		pthread_join(th[i], NULL);
	return 0;
}
