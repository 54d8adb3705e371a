/* Accounting per device: every byte the driver says is used, split by who
 * holds it. At the last cuMemGetInfo reading of each device (the shim takes
 * one at a device's first use, at each mark, after an out-of-memory result,
 * and when the job calls it), used = total - free is split into:
 *   - framework: tracked allocations the job (or its framework) made,
 *     outside pools and libraries;
 *   - pools: allocator regions (category pool);
 *   - libraries: allocations with a known library that allocates for itself
 *     on their native stack (NCCL, cuBLAS/cuBLASLt, cuDNN, cuFFT, TensorRT),
 *     named by that module;
 *   - VMM: physical memory of cuMemCreate handles;
 *   - other processes: where the shim read NVML beside the reading (its
 *     PEAK and EXIT readings, interpose/nvml_sample.c), the bytes NVML
 *     gives the device's other processes, at most what is left below;
 *   - unexplained: used minus all of the above (the CUDA context, kernel
 *     images, other processes NVML did not name), never negative.
 * Each part is tracked exactly (the allocations live at the reading); only
 * "unexplained" is a difference. */
#ifndef VT_ACCOUNTING_H
#define VT_ACCOUNTING_H

#include <stdint.h>

#include "model.h"

#define VT_ACCOUNT_LIBS 8

struct vt_account_lib {
	char module[64]; /* the module's file name, e.g. libcublasLt.so.12 */
	uint64_t bytes;
};

struct vt_device_account {
	int device;
	uint64_t t_ns;  /* the reading's time */
	uint8_t reason; /* enum vt_meminfo_reason */
	uint64_t total_bytes, used_bytes;
	uint64_t framework_bytes, pool_bytes, vmm_bytes, library_bytes;
	struct vt_account_lib libs[VT_ACCOUNT_LIBS]; /* most bytes first */
	uint32_t nlibs;
	uint64_t other_processes_bytes; /* per NVML, within used: 0 without it */
	uint64_t unexplained_bytes;
	uint64_t overcount_bytes; /* tracked beyond used (a reading taken before
	                             a free landed): 0 normally */
	/* NVML's view at this reading (model.h), NULL where none was read */
	const struct vt_nvml_reading *nvml;
};

struct vt_accounting {
	struct vt_device_account dev[VT_MAX_DEVICES]; /* devices with a reading: the last one */
	uint32_t ndev;
	/* the same at each device's reading with the most used bytes (the
	 * shim's peak readings, interpose/peak_sample.c), where it is another */
	struct vt_device_account peak[VT_MAX_DEVICES];
	uint32_t npeak;
};

/* Needs a finished, classified model. */
void vt_accounting_build(const struct vt_model *m, struct vt_accounting *out);

#endif
