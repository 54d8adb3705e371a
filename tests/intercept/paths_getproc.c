/* Lookup path 3: only cuGetProcAddress_v2 is looked up by name; every other
 * entry point is requested by base name, CUDA version and stream flag, as
 * the CUDA 13 runtime does (here with the per-thread default stream, so the
 * _ptds/_ptsz variants come back where they exist). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>

#include "client.h"

#define PER_THREAD CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM

#define RESOLVE(field, base, flags)                                                                           \
	do {                                                                                                  \
		CUdriverProcAddressQueryResult found;                                                         \
		if (get_proc(base, (void **)&api->field, 13000, flags, &found) || !api->field) {              \
			fprintf(stderr, "cuGetProcAddress_v2(%s) failed\n", base);                            \
			return 1;                                                                             \
		}                                                                                             \
	} while (0)

int vt_client_fill_getproc(struct cu_api *api)
{
	void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
	PFN_cuGetProcAddress_v12000 get_proc = h ? (PFN_cuGetProcAddress_v12000)dlsym(h, "cuGetProcAddress_v2") : NULL;
	if (!get_proc) {
		fprintf(stderr, "no cuGetProcAddress_v2: %s\n", dlerror());
		return 1;
	}
	api->path = "getproc";
	RESOLVE(init, "cuInit", 0);
	RESOLVE(device_get, "cuDeviceGet", 0);
	RESOLVE(ctx_retain, "cuDevicePrimaryCtxRetain", 0);
	RESOLVE(ctx_set, "cuCtxSetCurrent", 0);
	RESOLVE(alloc, "cuMemAlloc", PER_THREAD);
	RESOLVE(free, "cuMemFree", PER_THREAD);
	RESOLVE(htod, "cuMemcpyHtoD", PER_THREAD);
	RESOLVE(dtoh, "cuMemcpyDtoH", PER_THREAD);
	RESOLVE(alloc_async, "cuMemAllocAsync", PER_THREAD);
	RESOLVE(free_async, "cuMemFreeAsync", PER_THREAD);
	RESOLVE(htod_async, "cuMemcpyHtoDAsync", PER_THREAD);
	api->alloc_name = "cuMemAlloc_v2";
	api->free_name = "cuMemFree_v2";
	api->htod_name = "cuMemcpyHtoD_v2_ptds";
	api->alloc_async_name = "cuMemAllocAsync_ptsz";
	api->free_async_name = "cuMemFreeAsync_ptsz";
	api->htod_async_name = "cuMemcpyHtoDAsync_v2_ptsz";
	return 0;
}
