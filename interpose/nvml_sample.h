/* Per-process used memory per NVML, beside the shim's own PEAK and EXIT
 * readings of cuMemGetInfo (nvml_sample.c). */
#ifndef VT_NVML_SAMPLE_H
#define VT_NVML_SAMPLE_H

#include <stdint.h>

/* A VT_REC_NVML for device, going with the reading of reason written as
 * reading_seq, when libnvidia-ml is installed; nothing otherwise. */
void vt_nvml_sample(uint8_t device, uint8_t reason, uint64_t reading_seq);

#endif
