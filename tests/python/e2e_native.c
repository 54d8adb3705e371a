/* A plain C client of the (simulated) driver: the "process without CPython"
 * of the Python frames tests. */
#include <cuda.h>
#include <stdio.h>

int main(void)
{
	CUdevice dev;
	CUcontext ctx;
	CUdeviceptr ptr;
	static char host[1 << 16];
	if (cuInit(0) || cuDeviceGet(&dev, 0) || cuDevicePrimaryCtxRetain(&ctx, dev) ||
	    cuCtxSetCurrent(ctx) || cuMemAlloc(&ptr, sizeof host) ||
	    cuMemcpyHtoD(ptr, host, sizeof host) || cuMemFree(ptr)) {
		fprintf(stderr, "e2e_native: driver call failed\n");
		return 1;
	}
	return 0;
}
