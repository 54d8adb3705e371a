/* Simulated driver: allocation, capacity, copies, VMM, pools, arrays.
 * Run with VT_SIM_DEVICES=2 VT_SIM_CAPACITY=64M (see CMakeLists.txt). */
#include "test_util.h"

#include <stdlib.h>
#include <string.h>

#define MiB (1024ull * 1024)
#define CAPACITY (64 * MiB)

static void fill(unsigned char *p, size_t n, unsigned seed)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (unsigned char)(i * 31 + seed);
}

static void test_address_reuse(void **state)
{
	(void)state;
	CUdeviceptr a, b, c, d;
	CU_OK(cuMemAlloc(&a, 1000));
	CU_OK(cuMemAlloc(&b, 1000));
	assert_int_equal(a % 256, 0);
	assert_int_equal(b % 256, 0);
	assert_true(b >= a + 1024 || a >= b + 1024); /* 1000 rounds up to 1024 */
	CU_OK(cuMemFree(a));
	CU_OK(cuMemAlloc(&c, 1000));
	assert_int_equal(c, a); /* first fit: the freed address comes back */
	CU_OK(cuMemFree(c));
	CU_OK(cuMemFree(b));
	CU_OK(cuMemAlloc(&d, 4096));
	assert_int_equal(d, a); /* coalesced with its neighbour */
	assert_int_equal(cuMemFree(d + 256), CUDA_ERROR_INVALID_VALUE); /* not a start */
	CU_OK(cuMemFree(d));
	assert_int_equal(cuMemFree(d), CUDA_ERROR_INVALID_VALUE); /* double free */
	assert_int_equal(cuMemAlloc(&d, 0), CUDA_ERROR_INVALID_VALUE);
}

static void test_addresses_are_not_host_addresses(void **state)
{
	(void)state;
	CUdeviceptr a;
	unsigned int type = 0;
	char *host = malloc(64);
	CU_OK(cuMemAlloc(&a, 64));
	CU_OK(cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, a));
	assert_int_equal(type, CU_MEMORYTYPE_DEVICE);
	assert_int_equal(cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, (CUdeviceptr)(uintptr_t)host),
			 CUDA_ERROR_INVALID_VALUE);
	/* a host "source" inside the device window is rejected, not read */
	assert_int_equal(cuMemcpyHtoD(a, (const void *)(uintptr_t)a, 64), CUDA_ERROR_INVALID_VALUE);
	free(host);
	CU_OK(cuMemFree(a));
}

static void test_capacity_and_oom(void **state)
{
	(void)state;
	size_t free_b, total;
	CUdeviceptr big, more, all;
	CU_OK(cuMemGetInfo(&free_b, &total));
	assert_int_equal(total, CAPACITY);
	assert_int_equal(free_b, CAPACITY);
	CU_OK(cuMemAlloc(&big, 48 * MiB));
	assert_int_equal(vtsim_live_bytes(0), 48 * MiB);
	assert_int_equal(vtsim_live_allocs(0), 1);
	assert_int_equal(cuMemAlloc(&more, 32 * MiB), CUDA_ERROR_OUT_OF_MEMORY);
	CU_OK(cuMemGetInfo(&free_b, &total));
	assert_int_equal(free_b, 16 * MiB);
	CU_OK(cuMemFree(big));
	CU_OK(cuMemAlloc(&all, CAPACITY)); /* exactly full is fine */
	assert_int_equal(cuMemAlloc(&more, 1), CUDA_ERROR_OUT_OF_MEMORY);
	CU_OK(cuMemFree(all));
	assert_int_equal(vtsim_live_bytes(0), 0);
	assert_int_equal(vtsim_live_allocs(0), 0);
	size_t dev_total;
	CU_OK(cuDeviceTotalMem(&dev_total, 0));
	assert_int_equal(dev_total, CAPACITY);
}

