/* What the shim asks the driver for itself, never from a constructor or a
 * fork handler: the device of the current context (cached per thread and
 * context), each device's name and total memory (once), free memory at
 * first use, at OOM and at marks, what kind of memory an address is, and the
 * size of an IPC import. Real driver pointers only: nothing here is routed
 * or recorded as an event. */
#define _GNU_SOURCE
#include "driver_facts.h"

#include <stdatomic.h>
#include <string.h>

/* every ABI variant, as hooks.h spells them (no renaming macros) */
#define __CUDA_API_VERSION_INTERNAL 1
#include <cuda.h>

#include "hooks.h"
#include "log_writer.h"
#include "routing.h"

/* ---- the few driver functions the shim calls for itself ----------------- */

typedef CUresult (*ctx_get_current_fn)(CUcontext *);
typedef CUresult (*ctx_get_device_fn)(CUdevice *);
typedef CUresult (*device_name_fn)(char *, int, CUdevice);
typedef CUresult (*device_total_fn)(size_t *, CUdevice);
typedef CUresult (*mem_info_fn)(size_t *, size_t *);
typedef CUresult (*device_uuid_fn)(CUuuid *, CUdevice);
typedef CUresult (*pointer_attr_fn)(void *, CUpointer_attribute, CUdeviceptr);
typedef CUresult (*address_range_fn)(CUdeviceptr *, size_t *, CUdeviceptr);

enum {
	AUX_CTX_CURRENT,
	AUX_CTX_DEVICE,
	AUX_DEVICE_NAME,
	AUX_DEVICE_TOTAL,
	AUX_POINTER_ATTR,
	AUX_ADDRESS_RANGE,
	AUX_DEVICE_UUID,
	AUX_COUNT
};
static const char *const aux_names[AUX_COUNT] = {
    "cuCtxGetCurrent",       "cuCtxGetDevice",          "cuDeviceGetName", "cuDeviceTotalMem_v2",
    "cuPointerGetAttribute", "cuMemGetAddressRange_v2", "cuDeviceGetUuid",
};
static _Atomic(void *) aux_fn[AUX_COUNT];

/* The fast path is one atomic load; an entry point the loaded driver
 * lacks is remembered as absent (vt_driver_symbol_cached). */
static void *aux(int which)
{
	void *p = atomic_load_explicit(&aux_fn[which], memory_order_acquire);
	if (__builtin_expect(p != NULL && p != VT_ABSENT, 1))
		return p;
	return vt_driver_symbol_cached(&aux_fn[which], aux_names[which]);
}

/* ---- devices ------------------------------------------------------------ */

/* The context -> device answer is cached per thread: the real
 * cuCtxGetDevice runs once per context switch, not once per event. */
static __thread CUcontext cached_ctx __attribute__((tls_model("initial-exec")));
static __thread uint8_t cached_dev __attribute__((tls_model("initial-exec")));

uint8_t vt_current_device(void)
{
	ctx_get_current_fn get_ctx = (ctx_get_current_fn)aux(AUX_CTX_CURRENT);
	ctx_get_device_fn get_dev = (ctx_get_device_fn)aux(AUX_CTX_DEVICE);
	CUcontext ctx = NULL;
	if (!get_ctx || !get_dev || get_ctx(&ctx) != CUDA_SUCCESS || !ctx)
		return VT_DEVICE_UNKNOWN;
	if (ctx == cached_ctx)
		return cached_dev;
	CUdevice dev = -1;
	if (get_dev(&dev) != CUDA_SUCCESS || dev < 0 || dev >= (int)VT_DEVICE_UNKNOWN)
		return VT_DEVICE_UNKNOWN;
	cached_ctx = ctx;
	cached_dev = (uint8_t)dev;
	return cached_dev;
}

int vt_read_meminfo(uint64_t *free_bytes, uint64_t *total_bytes)
{
	mem_info_fn info = (mem_info_fn)vt_hook_real(VT_H_cuMemGetInfo_v2);
	size_t free_now = 0, total_now = 0;
	if (!info || info(&free_now, &total_now) != CUDA_SUCCESS)
		return 0;
	*free_bytes = free_now;
	*total_bytes = total_now;
	return 1;
}

