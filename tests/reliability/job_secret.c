/* Privacy job: uploads a known secret byte pattern to the
 * device (heap and stack buffers, sync and async H2D, a D2D copy, pinned host
 * memory) and reads it back. The pattern comes from VT_SECRET (an
 * environment variable, which the shim must not record either); argv
 * carries nothing secret (the command line IS recorded, by design).
 * Exit 0 when every copy round-tripped. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda.h>

#define MIB (1u << 20)

static void fill(unsigned char *buf, size_t n, const char *secret)
{
	size_t len = strlen(secret);
	for (size_t i = 0; i < n; i++)
		buf[i] = (unsigned char)secret[i % len];
}

#define CHECK(call)                                                      \
	do {                                                             \
		CUresult r_ = (call);                                    \
		if (r_ != CUDA_SUCCESS) {                                \
			fprintf(stderr, "%s: error %d\n", #call, (int)r_); \
			return 1;                                        \
		}                                                        \
	} while (0)

int main(void)
{
	const char *secret = getenv("VT_SECRET");
	if (!secret || strlen(secret) < 16)
		return 2;
	CUdevice dev;
	CUcontext ctx;
	CUdeviceptr a, b;
	CUstream stream;
	CHECK(cuInit(0));
	CHECK(cuDeviceGet(&dev, 0));
	CHECK(cuDevicePrimaryCtxRetain(&ctx, dev));
	CHECK(cuCtxSetCurrent(ctx));
	CHECK(cuStreamCreate(&stream, 0));
	unsigned char *heap = malloc(MIB), *back = malloc(MIB), stack[4096], *pinned;
	if (!heap || !back)
		return 2;
	fill(heap, MIB, secret);
	fill(stack, sizeof stack, secret);
	CHECK(cuMemAlloc(&a, MIB));
	CHECK(cuMemAlloc(&b, MIB));
	CHECK(cuMemcpyHtoD(a, heap, MIB));
	CHECK(cuMemcpyHtoDAsync(a + 8192, stack, sizeof stack, stream));
	CHECK(cuMemAllocHost((void **)&pinned, MIB));
	fill(pinned, MIB, secret);
	CHECK(cuMemcpyHtoDAsync(b, pinned, MIB, stream));
	CHECK(cuStreamSynchronize(stream));
	CHECK(cuMemcpyDtoD(b, a, MIB));
	CHECK(cuMemcpyDtoH(back, b, MIB));
	int same = memcmp(back, heap, 8192) == 0 && memcmp(back + 8192, stack, sizeof stack) == 0;
	CHECK(cuMemFreeHost(pinned));
	CHECK(cuMemFree(a));
	CHECK(cuMemFree(b));
	printf("secret job: %s\n", same ? "round trip ok" : "MISMATCH");
	free(heap);
	free(back);
	return same ? 0 : 1;
}