static void test_copies_move_bytes(void **state)
{
	(void)state;
	enum { N = 100000 };
	unsigned char *src = malloc(N), *dst = malloc(N);
	CUdeviceptr a, b;
	CUstream s;
	fill(src, N, 7);
	CU_OK(cuMemAlloc(&a, N));
	CU_OK(cuMemAlloc(&b, N));
	CU_OK(cuMemcpyHtoD(a, src, N));
	CU_OK(cuMemcpyDtoD(b, a, N));
	memset(dst, 0, N);
	CU_OK(cuMemcpyDtoH(dst, b, N));
	assert_memory_equal(src, dst, N);

	/* unified copies: direction from the addresses */
	fill(src, N, 99);
	CU_OK(cuMemcpy(a, (CUdeviceptr)(uintptr_t)src, N));
	CU_OK(cuMemcpy(b, a, N));
	memset(dst, 0, N);
	CU_OK(cuMemcpy((CUdeviceptr)(uintptr_t)dst, b, N));
	assert_memory_equal(src, dst, N);

	/* async copies complete on return */
	CU_OK(cuStreamCreate(&s, 0));
	fill(src, N, 3);
	CU_OK(cuMemcpyHtoDAsync(a + 10, src, 100, s));
	CU_OK(cuMemcpyDtoHAsync(dst, a + 10, 100, s));
	assert_memory_equal(src, dst, 100);
	CU_OK(cuMemcpyAsync(b, a, N, CU_STREAM_PER_THREAD));
	CU_OK(cuStreamSynchronize(s));
	CU_OK(cuStreamDestroy(s));

	/* validation: the device side must lie in ONE live allocation */
	assert_int_equal(cuMemcpyHtoD(a, src, N + 1), CUDA_ERROR_INVALID_VALUE);
	assert_int_equal(cuMemcpyHtoD(a + N - 10, src, 11), CUDA_ERROR_INVALID_VALUE);
	CU_OK(cuMemcpyHtoD(a + N - 10, src, 10));
	assert_int_equal(cuMemcpyDtoH(dst, a - 256, 16), CUDA_ERROR_INVALID_VALUE);
	assert_int_equal(cuMemcpyHtoD(a, NULL, 16), CUDA_ERROR_INVALID_VALUE);
	CU_OK(cuMemFree(b));
	assert_int_equal(cuMemcpyDtoD(b, a, 16), CUDA_ERROR_INVALID_VALUE); /* freed */
	assert_int_equal(cuMemcpyDtoD(a, b, 16), CUDA_ERROR_INVALID_VALUE);
	CU_OK(cuMemFree(a));
	free(src);
	free(dst);
}

