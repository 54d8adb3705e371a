/* vtc: the corpus jobs' shared plumbing (tests/corpus/README.md).
 *
 * A job is a framework-shaped program over the CUDA driver API that records
 * its own ground truth. Every driver allocation goes through vtc_alloc (or
 * vtc_vmm_create), which records `alloc DEV ADDR BYTES CATEGORY ORDER`;
 * frees record `free DEV ADDR`; sub-ranges of a pool region record
 * `part DEV ADDR BYTES CATEGORY` / `part_free DEV ADDR`. Lines are kept in
 * memory and written at vtc_finish, so a region's category can be settled
 * once the job knows what it held (vtc_set_category).
 *
 * Common options every job takes:
 *   --truth FILE                    where the truth goes
 *   --lookup direct|dlsym|getproc   how the driver is found (direct needs the
 *                                   linked build, -DVTC_LINKED)
 *   --markers / --no-markers        call vramtrace_mark("step N") or not
 */
#ifndef VTC_H
#define VTC_H

#include <cuda.h>
#include <stdint.h>

#define KIB 1024ull
#define MIB (1024ull * 1024ull)
#define VTC_MAX_DEVICES 4

enum vtc_cat {
	VTC_DATASET, VTC_WEIGHTS, VTC_GRADIENTS, VTC_OPTIMIZER, VTC_PREFETCH,
	VTC_ACTIVATIONS, VTC_POOL, VTC_OTHER,
};
enum vtc_lookup { VTC_DIRECT, VTC_DLSYM, VTC_GETPROC };

struct vtc_driver {
	CUresult (*Init)(unsigned);
	CUresult (*DeviceGetCount)(int *);
	CUresult (*DeviceGet)(CUdevice *, int);
	CUresult (*PrimaryCtxRetain)(CUcontext *, CUdevice);
	CUresult (*CtxSetCurrent)(CUcontext);
	CUresult (*MemAlloc)(CUdeviceptr *, size_t);
	CUresult (*MemFree)(CUdeviceptr);
	CUresult (*MemAllocAsync)(CUdeviceptr *, size_t, CUstream);
	CUresult (*MemFreeAsync)(CUdeviceptr, CUstream);
	CUresult (*MemcpyHtoD)(CUdeviceptr, const void *, size_t);
	CUresult (*MemcpyHtoDAsync)(CUdeviceptr, const void *, size_t, CUstream);
	CUresult (*MemcpyDtoH)(void *, CUdeviceptr, size_t);
	CUresult (*MemcpyDtoD)(CUdeviceptr, CUdeviceptr, size_t);
	CUresult (*MemcpyPeer)(CUdeviceptr, CUcontext, CUdeviceptr, CUcontext, size_t);
	CUresult (*MemsetD8)(CUdeviceptr, unsigned char, size_t);
	CUresult (*MemAllocHost)(void **, size_t);
	CUresult (*MemFreeHost)(void *);
	CUresult (*MemGetInfo)(size_t *, size_t *); /* sizing a region from free memory */
	CUresult (*StreamCreate)(CUstream *, unsigned);
	CUresult (*StreamSynchronize)(CUstream);
	CUresult (*MemAddressReserve)(CUdeviceptr *, size_t, size_t, CUdeviceptr, unsigned long long);
	CUresult (*MemAddressFree)(CUdeviceptr, size_t);
	CUresult (*MemCreate)(CUmemGenericAllocationHandle *, size_t, const CUmemAllocationProp *,
	                      unsigned long long);
	CUresult (*MemRelease)(CUmemGenericAllocationHandle);
	CUresult (*MemMap)(CUdeviceptr, size_t, size_t, CUmemGenericAllocationHandle, unsigned long long);
	CUresult (*MemUnmap)(CUdeviceptr, size_t);
	CUresult (*MemSetAccess)(CUdeviceptr, size_t, const CUmemAccessDesc *, size_t);
};

extern struct vtc_driver vtc;
extern CUcontext vtc_ctx[VTC_MAX_DEVICES];

/* Parse the common options (others are left for the job: vtc_opt_*),
 * bind the driver, cuInit, retain a primary context on `devices` devices
 * and make device 0 current. default_lookup applies without --lookup. */
void vtc_start(int argc, char **argv, const char *job, int devices, enum vtc_lookup default_lookup);
/* a job option: --NAME VALUE (sizes take K/M/G), or the default */
uint64_t vtc_opt_size(const char *name, uint64_t dflt);
int vtc_opt_flag(const char *name); /* --NAME present */
int vtc_markers(void);

void vtc_use(int dev);                    /* cuCtxSetCurrent */
void vtc_check(CUresult rc, const char *what);
#define VTC_CHECK(call) vtc_check((call), #call)

/* driver allocations, with truth */
CUdeviceptr vtc_alloc(int dev, uint64_t bytes, enum vtc_cat cat);           /* cuMemAlloc_v2 */
CUdeviceptr vtc_alloc_async(int dev, uint64_t bytes, enum vtc_cat cat, CUstream s); /* cuMemAllocAsync */
/* cuMemAlloc_v2 that may fail: a refusal is recorded as
 * `failed_alloc DEV BYTES CATEGORY` and returned, not fatal */
CUresult vtc_try_alloc(int dev, uint64_t bytes, enum vtc_cat cat, CUdeviceptr *p);
void vtc_free(int dev, CUdeviceptr p);
void vtc_free_async(int dev, CUdeviceptr p, CUstream s);
/* the truth record of the last allocation at (dev, p), to settle later */
int vtc_record_of(int dev, uint64_t p);
void vtc_set_category(int record, enum vtc_cat cat);
/* sub-ranges of a region */
void vtc_part(int dev, CUdeviceptr p, uint64_t bytes, enum vtc_cat cat);
void vtc_part_free(int dev, CUdeviceptr p);

/* VMM: a physical allocation (its handle is the ADDR of its truth line) */
CUmemGenericAllocationHandle vtc_vmm_create(int dev, uint64_t bytes, enum vtc_cat cat);
void vtc_vmm_release(int dev, CUmemGenericAllocationHandle h);
void vtc_vmm_map(int dev, CUdeviceptr va, uint64_t bytes, CUmemGenericAllocationHandle h);

/* copies and fills; host bytes come from one patterned buffer */
/* at least `bytes` of the pattern; a buffer it outgrows stays valid to the
 * end, so threads may copy from their own while another grows it */
const void *vtc_host(uint64_t bytes);
void vtc_htod(int dev, CUdeviceptr dst, uint64_t bytes);
void vtc_htod_from(int dev, CUdeviceptr dst, const void *src, uint64_t bytes, CUstream s); /* async when s */
void vtc_dtoh(int dev, CUdeviceptr src, uint64_t bytes);
void vtc_dtod(int dev, CUdeviceptr dst, CUdeviceptr src, uint64_t bytes);
void vtc_zero(int dev, CUdeviceptr dst, uint64_t bytes); /* cuMemsetD8: zeros/initializers */

/* run rank(0) .. rank(n - 1), one thread each (the ranks of a two-device
 * job), and wait for them all */
void vtc_run_ranks(int n, void *(*rank)(void *));

/* vramtrace_mark("step N") when markers are on (and the shim is loaded) */
void vtc_step(int s);
void vtc_mark(const char *text);

/* expected findings and other truth lines, verbatim (printf format) */
void vtc_line(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void vtc_finish(void);

#endif
