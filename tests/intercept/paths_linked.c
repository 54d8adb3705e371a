/* Lookup path 1: the client is linked against libcuda and calls the
 * exported symbols (cuda.h maps cuMemAlloc to cuMemAlloc_v2 and so on). */
#include "client.h"

int vt_client_fill_linked(struct cu_api *api)
{
	*api = (struct cu_api){
		.path = "linked",
		.init = cuInit,
		.device_get = cuDeviceGet,
		.ctx_retain = cuDevicePrimaryCtxRetain,
		.ctx_set = cuCtxSetCurrent,
		.alloc = cuMemAlloc,
		.free = cuMemFree,
		.htod = cuMemcpyHtoD,
		.dtoh = cuMemcpyDtoH,
		.alloc_async = cuMemAllocAsync,
		.free_async = cuMemFreeAsync,
		.htod_async = cuMemcpyHtoDAsync,
		.alloc_name = "cuMemAlloc_v2",
		.free_name = "cuMemFree_v2",
		.htod_name = "cuMemcpyHtoD_v2",
		.alloc_async_name = "cuMemAllocAsync",
		.free_async_name = "cuMemFreeAsync",
		.htod_async_name = "cuMemcpyHtoDAsync_v2",
	};
	return 0;
}
