/* Test-only statistics and reset of the simulated driver (vtsim.h). */
#include "sim_internal.h"
#include "vtsim.h"

#include <stdlib.h>
#include <sys/mman.h>

#define VTSIM_EXPORT __attribute__((visibility("default")))

VTSIM_EXPORT size_t vtsim_live_bytes(int dev)
{
	pthread_mutex_lock(&sim_lock);
	size_t v = dev >= 0 && dev < sim.ndev && sim.initialized ? sim.dev[dev].charged : 0;
	pthread_mutex_unlock(&sim_lock);
	return v;
}

VTSIM_EXPORT unsigned long vtsim_meminfo_calls(void)
{
	return __atomic_load_n(&sim_meminfo_calls, __ATOMIC_RELAXED);
}

VTSIM_EXPORT size_t vtsim_live_allocs(int dev)
{
	pthread_mutex_lock(&sim_lock);
	size_t v = dev >= 0 && dev < sim.ndev && sim.initialized ? sim.dev[dev].live_objects : 0;
	pthread_mutex_unlock(&sim_lock);
	return v;
}

#define FREE_LIST(type, head)                                                                          \
	do {                                                                                           \
		for (type *p_ = (head), *n_; p_; p_ = n_) {                                            \
			n_ = p_->next_all;                                                             \
			free(p_);                                                                      \
		}                                                                                      \
		(head) = NULL;                                                                         \
	} while (0)

VTSIM_EXPORT void vtsim_reset(void)
{
	pthread_mutex_lock(&sim_lock);
	for (struct sim_handle *h = sim.handles; h; h = h->next_all)
		munmap(h->backing, h->size);
	FREE_LIST(struct sim_handle, sim.handles);
	FREE_LIST(struct CUctx_st, sim.ctxs);
	FREE_LIST(struct CUstream_st, sim.streams);
	FREE_LIST(struct CUevent_st, sim.events);
	sim_host_free_all();
	sim.next_stream_id = 0;
	FREE_LIST(struct CUmemPoolHandle_st, sim.pools);
	sim_array_free_all();
	FREE_LIST(struct CUmipmappedArray_st, sim.mipmaps);
	sim_space_teardown();
	for (int i = 0; i < VTSIM_MAX_DEVICES; i++)
		sim.dev[i].primary.retains = 0;
	sim.ndev = 0;
	__atomic_store_n(&sim.initialized, 0, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&sim_lock);
	sim_reset_thread();
}