static void test_copy_2d_3d(void **state)
{
	(void)state;
	enum { W = 100, H = 7, D = 3 };
	unsigned char src[W * H * D], back[W * H * D];
	CUdeviceptr p;
	size_t pitch;
	fill(src, sizeof src, 11);
	CU_OK(cuMemAllocPitch(&p, &pitch, W, H * D, 4));
	assert_true(pitch >= W && pitch % 512 == 0);
	CUDA_MEMCPY2D c = {.srcMemoryType = CU_MEMORYTYPE_HOST, .srcHost = src, .srcPitch = W,
			   .dstMemoryType = CU_MEMORYTYPE_DEVICE, .dstDevice = p, .dstPitch = pitch,
			   .WidthInBytes = W, .Height = H};
	CU_OK(cuMemcpy2D(&c));
	CUDA_MEMCPY2D r = {.srcMemoryType = CU_MEMORYTYPE_UNIFIED, .srcDevice = p, .srcPitch = pitch,
			   .dstMemoryType = CU_MEMORYTYPE_HOST, .dstHost = back, .dstPitch = W,
			   .WidthInBytes = W, .Height = H};
	memset(back, 0, sizeof back);
	CU_OK(cuMemcpy2D(&r));
	assert_memory_equal(src, back, W * H);
	c.Height = H * D + 1; /* one row past the allocation */
	assert_int_equal(cuMemcpy2D(&c), CUDA_ERROR_INVALID_VALUE);

	CUDA_MEMCPY3D c3 = {.srcMemoryType = CU_MEMORYTYPE_HOST, .srcHost = src, .srcPitch = W, .srcHeight = H,
			    .dstMemoryType = CU_MEMORYTYPE_DEVICE, .dstDevice = p, .dstPitch = pitch, .dstHeight = H,
			    .WidthInBytes = W, .Height = H, .Depth = D};
	CU_OK(cuMemcpy3D(&c3));
	CUDA_MEMCPY3D r3 = {.srcMemoryType = CU_MEMORYTYPE_DEVICE, .srcDevice = p, .srcPitch = pitch, .srcHeight = H,
			    .dstMemoryType = CU_MEMORYTYPE_HOST, .dstHost = back, .dstPitch = W, .dstHeight = H,
			    .WidthInBytes = W, .Height = H, .Depth = D};
	memset(back, 0, sizeof back);
	CU_OK(cuMemcpy3DAsync(&r3, NULL));
	assert_memory_equal(src, back, sizeof src);
	c3.dstArray = NULL;
	c3.dstMemoryType = CU_MEMORYTYPE_ARRAY;
	assert_int_equal(cuMemcpy3D(&c3), CUDA_ERROR_INVALID_HANDLE);

	/* host -> 3D array -> pitched device -> host */
	CUarray arr;
	CUDA_ARRAY3D_DESCRIPTOR ad = {.Width = W, .Height = H, .Depth = D, .Format = CU_AD_FORMAT_UNSIGNED_INT8,
				      .NumChannels = 1};
	CU_OK(cuArray3DCreate(&arr, &ad));
	CUDA_MEMCPY3D to_arr = {.srcMemoryType = CU_MEMORYTYPE_HOST, .srcHost = src, .srcPitch = W, .srcHeight = H,
				.dstMemoryType = CU_MEMORYTYPE_ARRAY, .dstArray = arr,
				.WidthInBytes = W, .Height = H, .Depth = D};
	CU_OK(cuMemcpy3D(&to_arr));
	CU_OK(cuMemsetD8(p, 0, pitch * H * D));
	CUDA_MEMCPY3D from_arr = {.srcMemoryType = CU_MEMORYTYPE_ARRAY, .srcArray = arr,
				  .dstMemoryType = CU_MEMORYTYPE_DEVICE, .dstDevice = p, .dstPitch = pitch, .dstHeight = H,
				  .WidthInBytes = W, .Height = H, .Depth = D};
	CU_OK(cuMemcpy3D(&from_arr));
	memset(back, 0, sizeof back);
	CU_OK(cuMemcpy3D(&r3));
	assert_memory_equal(src, back, sizeof src);
	from_arr.srcXInBytes = 1; /* one byte past each row */
	assert_int_equal(cuMemcpy3D(&from_arr), CUDA_ERROR_INVALID_VALUE);
	CU_OK(cuArrayDestroy(arr));
	assert_int_equal(cuMemcpy3D(&to_arr), CUDA_ERROR_INVALID_HANDLE);
	CU_OK(cuMemFree(p));
}

