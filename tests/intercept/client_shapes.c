/* vt-client-shapes: one call of every call SHAPE the shim records (pitch,
 * managed, pool, VMM create/reserve/map/unmap/release/free, arrays and
 * mipmaps, pool trim, unified copies in both directions, DtoD, peer, 2D, 3D,
 * both batch ABIs, 3D batch, the old 32-bit ABI, graph and IPC nodes the
 * simulated driver refuses), each followed by the exact event it must leave,
 * as a truth line:
 *   ev PID TYPE API ADDR BYTES AUX KIND DEV RESULT
 * The 87 rows' signatures are checked at compile time in the shim; this
 * checks what each shape records. Needs VT_SIM_DEVICES=2. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cuda.h>
#include <cudaTypedefs.h>

#include "client.h"
#include "vramtrace/format.h"

static int failures;

static void ev(unsigned type, const char *api, unsigned long long addr, unsigned long long bytes,
	       unsigned long long aux, unsigned kind, int dev, CUresult r)
{
	vt_truth("ev %d %u %s %llu %llu %llu %u %d %d\n", (int)getpid(), type, api, addr, bytes, aux, kind, dev, (int)r);
}

static void expect_ok(const char *what, CUresult r)
{
	printf("%-28s %d\n", what, (int)r);
	if (r != CUDA_SUCCESS)
		failures++;
}

#define U(p) ((unsigned long long)(uintptr_t)(p))

static unsigned char host[1 << 16];

static void linear_copies(CUdeviceptr d, CUdeviceptr d2)
{
	CUresult r = cuMemcpy(d, U(host), 512); /* unified: inferred */
	ev(VT_REC_COPY, "cuMemcpy", d, 512, U(host), VT_COPY_HTOD, 0, r);
	expect_ok("cuMemcpy htod", r);
	r = cuMemcpy(U(host), d, 256);
	ev(VT_REC_COPY, "cuMemcpy", U(host), 256, d, VT_COPY_DTOH, 0, r);
	expect_ok("cuMemcpy dtoh", r);
	r = cuMemcpyDtoD(d2, d, 128);
	ev(VT_REC_COPY, "cuMemcpyDtoD_v2", d2, 128, d, VT_COPY_DTOD, 0, r);
	expect_ok("cuMemcpyDtoD", r);
}

static void shaped_copies(CUdeviceptr pitched, size_t pitch)
{
	CUDA_MEMCPY2D c2 = {.srcMemoryType = CU_MEMORYTYPE_HOST, .srcHost = host, .srcPitch = 1000,
			    .dstMemoryType = CU_MEMORYTYPE_DEVICE, .dstDevice = pitched, .dstPitch = pitch,
			    .WidthInBytes = 1000, .Height = 10};
	CUresult r = cuMemcpy2D(&c2);
	ev(VT_REC_COPY, "cuMemcpy2D_v2", pitched, 10000, U(host), VT_COPY_HTOD, 0, r);
	expect_ok("cuMemcpy2D", r);
	CUDA_MEMCPY3D c3 = {.srcMemoryType = CU_MEMORYTYPE_DEVICE, .srcDevice = pitched, .srcPitch = pitch,
			    .srcHeight = 2, .dstMemoryType = CU_MEMORYTYPE_HOST, .dstHost = host, .dstPitch = 100,
			    .dstHeight = 2, .WidthInBytes = 100, .Height = 2, .Depth = 3};
	r = cuMemcpy3D(&c3);
	ev(VT_REC_COPY, "cuMemcpy3D_v2", U(host), 600, pitched, VT_COPY_DTOH, 0, r);
	expect_ok("cuMemcpy3D", r);
}

static void batches(void *driver, CUdeviceptr d)
{
	CUdeviceptr dsts[2] = {d, U(host) + 4096}, srcs[2] = {U(host), d};
	size_t sizes[2] = {128, 64}, attr_idx[1] = {0}, fail_idx = 0;
	CUmemcpyAttributes attrs[1] = {{.srcAccessOrder = CU_MEMCPY_SRC_ACCESS_ORDER_STREAM}};
	PFN_cuMemcpyBatchAsync_v12080 b12 = (PFN_cuMemcpyBatchAsync_v12080)dlsym(driver, "cuMemcpyBatchAsync");
	CUresult r = b12(dsts, srcs, sizes, 2, attrs, attr_idx, 1, &fail_idx, NULL);
	ev(VT_REC_COPY, "cuMemcpyBatchAsync", d, 128, U(host), VT_COPY_HTOD, 0, r);
	ev(VT_REC_COPY, "cuMemcpyBatchAsync", U(host) + 4096, 64, d, VT_COPY_DTOH, 0, r);
	expect_ok("cuMemcpyBatchAsync (12.8)", r);
	r = cuMemcpyBatchAsync(dsts, srcs, sizes, 2, attrs, attr_idx, 1, NULL); /* 13.0 ABI */
	ev(VT_REC_COPY, "cuMemcpyBatchAsync_v2", d, 128, U(host), VT_COPY_HTOD, 0, r);
	ev(VT_REC_COPY, "cuMemcpyBatchAsync_v2", U(host) + 4096, 64, d, VT_COPY_DTOH, 0, r);
	expect_ok("cuMemcpyBatchAsync (13.0)", r);
	CUDA_MEMCPY3D_BATCH_OP op = {.src = {.type = CU_MEMCPY_OPERAND_TYPE_POINTER, .op.ptr = {.ptr = U(host)}},
				     .dst = {.type = CU_MEMCPY_OPERAND_TYPE_POINTER, .op.ptr = {.ptr = d}},
				     .extent = {64, 1, 1},
				     .srcAccessOrder = CU_MEMCPY_SRC_ACCESS_ORDER_STREAM};
	r = cuMemcpy3DBatchAsync(1, &op, 0, NULL);
	ev(VT_REC_COPY, "cuMemcpy3DBatchAsync_v2", d, 64, U(host), VT_COPY_HTOD, 0, r);
	expect_ok("cuMemcpy3DBatchAsync", r);
}

