/* Test-only API of the simulated CUDA driver (libcuda.so.1 in
 * ${VT_SIMDRIVER_DIR}). Link with -lcuda, or dlsym these names from the
 * handle of libcuda.so.1. None of them exists in a real driver.
 *
 * Environment (read at the first cuInit and after vtsim_reset()):
 *   VT_SIM_CAPACITY        bytes per device, K/M/G/T suffix (default 16G)
 *   VT_SIM_DEVICES         number of devices, 1..8 (default 1)
 *   VT_SIM_DRIVER_VERSION  what cuDriverGetVersion reports (default 13000);
 *                          entry points introduced after it are hidden
 *   VT_SIM_MISSING         comma list of base names or exported symbols that
 *                          dlsym and cuGetProcAddress do not find (evaluated
 *                          at every lookup), e.g.
 *                          "cuMemAllocAsync,cuMemcpyBatchAsync_v2"
 *   VT_SIM_TRACE=1         print every cuGetProcAddress / cuGetExportTable
 *                          request on stderr */
#ifndef VTSIM_H
#define VTSIM_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* One exported entry point: one row of the driver's resolution table. */
typedef struct vtsim_variant {
	const char *base;   /* name given to cuGetProcAddress: "cuMemAlloc" */
	int version;        /* CUDA version that introduced this ABI: 3020 */
	int per_thread;     /* 1: the _ptds/_ptsz (per-thread stream) variant */
	const char *symbol; /* exported symbol: "cuMemAlloc_v2" */
	void *fn;           /* its address: what dlsym and cuGetProcAddress return */
	int hidden;         /* hidden right now by VT_SIM_MISSING/VT_SIM_DRIVER_VERSION */
} vtsim_variant;

/* Number of rows; rows are 0..count-1 in a fixed order. */
int vtsim_variant_count(void);
/* Fill *out with row i; 0 on success, -1 if i is out of range. */
int vtsim_variant_at(int i, vtsim_variant *out);
/* Row index of an exported symbol ("cuMemAlloc_v2"), or -1. */
int vtsim_variant_index(const char *symbol);

/* Bytes charged against device dev's capacity (allocations rounded up to
 * 256 bytes, VMM physical handles, arrays); 0 for a bad ordinal. */
size_t vtsim_live_bytes(int dev);
/* Number of live objects charged to dev (allocations, handles, arrays). */
size_t vtsim_live_allocs(int dev);
/* Calls of cuMemGetInfo/_v2 so far, by the job or by a shim in front of
 * the driver (never reset). */
unsigned long vtsim_meminfo_calls(void);
/* Free everything, forget all contexts, streams and pools, and return to
 * the state before cuInit: the next cuInit re-reads the environment. Only
 * the calling thread's context stack is cleared. */
void vtsim_reset(void);

#ifdef __cplusplus
}
#endif
#endif