static void test_batch_both_abis(void **state)
{
	(void)state;
	unsigned char h1[64], h2[64], out[64];
	CUdeviceptr d1, d2;
	fill(h1, 64, 1);
	fill(h2, 64, 2);
	CU_OK(cuMemAlloc(&d1, 64));
	CU_OK(cuMemAlloc(&d2, 64));
	CUdeviceptr dsts[2] = {d1, d2}, srcs[2] = {(CUdeviceptr)(uintptr_t)h1, (CUdeviceptr)(uintptr_t)h2};
	size_t sizes[2] = {64, 64}, idx[1] = {0}, fail = 0;
	CUmemcpyAttributes attr = {.srcAccessOrder = CU_MEMCPY_SRC_ACCESS_ORDER_STREAM};
	/* 13.0 ABI: what cuda.h names cuMemcpyBatchAsync */
	CU_OK(cuMemcpyBatchAsync(dsts, srcs, sizes, 2, &attr, idx, 1, NULL));
	CU_OK(cuMemcpyDtoH(out, d2, 64));
	assert_memory_equal(out, h2, 64);

	/* 12.8 ABI, resolved as a 12.8 runtime would, reports the failing index */
	typedef CUresult (*batch128)(CUdeviceptr *, CUdeviceptr *, size_t *, size_t, CUmemcpyAttributes *, size_t *,
				     size_t, size_t *, CUstream);
	void *fn;
	CU_OK(cuGetProcAddress("cuMemcpyBatchAsync", &fn, 12080, CU_GET_PROC_ADDRESS_DEFAULT, NULL));
	CU_OK(((batch128)fn)(dsts, srcs, sizes, 2, &attr, idx, 1, &fail, NULL));
	assert_int_equal(fail, SIZE_MAX);
	sizes[1] = 65;
	assert_int_equal(((batch128)fn)(dsts, srcs, sizes, 2, &attr, idx, 1, &fail, NULL), CUDA_ERROR_INVALID_VALUE);
	assert_int_equal(fail, 1);
	assert_int_equal(cuMemcpyBatchAsync(dsts, srcs, sizes, 2, NULL, idx, 1, NULL), CUDA_ERROR_INVALID_VALUE);

	/* 3D batch, pointer operands */
	CUDA_MEMCPY3D_BATCH_OP op = {.src = {.type = CU_MEMCPY_OPERAND_TYPE_POINTER, .op.ptr = {.ptr = d1}},
				     .dst = {.type = CU_MEMCPY_OPERAND_TYPE_POINTER, .op.ptr = {.ptr = d2}},
				     .extent = {8, 8, 1}};
	CU_OK(cuMemcpy3DBatchAsync(1, &op, 0, NULL));
	CU_OK(cuMemcpyDtoH(out, d2, 64));
	assert_memory_equal(out, h1, 64);
	CU_OK(cuMemFree(d1));
	CU_OK(cuMemFree(d2));
}

static void test_peer_copy_between_devices(void **state)
{
	CUcontext ctx0 = *state, ctx1;
	CUdeviceptr a, b;
	unsigned char h[256], out[256];
	int ordinal = -1;
	fill(h, sizeof h, 5);
	CU_OK(cuMemAlloc(&a, 256));
	CU_OK(cuDevicePrimaryCtxRetain(&ctx1, 1));
	CU_OK(cuCtxPushCurrent(ctx1));
	CU_OK(cuMemAlloc(&b, 256));
	CU_OK(cuCtxPopCurrent(NULL));
	CU_OK(cuPointerGetAttribute(&ordinal, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, b));
	assert_int_equal(ordinal, 1);
	assert_int_equal(vtsim_live_bytes(1), 256);
	CU_OK(cuMemcpyHtoD(a, h, sizeof h));
	CU_OK(cuMemcpyPeer(b, ctx1, a, ctx0, sizeof h));
	CU_OK(cuMemcpyDtoH(out, b, sizeof out));
	assert_memory_equal(h, out, sizeof h);
	assert_int_equal(cuMemcpyPeer(b, ctx0, a, ctx0, 16), CUDA_ERROR_INVALID_VALUE); /* wrong context */
	CU_OK(cuMemFree(b)); /* any context may free a UVA pointer */
	CU_OK(cuMemFree(a));
	CU_OK(cuDevicePrimaryCtxRelease(1));
}

