/* A job that calls each entry point of the simulated driver's nested chain
 * once (cuMemAllocAsync_ptsz -> cuMemAllocAsync -> cuMemAlloc_v2 under
 * VT_SIM_NESTED=1) and frees what it got; nested.sh checks that the trace
 * holds one allocation per call the job made, each under the entry point
 * the job called. Exit 0, or 1 with a line on stderr. */
#define __CUDA_API_VERSION_INTERNAL 1 /* every variant by its own name */
#include <cuda.h>
#include <stdio.h>

static int check(CUresult r, const char *what)
{
	if (r != CUDA_SUCCESS)
		fprintf(stderr, "nested: %s failed (%d)\n", what, (int)r);
	return r != CUDA_SUCCESS;
}

int main(void)
{
	CUdevice dev;
	CUcontext ctx;
	if (check(cuInit(0), "cuInit") || check(cuDeviceGet(&dev, 0), "cuDeviceGet") ||
	    check(cuDevicePrimaryCtxRetain(&ctx, dev), "cuDevicePrimaryCtxRetain") ||
	    check(cuCtxSetCurrent(ctx), "cuCtxSetCurrent"))
		return 1;
	CUdeviceptr a = 0, b = 0, c = 0;
	if (check(cuMemAllocAsync_ptsz(&a, 1 << 20, NULL), "cuMemAllocAsync_ptsz") ||
	    check(cuMemAllocAsync(&b, 2 << 20, NULL), "cuMemAllocAsync") ||
	    check(cuMemAlloc_v2(&c, 3 << 20), "cuMemAlloc_v2"))
		return 1;
	return check(cuMemFree_v2(a), "free") | check(cuMemFree_v2(b), "free") |
	       check(cuMemFree_v2(c), "free");
}
