/* A library whose constructor uses the driver: it may run before the
 * preloaded shim's own constructor, and its calls must be recorded anyway
 * (every wrapper works before the shim is initialised). */
#include <unistd.h>

#include "client.h"

__attribute__((constructor)) static void early_use_of_the_driver(void)
{
	CUdevice dev;
	CUcontext ctx;
	CUdeviceptr d = 0;
	if (cuInit(0) || cuDeviceGet(&dev, 0) || cuDevicePrimaryCtxRetain(&ctx, dev) || cuCtxSetCurrent(ctx))
		return;
	CUresult r = cuMemAlloc(&d, 1 << 20);
	vt_truth("alloc %d cuMemAlloc_v2 %llu %u 0 %d\n", (int)getpid(), (unsigned long long)d, 1u << 20, (int)r);
	vt_truth("free %d cuMemFree_v2 %llu 0\n", (int)getpid(), (unsigned long long)d);
	cuMemFree(d);
}
