/* vt_packed_decode compiled with -mbmi -mbmi2 (packed_decode.h picks it): its
 * varints squeeze their 7-bit groups with one PEXT. Built only for x86-64, in a file
 * of its own so that no other code of the analyzer may use BMI2. */
#include "packed_decode_bmi2.h"
#include "vramtrace/event_packed.h"

#if !defined(__BMI2__) || !defined(__BMI__)
#error "this file is to be compiled with -mbmi -mbmi2"
#endif

static const char *decode_bmi2(const uint8_t *rec, uint32_t size, uint64_t readable,
                               uint64_t chunk_first_seq, uint64_t chunk_first_t_ns,
                               struct vt_event *ev)
{
	return vt_packed_decode(rec, size, readable, chunk_first_seq, chunk_first_t_ns, ev);
}

const vt_packed_decode_fn vt_packed_decode_bmi2 = decode_bmi2;

static uint32_t decode_run_bmi2(const uint8_t **p, const uint8_t *end, const uint8_t *readable_end,
                                uint64_t chunk_first_seq, uint64_t chunk_first_t_ns,
                                struct vt_event *out, uint32_t max)
{
	return vt_packed_decode_run(p, end, readable_end, chunk_first_seq, chunk_first_t_ns, out,
	                            max);
}

const vt_packed_run_fn vt_packed_decode_run_bmi2 = decode_run_bmi2;