static void test_vmm_charges_at_create(void **state)
{
	(void)state;
	CUmemAllocationProp prop = {.type = CU_MEM_ALLOCATION_TYPE_PINNED,
				    .location = {.type = CU_MEM_LOCATION_TYPE_DEVICE, .id = 0}};
	size_t gran = 0, free_b, total;
	CUmemGenericAllocationHandle h;
	CUdeviceptr va;
	unsigned char src[4096], out[4096];
	CU_OK(cuMemGetAllocationGranularity(&gran, &prop, CU_MEM_ALLOC_GRANULARITY_RECOMMENDED));
	assert_int_equal(gran, 2 * MiB);
	assert_int_equal(cuMemCreate(&h, 3 * MiB, &prop, 0), CUDA_ERROR_INVALID_VALUE); /* not granular */
	CU_OK(cuMemAddressReserve(&va, 8 * MiB, 0, 0, 0));
	assert_int_equal(vtsim_live_bytes(0), 0); /* VA only */
	CU_OK(cuMemCreate(&h, 4 * MiB, &prop, 0));
	assert_int_equal(vtsim_live_bytes(0), 4 * MiB);
	CU_OK(cuMemGetInfo(&free_b, &total));
	assert_int_equal(free_b, CAPACITY - 4 * MiB);
	assert_int_equal(cuMemcpyHtoD(va, src, 16), CUDA_ERROR_INVALID_VALUE); /* not mapped yet */
	CU_OK(cuMemMap(va + 2 * MiB, 4 * MiB, 0, h, 0));
	assert_int_equal(vtsim_live_bytes(0), 4 * MiB); /* mapping charges nothing */
	CUmemAccessDesc acc = {.location = prop.location, .flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE};
	CU_OK(cuMemSetAccess(va + 2 * MiB, 4 * MiB, &acc, 1));
	fill(src, sizeof src, 9);
	CU_OK(cuMemcpyHtoD(va + 3 * MiB, src, sizeof src));
	CU_OK(cuMemcpyDtoH(out, va + 3 * MiB, sizeof out));
	assert_memory_equal(src, out, sizeof src);
	assert_int_equal(cuMemcpyHtoD(va + 6 * MiB - 8, src, 16), CUDA_ERROR_INVALID_VALUE); /* past the map */
	CUdeviceptr start = 0;
	CU_OK(cuPointerGetAttribute(&start, CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, va + 3 * MiB));
	assert_int_equal(start, va + 2 * MiB);
	assert_int_equal(cuMemAddressFree(va, 8 * MiB), CUDA_ERROR_INVALID_VALUE); /* still mapped */
	CU_OK(cuMemRelease(h));
	assert_int_equal(vtsim_live_bytes(0), 4 * MiB); /* the mapping keeps it alive */
	assert_int_equal(cuMemUnmap(va + 2 * MiB, 2 * MiB), CUDA_ERROR_INVALID_VALUE); /* partial */
	CU_OK(cuMemUnmap(va + 2 * MiB, 4 * MiB));
	assert_int_equal(vtsim_live_bytes(0), 0); /* freed at the last unmap */
	CU_OK(cuMemAddressFree(va, 8 * MiB));
	assert_int_equal(cuMemCreate(&h, CAPACITY + 2 * MiB, &prop, 0), CUDA_ERROR_OUT_OF_MEMORY);
	CU_OK(cuMemCreate(&h, 2 * MiB, &prop, 0));
	CU_OK(cuMemRelease(h)); /* never mapped: freed at once */
	assert_int_equal(vtsim_live_bytes(0), 0);
	assert_int_equal(cuMemRelease(h), CUDA_ERROR_INVALID_VALUE);
}

static void test_pools_and_async(void **state)
{
	(void)state;
	CUmemoryPool def, got = NULL, pool;
	CUdeviceptr a, b;
	CU_OK(cuDeviceGetDefaultMemPool(&def, 0));
	CU_OK(cuMemAllocAsync(&a, 1 << 20, NULL));
	CU_OK(cuPointerGetAttribute(&got, CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE, a));
	assert_ptr_equal(got, def);
	CUmemPoolProps props = {.allocType = CU_MEM_ALLOCATION_TYPE_PINNED,
				.location = {.type = CU_MEM_LOCATION_TYPE_DEVICE, .id = 1}};
	CU_OK(cuMemPoolCreate(&pool, &props));
	CU_OK(cuMemAllocFromPoolAsync(&b, 4096, pool, CU_STREAM_PER_THREAD));
	int ordinal = -1;
	CU_OK(cuPointerGetAttribute(&ordinal, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, b));
	assert_int_equal(ordinal, 1); /* the pool's device, not the context's */
	assert_int_equal(vtsim_live_bytes(1), 4096);
	CU_OK(cuMemFreeAsync(b, NULL));
	CU_OK(cuMemFreeAsync(a, CU_STREAM_LEGACY));
	assert_int_equal(vtsim_live_bytes(0) + vtsim_live_bytes(1), 0);
	CU_OK(cuMemPoolTrimTo(pool, 0));
	CU_OK(cuMemPoolDestroy(pool));
	assert_int_equal(cuMemPoolTrimTo(pool, 0), CUDA_ERROR_INVALID_VALUE);
	assert_int_equal(cuMemPoolDestroy(def), CUDA_ERROR_INVALID_VALUE);
	CU_OK(cuMemAllocManaged(&a, 1000, CU_MEM_ATTACH_GLOBAL));
	int managed = 0;
	CU_OK(cuPointerGetAttribute(&managed, CU_POINTER_ATTRIBUTE_IS_MANAGED, a));
	assert_int_equal(managed, 1);
	CU_OK(cuMemFree(a));
}

