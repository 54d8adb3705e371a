/* Which compiled form of the packed-event decoder (vramtrace/event_packed.h)
 * the reader calls. The decoder is the replay's largest single cost (a
 * quarter of a streaming report's instructions), and most of it is
 * squeezing the 7-bit groups of each varint together: one PEXT instruction
 * where the CPU has a fast one, three shift-and-mask steps where not. The
 * same source is compiled twice, so both forms decode the same bytes the
 * same way (tests/log/test_log_packed.c checks each against a reference). */
#ifndef VT_PACKED_DECODE_H
#define VT_PACKED_DECODE_H

#include <stdint.h>

#include "vramtrace/format.h"
#include "bmi2/packed_decode_bmi2.h"

/* vt_packed_decode compiled for any CPU. */
const char *vt_packed_decode_portable(const uint8_t *rec, uint32_t size, uint64_t readable,
                                      uint64_t chunk_first_seq, uint64_t chunk_first_t_ns,
                                      struct vt_event *ev);

/* vt_packed_decode_run compiled for any CPU. */
uint32_t vt_packed_decode_run_portable(const uint8_t **p, const uint8_t *end,
                                       const uint8_t *readable_end, uint64_t chunk_first_seq,
                                       uint64_t chunk_first_t_ns, struct vt_event *out,
                                       uint32_t max);

/* Does this CPU run PEXT fast? BMI2, and not an AMD core before Zen 3,
 * where PEXT is microcoded (tens of cycles: slower than the portable
 * form). */
int vt_packed_bmi2_fast(void);

/* The form the reader uses: the BMI2 one where it is compiled and fast,
 * unless VRAMTRACE_DECODER=portable asks for the other (to compare them). */
vt_packed_decode_fn vt_packed_decoder(void);

/* The run form compiled as decode (a form vt_packed_decoder gave): both
 * decode the same records the same way, one form per reader. */
vt_packed_run_fn vt_packed_run_decoder(vt_packed_decode_fn decode);

#endif
