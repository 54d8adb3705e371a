/* The packed-event decoder's compiled forms share one signature; the BMI2
 * form is built in this folder only (packed_decode.h picks a form). */
#ifndef VT_PACKED_DECODE_BMI2_H
#define VT_PACKED_DECODE_BMI2_H

#include <stdint.h>

#include "vramtrace/format.h"

typedef const char *(*vt_packed_decode_fn)(const uint8_t *rec, uint32_t size, uint64_t readable,
                                           uint64_t chunk_first_seq, uint64_t chunk_first_t_ns,
                                           struct vt_event *ev);

/* vt_packed_decode compiled with BMI2 (x86-64), or NULL where this build has
 * no such form. Call it only when vt_packed_bmi2_fast() says so. */
extern const vt_packed_decode_fn vt_packed_decode_bmi2;

/* The form of vt_packed_decode_run that goes with each decoder. */
typedef uint32_t (*vt_packed_run_fn)(const uint8_t **p, const uint8_t *end,
                                     const uint8_t *readable_end, uint64_t chunk_first_seq,
                                     uint64_t chunk_first_t_ns, struct vt_event *out, uint32_t max);

/* vt_packed_decode_run compiled with BMI2, NULL where vt_packed_decode_bmi2
 * is. */
extern const vt_packed_run_fn vt_packed_decode_run_bmi2;

#endif
