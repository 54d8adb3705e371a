/* See rel_cuda.h. Linked against the simulated driver (path 1 takes the
 * exported symbols' addresses, which resolve to the shim's under it). */
#define _GNU_SOURCE
#include "rel_cuda.h"

#include <dlfcn.h>
#include <stdio.h>

static int fill_linked(struct rel_api *a)
{
	a->init = cuInit;
	a->device_get = cuDeviceGet;
	a->ctx_retain = cuDevicePrimaryCtxRetain;
	a->ctx_set = cuCtxSetCurrent;
	a->alloc = cuMemAlloc; /* cuda.h: cuMemAlloc_v2 */
	a->free = cuMemFree;
	a->htod = cuMemcpyHtoD;
	a->dtoh = cuMemcpyDtoH;
	a->htod_name = "cuMemcpyHtoD_v2";
	return 0;
}

static int fill_dlsym(struct rel_api *a)
{
	void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		fprintf(stderr, "dlopen(libcuda.so.1): %s\n", dlerror());
		return -1;
	}
	static const char *const names[] = {"cuInit", "cuDeviceGet", "cuDevicePrimaryCtxRetain",
	                                    "cuCtxSetCurrent", "cuMemAlloc_v2", "cuMemFree_v2",
	                                    "cuMemcpyHtoD_v2", "cuMemcpyDtoH_v2"};
	void **slots[] = {(void **)&a->init, (void **)&a->device_get, (void **)&a->ctx_retain,
	                  (void **)&a->ctx_set, (void **)&a->alloc, (void **)&a->free,
	                  (void **)&a->htod, (void **)&a->dtoh};
	for (unsigned i = 0; i < sizeof names / sizeof names[0]; i++)
		if (!(*slots[i] = dlsym(h, names[i]))) {
			fprintf(stderr, "dlsym(%s): %s\n", names[i], dlerror());
			return -1;
		}
	a->htod_name = "cuMemcpyHtoD_v2";
	return 0;
}

/* as the CUDA 13 runtime asks: base name, version, per-thread stream */
static int fill_getproc(struct rel_api *a)
{
	void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
	PFN_cuGetProcAddress_v12000 gpa =
		h ? (PFN_cuGetProcAddress_v12000)dlsym(h, "cuGetProcAddress_v2") : NULL;
	if (!gpa) {
		fprintf(stderr, "no cuGetProcAddress_v2\n");
		return -1;
	}
	static const char *const names[] = {"cuInit", "cuDeviceGet", "cuDevicePrimaryCtxRetain",
	                                    "cuCtxSetCurrent", "cuMemAlloc", "cuMemFree",
	                                    "cuMemcpyHtoD", "cuMemcpyDtoH"};
	void **slots[] = {(void **)&a->init, (void **)&a->device_get, (void **)&a->ctx_retain,
	                  (void **)&a->ctx_set, (void **)&a->alloc, (void **)&a->free,
	                  (void **)&a->htod, (void **)&a->dtoh};
	for (unsigned i = 0; i < sizeof names / sizeof names[0]; i++) {
		CUdriverProcAddressQueryResult found;
		if (gpa(names[i], slots[i], 13000, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, &found) ||
		    !*slots[i]) {
			fprintf(stderr, "cuGetProcAddress_v2(%s) failed\n", names[i]);
			return -1;
		}
	}
	a->htod_name = "cuMemcpyHtoD_v2_ptds";
	return 0;
}

int rel_api_fill(enum rel_path p, struct rel_api *api)
{
	static const char *const path_names[] = {"linked", "dlsym", "getproc"};
	int (*const fill[])(struct rel_api *) = {fill_linked, fill_dlsym, fill_getproc};
	if (p >= REL_NPATHS)
		return -1;
	api->path = path_names[p];
	return fill[p](api);
}

int rel_use_device(const struct rel_api *api)
{
	CUdevice dev;
	CUcontext ctx;
	CUresult r = api->init(0);
	if (!r)
		r = api->device_get(&dev, 0);
	if (!r)
		r = api->ctx_retain(&ctx, dev);
	if (!r)
		r = api->ctx_set(ctx);
	return (int)r;
}
