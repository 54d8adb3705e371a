/* Pinned host memory: page-aligned host mappings that copies treat as host
 * memory and cuPointerGetAttribute reports as CU_MEMORYTYPE_HOST. Never
 * charged against a device's capacity. */
#include "sim_internal.h"

#include <stdlib.h>
#include <sys/mman.h>

const struct sim_host *sim_host_find(const void *p)
{
	for (const struct sim_host *h = sim.hosts; h; h = h->next_all)
		if ((const char *)p >= (const char *)h->ptr && (size_t)((const char *)p - (const char *)h->ptr) < h->size)
			return h;
	return NULL;
}

void sim_host_free_all(void)
{
	for (struct sim_host *h = sim.hosts, *next; h; h = next) {
		next = h->next_all;
		munmap(h->ptr, h->size);
		free(h);
	}
	sim.hosts = NULL;
}

CUresult sim_cuMemHostAlloc(void **pp, size_t bytesize, unsigned int Flags)
{
	struct CUctx_st *ctx;
	SIM_TRY(sim_need_ctx(&ctx));
	if (!pp || !bytesize ||
	    (Flags & ~(unsigned)(CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP | CU_MEMHOSTALLOC_WRITECOMBINED)))
		return CUDA_ERROR_INVALID_VALUE;
	struct sim_host *h = calloc(1, sizeof *h);
	void *p = mmap(NULL, bytesize, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (!h || p == MAP_FAILED) {
		free(h);
		if (p != MAP_FAILED)
			munmap(p, bytesize);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	*h = (struct sim_host){.ptr = p, .size = bytesize, .ctx = ctx};
	pthread_mutex_lock(&sim_lock);
	h->next_all = sim.hosts;
	sim.hosts = h;
	pthread_mutex_unlock(&sim_lock);
	*pp = p;
	return CUDA_SUCCESS;
}

CUresult sim_cuMemAllocHost_v2(void **pp, size_t bytesize) { return sim_cuMemHostAlloc(pp, bytesize, 0); }

CUresult sim_cuMemFreeHost(void *p)
{
	SIM_TRY(sim_need_init());
	CUresult r = CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&sim_lock);
	for (struct sim_host **link = &sim.hosts; *link; link = &(*link)->next_all) {
		struct sim_host *h = *link;
		if (h->ptr == p) {
			*link = h->next_all;
			munmap(h->ptr, h->size);
			free(h);
			r = CUDA_SUCCESS;
			break;
		}
	}
	pthread_mutex_unlock(&sim_lock);
	return r;
}
