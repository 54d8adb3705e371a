/* Test clients of the simulated driver, one per lookup path (exported
 * symbols, dlopen+dlsym like TensorFlow, cuGetProcAddress_v2 like the CUDA 13
 * runtime). The workload is shared; each path only fills the table.
 *
 * stdout is the job's visible behaviour (must not change under the shim);
 * the ground truth for the trace goes to $VT_TEST_TRUTH, one line per call:
 *   alloc PID API ADDR BYTES DEV RESULT | free PID API ADDR DEV | htod PID API DST BYTES DEV */
#ifndef VT_TEST_CLIENT_H
#define VT_TEST_CLIENT_H

#include <cuda.h>
#include <cudaTypedefs.h>

struct cu_api {
	const char *path;
	PFN_cuInit_v2000 init;
	PFN_cuDeviceGet_v2000 device_get;
	PFN_cuDevicePrimaryCtxRetain_v7000 ctx_retain;
	PFN_cuCtxSetCurrent_v4000 ctx_set;
	PFN_cuMemAlloc_v3020 alloc;
	PFN_cuMemFree_v3020 free;
	PFN_cuMemcpyHtoD_v3020 htod;
	PFN_cuMemcpyDtoH_v3020 dtoh;
	PFN_cuMemAllocAsync_v11020 alloc_async;
	PFN_cuMemFreeAsync_v11020 free_async;
	PFN_cuMemcpyHtoDAsync_v3020 htod_async;
	/* the exported variant each pointer should be recorded as */
	const char *alloc_name, *free_name, *htod_name, *alloc_async_name, *free_async_name, *htod_async_name;
};

/* Fill the table through one lookup path; 0 on success. Weak: a client
 * executable links only the paths it uses. */
int vt_client_fill_linked(struct cu_api *api) __attribute__((weak));
int vt_client_fill_dlsym(struct cu_api *api) __attribute__((weak));
int vt_client_fill_getproc(struct cu_api *api) __attribute__((weak));

struct workload {
	int count;          /* allocation rounds */
	int devices;        /* round-robin over this many devices */
	unsigned long long oom_bytes; /* one allocation of this size at the end */
	int quiet;          /* no stdout (threads) */
	int tag;            /* distinguishes threads in sizes */
};

/* Run the workload; returns 0 if every call behaved, else 1. */
int vt_client_run(const struct cu_api *api, const struct workload *w);
/* Truth lines (thread-safe: one write() per line). */
void vt_truth(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