static void test_arrays_charge_capacity(void **state)
{
	(void)state;
	CUarray arr, arr3;
	CUmipmappedArray mip;
	CUDA_ARRAY_DESCRIPTOR d = {.Width = 100, .Height = 10, .Format = CU_AD_FORMAT_FLOAT, .NumChannels = 4};
	CU_OK(cuArrayCreate(&arr, &d));
	assert_int_equal(vtsim_live_bytes(0), 100 * 10 * 16);
	CUDA_ARRAY3D_DESCRIPTOR d3 = {.Width = 64, .Height = 32, .Depth = 2, .Format = CU_AD_FORMAT_UNSIGNED_INT8,
				      .NumChannels = 1};
	CU_OK(cuArray3DCreate(&arr3, &d3));
	assert_int_equal(vtsim_live_bytes(0), 16000 + 64 * 32 * 2);
	CU_OK(cuMipmappedArrayCreate(&mip, &d3, 2)); /* 64x32x2 + 32x16x1 */
	assert_int_equal(vtsim_live_bytes(0), 16000 + 4096 + 4096 + 512);
	assert_int_equal(vtsim_live_allocs(0), 3);
	CU_OK(cuArrayDestroy(arr));
	CU_OK(cuArrayDestroy(arr3));
	CU_OK(cuMipmappedArrayDestroy(mip));
	assert_int_equal(cuArrayDestroy(arr), CUDA_ERROR_INVALID_HANDLE);
	assert_int_equal(vtsim_live_bytes(0), 0);
	d.Width = 1u << 30;
	d.Height = 1u << 10;
	assert_int_equal(cuArrayCreate(&arr, &d), CUDA_ERROR_OUT_OF_MEMORY);
}

static void test_pointer_attributes(void **state)
{
	CUcontext ctx0 = *state, owner = NULL;
	CUdeviceptr a, start = 0, base = 0;
	size_t size = 0, rsize = 0;
	CU_OK(cuMemAlloc(&a, 5000));
	CU_OK(cuPointerGetAttribute(&start, CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, a + 4999));
	CU_OK(cuPointerGetAttribute(&size, CU_POINTER_ATTRIBUTE_RANGE_SIZE, a + 100));
	CU_OK(cuPointerGetAttribute(&owner, CU_POINTER_ATTRIBUTE_CONTEXT, a));
	assert_int_equal(start, a);
	assert_int_equal(size, 5000);
	assert_ptr_equal(owner, ctx0);
	CU_OK(cuMemGetAddressRange(&base, &rsize, a + 7));
	assert_int_equal(base, a);
	assert_int_equal(rsize, 5000);
	assert_int_equal(cuPointerGetAttribute(&start, CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, a + 5000),
			 CUDA_ERROR_INVALID_VALUE);
	void *hp;
	assert_int_equal(cuPointerGetAttribute(&hp, CU_POINTER_ATTRIBUTE_HOST_POINTER, a), CUDA_ERROR_INVALID_VALUE);
	CU_OK(cuMemFree(a));
}

static void test_old_abi_not_supported(void **state)
{
	(void)state;
	typedef CUresult (*alloc32)(unsigned int *, unsigned int);
	void *fn;
	unsigned int p;
	CU_OK(cuGetProcAddress("cuMemAlloc", &fn, 2000, CU_GET_PROC_ADDRESS_DEFAULT, NULL));
	assert_int_equal(((alloc32)fn)(&p, 16), CUDA_ERROR_NOT_SUPPORTED);
	assert_int_equal(vtsim_live_allocs(0), 0);
}

