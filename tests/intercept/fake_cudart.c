/* A stand-in for libcudart (test only): the runtime calls the shim tags,
 * implemented the way the CUDA 13 runtime does it: the driver is dlopen'ed
 * and every entry point comes from cuGetProcAddress_v2. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stddef.h>

#include <cuda.h>
#include <cudaTypedefs.h>

static struct {
	PFN_cuInit_v2000 init;
	PFN_cuDeviceGet_v2000 device_get;
	PFN_cuDevicePrimaryCtxRetain_v7000 retain;
	PFN_cuCtxSetCurrent_v4000 set_current;
	PFN_cuMemAlloc_v3020 alloc;
	PFN_cuMemFree_v3020 free;
	PFN_cuMemcpy_v4000 copy;
	PFN_cuMemAllocAsync_v11020 alloc_async;
	PFN_cuMemFreeAsync_v11020 free_async;
	PFN_cuMemGetInfo_v3020 info;
} drv;
static pthread_once_t once = PTHREAD_ONCE_INIT;
static int ready;

static void load(void)
{
	void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
	PFN_cuGetProcAddress_v12000 gpa = h ? (PFN_cuGetProcAddress_v12000)dlsym(h, "cuGetProcAddress_v2") : NULL;
	if (!gpa)
		return;
	struct { const char *name; void **slot; } table[] = {
		{"cuInit", (void **)&drv.init}, {"cuDeviceGet", (void **)&drv.device_get},
		{"cuDevicePrimaryCtxRetain", (void **)&drv.retain}, {"cuCtxSetCurrent", (void **)&drv.set_current},
		{"cuMemAlloc", (void **)&drv.alloc}, {"cuMemFree", (void **)&drv.free},
		{"cuMemcpy", (void **)&drv.copy}, {"cuMemAllocAsync", (void **)&drv.alloc_async},
		{"cuMemFreeAsync", (void **)&drv.free_async}, {"cuMemGetInfo", (void **)&drv.info},
	};
	for (size_t i = 0; i < sizeof table / sizeof table[0]; i++)
		if (gpa(table[i].name, table[i].slot, 13000, CU_GET_PROC_ADDRESS_DEFAULT, NULL))
			return;
	CUdevice dev;
	CUcontext ctx;
	ready = !drv.init(0) && !drv.device_get(&dev, 0) && !drv.retain(&ctx, dev) && !drv.set_current(ctx);
}

static int need(void)
{
	pthread_once(&once, load);
	return ready ? 0 : 3; /* cudaErrorInitializationError */
}

int cudaMalloc(void **p, size_t n) { return need() ? 3 : (int)drv.alloc((CUdeviceptr *)p, n); }
int cudaFree(void *p) { return need() ? 3 : (int)drv.free((CUdeviceptr)p); }
int cudaMemcpy(void *d, const void *s, size_t n, int kind)
{
	(void)kind; /* unified addressing: the driver knows */
	return need() ? 3 : (int)drv.copy((CUdeviceptr)d, (CUdeviceptr)s, n);
}
int cudaMallocAsync(void **p, size_t n, void *stream)
{
	return need() ? 3 : (int)drv.alloc_async((CUdeviceptr *)p, n, (CUstream)stream);
}
int cudaFreeAsync(void *p, void *stream) { return need() ? 3 : (int)drv.free_async((CUdeviceptr)p, (CUstream)stream); }
int cudaMemGetInfo(size_t *f, size_t *t) { return need() ? 3 : (int)drv.info(f, t); }
