/* errno across wrapped calls: the shim must leave the job's errno exactly as
 * the driver left it — including on the call that creates the log (file
 * creation, mmap, fallocate inside the shim all set errno on their own).
 * Prints errno after each call; the test compares plain vs traced output. */
#include <cuda.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#define SENTINEL 4242

static void report(const char *what, CUresult rc)
{
	printf("%s rc=%d errno=%d\n", what, (int)rc, errno);
	errno = SENTINEL;
}

int main(void)
{
	CUdevice dev;
	CUcontext ctx;
	CUdeviceptr p = 0;
	static char host[4096];
	memset(host, 7, sizeof host);
	errno = SENTINEL;
	report("cuInit", cuInit(0));
	report("cuDeviceGet", cuDeviceGet(&dev, 0));
	report("cuDevicePrimaryCtxRetain", cuDevicePrimaryCtxRetain(&ctx, dev));
	report("cuCtxSetCurrent", cuCtxSetCurrent(ctx));
	report("cuMemAlloc (first event: creates the log)", cuMemAlloc(&p, sizeof host));
	report("cuMemcpyHtoD", cuMemcpyHtoD(p, host, sizeof host));
	report("cuMemFree", cuMemFree(p));
	report("cuMemAlloc past capacity", cuMemAlloc(&p, (size_t)1 << 50));
	/* enough events to fill log chunks: a chunk is claimed while the shim
	 * writes an event after the driver call (run_errno.sh makes that fail) */
	unsigned changed = 0;
	for (unsigned i = 0; i < 3000; i++) {
		CUresult a = cuMemAlloc(&p, 256), f = a ? a : cuMemFree(p);
		changed += errno != SENTINEL || a || f;
		errno = SENTINEL;
	}
	printf("3000 alloc+free pairs: %u changed errno or failed\n", changed);
	return 0;
}
