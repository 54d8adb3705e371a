/* vt-client-runtime: allocations through a CUDA-runtime-shaped library
 * (fake_cudart.c). The driver events they cause must carry the runtime call
 * in rt_api; a driver call made directly must not. Truth "ev" lines end with
 * the expected runtime tag (or "-"). */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <unistd.h>

#include "client.h"
#include "vramtrace/format.h"

int cudaMalloc(void **p, size_t n);
int cudaFree(void *p);
int cudaMemcpy(void *d, const void *s, size_t n, int kind);
int cudaMallocAsync(void **p, size_t n, void *stream);
int cudaFreeAsync(void *p, void *stream);

#define U(p) ((unsigned long long)(uintptr_t)(p))

static void ev(unsigned type, const char *api, unsigned long long addr, unsigned long long bytes,
	       unsigned long long aux, unsigned kind, int r, const char *rt)
{
	vt_truth("ev %d %u %s %llu %llu %llu %u 0 %d %s\n", (int)getpid(), type, api, addr, bytes, aux, kind, r, rt);
}

int main(void)
{
	static char host[4096];
	void *d = NULL, *a = NULL;
	int r = cudaMalloc(&d, 4096);
	ev(VT_REC_ALLOC, "cuMemAlloc_v2", U(d), 4096, 0, VT_ALLOC_DEVICE, r, "cudaMalloc");
	int c = cudaMemcpy(d, host, 1024, 1 /* cudaMemcpyHostToDevice */);
	ev(VT_REC_COPY, "cuMemcpy", U(d), 1024, U(host), VT_COPY_HTOD, c, "cudaMemcpy");
	int ra = cudaMallocAsync(&a, 2048, NULL);
	ev(VT_REC_ALLOC, "cuMemAllocAsync", U(a), 2048, 0, VT_ALLOC_ASYNC, ra, "cudaMallocAsync");
	int fa = cudaFreeAsync(a, NULL);
	ev(VT_REC_FREE, "cuMemFreeAsync", U(a), 0, 0, VT_ALLOC_ASYNC, fa, "cudaFreeAsync");
	int f = cudaFree(d);
	ev(VT_REC_FREE, "cuMemFree_v2", U(d), 0, 0, VT_ALLOC_DEVICE, f, "cudaFree");
	printf("runtime calls: %d %d %d %d %d\n", r, c, ra, fa, f);
	return r || c || ra || fa || f;
}