static void vmm(void)
{
	CUmemAllocationProp prop = {.type = CU_MEM_ALLOCATION_TYPE_PINNED,
				    .location = {.type = CU_MEM_LOCATION_TYPE_DEVICE, .id = 0}};
	size_t gran = 0;
	expect_ok("granularity", cuMemGetAllocationGranularity(&gran, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
	CUmemGenericAllocationHandle h = 0;
	CUresult r = cuMemCreate(&h, gran, &prop, 0);
	ev(VT_REC_ALLOC, "cuMemCreate", h, gran, 0, VT_ALLOC_VMM, 0, r);
	expect_ok("cuMemCreate", r);
	CUdeviceptr va = 0;
	r = cuMemAddressReserve(&va, gran, 0, 0, 0);
	ev(VT_REC_RESERVE, "cuMemAddressReserve", va, gran, 0, 0, 0, r);
	expect_ok("cuMemAddressReserve", r);
	r = cuMemMap(va, gran, 0, h, 0);
	ev(VT_REC_MAP, "cuMemMap", va, gran, h, 0, 0, r);
	expect_ok("cuMemMap", r);
	r = cuMemUnmap(va, gran);
	ev(VT_REC_UNMAP, "cuMemUnmap", va, gran, 0, 0, 0, r);
	expect_ok("cuMemUnmap", r);
	r = cuMemRelease(h);
	ev(VT_REC_FREE, "cuMemRelease", h, 0, 0, VT_ALLOC_VMM, 0, r);
	expect_ok("cuMemRelease", r);
	r = cuMemAddressFree(va, gran);
	ev(VT_REC_UNRESERVE, "cuMemAddressFree", va, gran, 0, 0, 0, r);
	expect_ok("cuMemAddressFree", r);
}

static void arrays(void)
{
	CUarray a2 = NULL, a3 = NULL;
	CUmipmappedArray mm = NULL;
	CUDA_ARRAY_DESCRIPTOR d2 = {.Width = 64, .Height = 4, .Format = CU_AD_FORMAT_FLOAT, .NumChannels = 1};
	CUresult r = cuArrayCreate(&a2, &d2);
	ev(VT_REC_ALLOC, "cuArrayCreate_v2", U(a2), 64 * 4 * 4, 0, VT_ALLOC_ARRAY, 0, r);
	expect_ok("cuArrayCreate", r);
	CUDA_ARRAY3D_DESCRIPTOR d3 = {.Width = 16, .Height = 4, .Depth = 2, .Format = CU_AD_FORMAT_UNSIGNED_INT8,
				      .NumChannels = 4};
	r = cuArray3DCreate(&a3, &d3);
	ev(VT_REC_ALLOC, "cuArray3DCreate_v2", U(a3), 16 * 4 * 2 * 4, 0, VT_ALLOC_ARRAY, 0, r);
	expect_ok("cuArray3DCreate", r);
	CUDA_ARRAY3D_DESCRIPTOR dm = {.Width = 32, .Height = 32, .Format = CU_AD_FORMAT_FLOAT, .NumChannels = 1};
	r = cuMipmappedArrayCreate(&mm, &dm, 3);
	ev(VT_REC_ALLOC, "cuMipmappedArrayCreate", U(mm), (32 * 32 + 16 * 16 + 8 * 8) * 4, 0, VT_ALLOC_ARRAY, 0, r);
	expect_ok("cuMipmappedArrayCreate", r);
	r = cuArrayDestroy(a2);
	ev(VT_REC_FREE, "cuArrayDestroy", U(a2), 0, 0, VT_ALLOC_ARRAY, 0, r);
	r |= cuArrayDestroy(a3);
	ev(VT_REC_FREE, "cuArrayDestroy", U(a3), 0, 0, VT_ALLOC_ARRAY, 0, r);
	expect_ok("cuArrayDestroy", r);
	r = cuMipmappedArrayDestroy(mm);
	ev(VT_REC_FREE, "cuMipmappedArrayDestroy", U(mm), 0, 0, VT_ALLOC_ARRAY, 0, r);
	expect_ok("cuMipmappedArrayDestroy", r);
}

/* What the simulated driver refuses is still an event, with its result. */
static void refused(void *driver)
{
	CUDA_MEM_ALLOC_NODE_PARAMS params = {.bytesize = 4096};
	CUgraphNode node;
	CUresult r = cuGraphAddMemAllocNode(&node, NULL, NULL, 0, &params);
	ev(VT_REC_ALLOC, "cuGraphAddMemAllocNode", 0, 4096, 0, VT_ALLOC_GRAPH, 0, r);
	printf("%-28s %d\n", "cuGraphAddMemAllocNode", (int)r);
	/* PFN_cuMemAlloc_v2000, which cudaTypedefs.h shows only to the driver */
	typedef CUresult (*old_alloc_fn)(unsigned int *dptr, unsigned int bytesize);
	old_alloc_fn old_alloc = (old_alloc_fn)dlsym(driver, "cuMemAlloc");
	unsigned int small = 0;
	r = old_alloc(&small, 4096);
	ev(VT_REC_ALLOC, "cuMemAlloc", r == CUDA_SUCCESS ? small : 0, 4096, 0, VT_ALLOC_DEVICE, 0, r);
	printf("%-28s %d\n", "cuMemAlloc (32-bit ABI)", (int)r);
}

static CUcontext use_device(int ordinal)
{
	CUdevice dev;
	CUcontext ctx = NULL;
	expect_ok("context", cuDeviceGet(&dev, ordinal) | cuDevicePrimaryCtxRetain(&ctx, dev) | cuCtxSetCurrent(ctx));
	return ctx;
}

int main(void)
{
	void *driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
	expect_ok("cuInit", cuInit(0));
	CUcontext ctx1 = use_device(1), ctx0 = use_device(0);
	CUdeviceptr d = 0, d2 = 0, m = 0, p = 0, peer = 0;
	size_t pitch = 0;
	CUresult r = cuMemAllocPitch(&d, &pitch, 1000, 10, 4);
	ev(VT_REC_ALLOC, "cuMemAllocPitch_v2", d, pitch * 10, pitch, VT_ALLOC_DEVICE, 0, r);
	expect_ok("cuMemAllocPitch", r);
	r = cuMemAllocManaged(&m, 8192, CU_MEM_ATTACH_GLOBAL);
	ev(VT_REC_ALLOC, "cuMemAllocManaged", m, 8192, 0, VT_ALLOC_MANAGED, 0, r);
	expect_ok("cuMemAllocManaged", r);
	CUmemoryPool pool = NULL;
	expect_ok("default pool", cuDeviceGetDefaultMemPool(&pool, 0));
	r = cuMemAllocFromPoolAsync(&p, 4096, pool, NULL);
	ev(VT_REC_ALLOC, "cuMemAllocFromPoolAsync", p, 4096, U(pool), VT_ALLOC_POOL, 0, r);
	expect_ok("cuMemAllocFromPoolAsync", r);
	r = cuMemAlloc(&d2, 4096);
	ev(VT_REC_ALLOC, "cuMemAlloc_v2", d2, 4096, 0, VT_ALLOC_DEVICE, 0, r);

	linear_copies(d, d2);
	shaped_copies(d, pitch);
	batches(driver, d);

	use_device(1);
	r = cuMemAlloc(&peer, 4096);
	ev(VT_REC_ALLOC, "cuMemAlloc_v2", peer, 4096, 0, VT_ALLOC_DEVICE, 1, r);
	use_device(0);
	r = cuMemcpyPeer(peer, ctx1, d, ctx0, 256);
	ev(VT_REC_COPY, "cuMemcpyPeer", peer, 256, d, VT_COPY_PEER, 0, r);
	expect_ok("cuMemcpyPeer", r);

	vmm();
	arrays();
	refused(driver);

	r = cuMemFreeAsync(p, NULL);
	ev(VT_REC_FREE, "cuMemFreeAsync", p, 0, 0, VT_ALLOC_ASYNC, 0, r);
	r |= cuMemFree(d);
	ev(VT_REC_FREE, "cuMemFree_v2", d, 0, 0, VT_ALLOC_DEVICE, 0, r);
	r |= cuMemFree(d2);
	ev(VT_REC_FREE, "cuMemFree_v2", d2, 0, 0, VT_ALLOC_DEVICE, 0, r);
	r |= cuMemFree(m);
	ev(VT_REC_FREE, "cuMemFree_v2", m, 0, 0, VT_ALLOC_DEVICE, 0, r);
	expect_ok("frees", r);
	r = cuMemPoolTrimTo(pool, 0);
	ev(VT_REC_POOL_TRIM, "cuMemPoolTrimTo", 0, 0, U(pool), 0, 0, r);
	expect_ok("cuMemPoolTrimTo", r);
	use_device(1);
	r = cuMemFree(peer);
	ev(VT_REC_FREE, "cuMemFree_v2", peer, 0, 0, VT_ALLOC_DEVICE, 1, r);
	expect_ok("free on device 1", r);
	printf("failures: %d\n", failures);
	return failures != 0;
}
