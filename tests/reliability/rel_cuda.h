/* The driver entry points the reliability jobs call, found through one of
 * the three lookup paths the shim must cover (docs/design/interception.md). */
#ifndef VT_REL_CUDA_H
#define VT_REL_CUDA_H

#include <cuda.h>
#include <cudaTypedefs.h>

enum rel_path { REL_LINKED, REL_DLSYM, REL_GETPROC, REL_NPATHS };

struct rel_api {
	const char *path;
	PFN_cuInit_v2000 init;
	PFN_cuDeviceGet_v2000 device_get;
	PFN_cuDevicePrimaryCtxRetain_v7000 ctx_retain;
	PFN_cuCtxSetCurrent_v4000 ctx_set;
	PFN_cuMemAlloc_v3020 alloc;
	PFN_cuMemFree_v3020 free;
	PFN_cuMemcpyHtoD_v3020 htod;
	PFN_cuMemcpyDtoH_v3020 dtoh;
	const char *htod_name; /* the variant the shim must record for htod */
};

/* Fill api through path p; 0 or -1 (one line on stderr says why). */
int rel_api_fill(enum rel_path p, struct rel_api *api);
/* cuInit once per process (any thread), then make device 0's primary
 * context current on the calling thread; 0 or the CUresult. */
int rel_use_device(const struct rel_api *api);

#endif