static void test_memset_fills_and_validates(void **state)
{
	(void)state;
	CUdeviceptr p;
	unsigned char out[1024], want[1024];
	CU_OK(cuMemAlloc(&p, 1000));
	CU_OK(cuMemsetD8(p, 0xab, 1000));
	CU_OK(cuMemcpyDtoH(out, p, 1000));
	memset(want, 0xab, 1000);
	assert_memory_equal(out, want, 1000);
	CU_OK(cuMemsetD32(p + 4, 0x01020304u, 2));
	CU_OK(cuMemcpyDtoH(out, p, 16));
	unsigned int words[2];
	memcpy(words, out + 4, 8);
	assert_int_equal(words[0], 0x01020304u);
	assert_int_equal(words[1], 0x01020304u);
	assert_int_equal(out[0], 0xab);
	assert_int_equal(out[12], 0xab);
	assert_int_equal(cuMemsetD32(p + 2, 0, 1), CUDA_ERROR_INVALID_VALUE); /* misaligned */
	assert_int_equal(cuMemsetD8(p, 0, 1001), CUDA_ERROR_INVALID_VALUE);  /* past the end */
	CU_OK(cuMemsetD2D16Async(p, 100, 0x7777, 10, 9, NULL));               /* 9 rows of 20 bytes */
	assert_int_equal(cuMemsetD2D16(p, 100, 0, 10, 11), CUDA_ERROR_INVALID_VALUE); /* row 10 ends past */
	CU_OK(cuMemcpyDtoH(out, p, 1000));
	assert_int_equal(out[800], 0x77);
	assert_int_equal(out[819], 0x77);
	assert_int_equal(out[820], 0xab);
	CU_OK(cuMemFree(p));
}

static void test_pinned_host_memory(void **state)
{
	(void)state;
	void *h;
	unsigned int type = 0;
	CUdeviceptr d;
	CU_OK(cuMemAllocHost(&h, 1 << 20));
	assert_int_equal(vtsim_live_bytes(0), 0); /* host memory is not device memory */
	CU_OK(cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, (CUdeviceptr)(uintptr_t)h + 10));
	assert_int_equal(type, CU_MEMORYTYPE_HOST);
	fill(h, 4096, 4);
	CU_OK(cuMemAlloc(&d, 4096));
	CU_OK(cuMemcpy(d, (CUdeviceptr)(uintptr_t)h, 4096));
	unsigned char out[4096];
	CU_OK(cuMemcpyDtoH(out, d, 4096));
	assert_memory_equal(out, h, 4096);
	CU_OK(cuMemFree(d));
	CU_OK(cuMemFreeHost(h));
	assert_int_equal(cuMemFreeHost(h), CUDA_ERROR_INVALID_VALUE);
	assert_int_equal(cuMemHostAlloc(&h, 16, 0x80), CUDA_ERROR_INVALID_VALUE);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_address_reuse, setup_fresh, teardown_reset),
		cmocka_unit_test_setup_teardown(test_addresses_are_not_host_addresses, setup_fresh, teardown_reset),
		cmocka_unit_test_setup_teardown(test_capacity_and_oom, setup_fresh, teardown_reset),
		cmocka_unit_test_setup_teardown(test_copies_move_bytes, setup_fresh, teardown_reset),
		cmocka_unit_test_setup_teardown(test_copy_2d_3d, setup_fresh, teardown_reset),
		cmocka_unit_test_setup_teardown(test_batch_both_abis, setup_fresh, teardown_reset),
		cmocka_unit_test_setup_teardown(test_peer_copy_between_devices, setup_fresh, teardown_reset),
		cmocka_unit_test_setup_teardown(test_vmm_charges_at_create, setup_fresh, teardown_reset),
		cmocka_unit_test_setup_teardown(test_pools_and_async, setup_fresh, teardown_reset),
		cmocka_unit_test_setup_teardown(test_arrays_charge_capacity, setup_fresh, teardown_reset),
		cmocka_unit_test_setup_teardown(test_pointer_attributes, setup_fresh, teardown_reset),
		cmocka_unit_test_setup_teardown(test_old_abi_not_supported, setup_fresh, teardown_reset),
		cmocka_unit_test_setup_teardown(test_memset_fills_and_validates, setup_fresh, teardown_reset),
		cmocka_unit_test_setup_teardown(test_pinned_host_memory, setup_fresh, teardown_reset),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
