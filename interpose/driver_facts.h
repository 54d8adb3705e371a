/* Facts the shim asks the driver for itself (driver_facts.c). */
#ifndef VT_DRIVER_FACTS_H
#define VT_DRIVER_FACTS_H

#include <stdint.h>

/* Device of the calling thread's current context (VT_DEVICE_UNKNOWN if
 * none). */
uint8_t vt_current_device(void);
/* The first time a device is seen: its DEVICE record and FIRST_USE meminfo
 * (inline: after that, one relaxed load per event). */
extern unsigned char vt_device_seen[];
void vt_note_device_first(uint8_t device);
static inline void vt_note_device(uint8_t device)
{
	if (!__atomic_load_n(&vt_device_seen[device], __ATOMIC_RELAXED))
		vt_note_device_first(device);
}
/* The real cuMemGetInfo in the current context (1), or 0 if it failed. */
int vt_read_meminfo(uint64_t *free_bytes, uint64_t *total_bytes);
/* A VT_REC_MEMINFO of a reading already taken: its seq, 0 if not written. */
uint64_t vt_write_meminfo(uint8_t device, uint8_t reason, uint64_t free_bytes,
                          uint64_t total_bytes);
/* VT_REC_MEMINFO with the real cuMemGetInfo, now: its seq, 0 if none. */
uint64_t vt_record_meminfo_now(uint8_t device, uint8_t reason);
/* The device's UUID (cuDeviceGetUuid) into uuid[16]: 1, or 0 if unknown. */
int vt_device_uuid(uint8_t device, unsigned char uuid[16]);
/* After fork: the child's log must state the device facts again. */
void vt_record_forget_devices(void);
/* CU_MEMORYTYPE_DEVICE for device or managed memory, else HOST (memory the
 * driver does not know is a pageable host buffer). */
int vt_memory_type_of(uint64_t addr);
/* Bytes of the allocation an IPC import mapped at addr (0 if unknown). */
uint64_t vt_imported_size(uint64_t addr);

#endif
