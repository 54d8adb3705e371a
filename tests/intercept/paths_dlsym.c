/* Lookup path 2: dlopen("libcuda.so.1") and dlsym of the exported _v2
 * names, as TensorFlow and XLA do. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>

#include "client.h"

#define LOOKUP(field, name)                                                                                   \
	do {                                                                                                  \
		*(void **)&api->field = dlsym(h, name);                                                       \
		if (!api->field) {                                                                            \
			fprintf(stderr, "dlsym(%s): %s\n", name, dlerror());                                  \
			return 1;                                                                             \
		}                                                                                             \
	} while (0)

int vt_client_fill_dlsym(struct cu_api *api)
{
	void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		fprintf(stderr, "dlopen(libcuda.so.1): %s\n", dlerror());
		return 1;
	}
	api->path = "dlsym";
	LOOKUP(init, "cuInit");
	LOOKUP(device_get, "cuDeviceGet");
	LOOKUP(ctx_retain, "cuDevicePrimaryCtxRetain");
	LOOKUP(ctx_set, "cuCtxSetCurrent");
	LOOKUP(alloc, api->alloc_name = "cuMemAlloc_v2");
	LOOKUP(free, api->free_name = "cuMemFree_v2");
	LOOKUP(htod, api->htod_name = "cuMemcpyHtoD_v2");
	LOOKUP(dtoh, "cuMemcpyDtoH_v2");
	LOOKUP(alloc_async, api->alloc_async_name = "cuMemAllocAsync");
	LOOKUP(free_async, api->free_async_name = "cuMemFreeAsync");
	LOOKUP(htod_async, api->htod_async_name = "cuMemcpyHtoDAsync_v2");
	return 0;
}
