/* Readings of the driver's used memory at moments the shim chooses
 * (peak_sample.c): near each device's peak and at exit. */
#ifndef VT_PEAK_SAMPLE_H
#define VT_PEAK_SAMPLE_H

#include <stdint.h>

/* Bytes allocated per device since its last reading, and the growth that
 * arms a reading (inline: the allocation path pays one add and compare). */
extern uint64_t vt_peak_grown[256];
extern uint64_t vt_peak_trigger[256];
extern unsigned char vt_peak_armed;
void vt_peak_arm(uint8_t device);
static inline void vt_peak_note_alloc(uint8_t device, uint64_t bytes)
{
	uint64_t grown = __atomic_load_n(&vt_peak_grown[device], __ATOMIC_RELAXED) + bytes;
	__atomic_store_n(&vt_peak_grown[device], grown, __ATOMIC_RELAXED);
	if (grown >= __atomic_load_n(&vt_peak_trigger[device], __ATOMIC_RELAXED))
		vt_peak_arm(device);
}

/* Before a free: when armed, a PEAK reading of the current device. */
void vt_peak_sample_before_free_slow(void);
static inline void vt_peak_sample_before_free(void)
{
	if (__atomic_load_n(&vt_peak_armed, __ATOMIC_RELAXED))
		vt_peak_sample_before_free_slow();
}

/* At process exit: an EXIT reading of the calling thread's current device. */
void vt_peak_sample_at_exit(void);

/* After fork: the child starts with nothing armed. */
void vt_peak_forget(void);

#endif
