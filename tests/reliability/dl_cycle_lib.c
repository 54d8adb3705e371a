/* A library that finds the driver on its own each time it is loaded
 * (dlopen + dlsym, as TensorFlow's stream executor does), allocates, frees,
 * and lets go of it again: loaded and unloaded repeatedly by the lifecycle
 * job's dlopen-cycle. */
#define _GNU_SOURCE
#include <dlfcn.h>

#include <cuda.h>
#include <cudaTypedefs.h>

__attribute__((visibility("default"))) int rel_dl_round(void)
{
	void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
	if (!h)
		return -1;
	PFN_cuInit_v2000 init = (PFN_cuInit_v2000)dlsym(h, "cuInit");
	PFN_cuDeviceGet_v2000 get = (PFN_cuDeviceGet_v2000)dlsym(h, "cuDeviceGet");
	PFN_cuDevicePrimaryCtxRetain_v7000 retain =
		(PFN_cuDevicePrimaryCtxRetain_v7000)dlsym(h, "cuDevicePrimaryCtxRetain");
	PFN_cuCtxSetCurrent_v4000 set = (PFN_cuCtxSetCurrent_v4000)dlsym(h, "cuCtxSetCurrent");
	PFN_cuMemAlloc_v3020 alloc = (PFN_cuMemAlloc_v3020)dlsym(h, "cuMemAlloc_v2");
	PFN_cuMemFree_v3020 release = (PFN_cuMemFree_v3020)dlsym(h, "cuMemFree_v2");
	int rc = -1;
	CUdevice dev;
	CUcontext ctx;
	CUdeviceptr d;
	if (init && get && retain && set && alloc && release && !init(0) && !get(&dev, 0) &&
	    !retain(&ctx, dev) && !set(ctx) && !alloc(&d, 4096 * 5) && !release(d))
		rc = 0;
	dlclose(h);
	return rc;
}