uint64_t vt_write_meminfo(uint8_t device, uint8_t reason, uint64_t free_bytes, uint64_t total_bytes)
{
	struct vt_meminfo_rec *rec = vt_log_reserve(sizeof *rec);
	if (!rec)
		return 0;
	rec->device = device;
	rec->reason = reason;
	rec->seq = vt_log_next_seq();
	rec->t_ns = vt_log_now_ns();
	rec->free_bytes = free_bytes;
	rec->total_bytes = total_bytes;
	uint64_t seq = rec->seq;
	vt_log_commit(rec, VT_REC_MEMINFO, sizeof *rec);
	return seq;
}

uint64_t vt_record_meminfo_now(uint8_t device, uint8_t reason)
{
	uint64_t free_bytes, total_bytes;
	if (!vt_read_meminfo(&free_bytes, &total_bytes))
		return 0;
	return vt_write_meminfo(device, reason, free_bytes, total_bytes);
}

int vt_device_uuid(uint8_t device, unsigned char uuid[16])
{
	device_uuid_fn get_uuid = (device_uuid_fn)aux(AUX_DEVICE_UUID);
	CUuuid u;
	if (!get_uuid || get_uuid(&u, (CUdevice)device) != CUDA_SUCCESS)
		return 0;
	memcpy(uuid, u.bytes, 16);
	return 1;
}

static void record_device(uint8_t device)
{
	char name[256] = "";
	size_t total = 0;
	device_name_fn get_name = (device_name_fn)aux(AUX_DEVICE_NAME);
	device_total_fn get_total = (device_total_fn)aux(AUX_DEVICE_TOTAL);
	if (!get_name || get_name(name, sizeof name, (CUdevice)device) != CUDA_SUCCESS)
		name[0] = 0;
	name[sizeof name - 1] = 0;
	if (get_total)
		get_total(&total, (CUdevice)device);
	uint32_t len = (uint32_t)strlen(name);
	uint32_t size = (uint32_t)sizeof(struct vt_device_rec) + VT_ALIGN8(len);
	struct vt_device_rec *rec = vt_log_reserve(size);
	if (!rec)
		return;
	rec->ordinal = device;
	rec->total_bytes = total;
	rec->name_len = len;
	memcpy(rec->name, name, len);
	vt_log_commit(rec, VT_REC_DEVICE, size);
}

/* 256 slots, [VT_DEVICE_UNKNOWN] set from the start (never announced), so
 * the inline check needs no range test */
unsigned char vt_device_seen[256] = {[VT_DEVICE_UNKNOWN] = 1};

void vt_record_forget_devices(void)
{
	for (unsigned i = 0; i < VT_DEVICE_UNKNOWN; i++)
		__atomic_store_n(&vt_device_seen[i], 0, __ATOMIC_RELAXED);
}

/* The first event on a device is preceded by what the device is and how
 * full it was before the job touched it. */
void vt_note_device_first(uint8_t device)
{
	if (device == VT_DEVICE_UNKNOWN ||
	    __atomic_exchange_n(&vt_device_seen[device], 1, __ATOMIC_ACQ_REL))
		return;
	record_device(device);
	vt_record_meminfo_now(device, VT_MEMINFO_FIRST_USE);
}

/* Unified addressing: ask the driver what each address is. Memory it does
 * not know (a pageable host buffer) is host memory. */
int vt_memory_type_of(uint64_t addr)
{
	pointer_attr_fn attr = (pointer_attr_fn)aux(AUX_POINTER_ATTR);
	unsigned int type = 0;
	if (!attr ||
	    attr(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, (CUdeviceptr)addr) != CUDA_SUCCESS)
		return CU_MEMORYTYPE_HOST;
	return type == CU_MEMORYTYPE_DEVICE || type == CU_MEMORYTYPE_UNIFIED ? CU_MEMORYTYPE_DEVICE
	                                                                     : CU_MEMORYTYPE_HOST;
}

/* An IPC import does not say how big it is: the driver knows. */
uint64_t vt_imported_size(uint64_t addr)
{
	address_range_fn range = (address_range_fn)aux(AUX_ADDRESS_RANGE);
	CUdeviceptr base = 0;
	size_t size = 0;
	if (!range || range(&base, &size, (CUdeviceptr)addr) != CUDA_SUCCESS)
		return 0;
	return size;
}
