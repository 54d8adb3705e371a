/* Choosing the packed-event decoder's form (contract: packed_decode.h). */
#include "packed_decode.h"

#include <stdlib.h>
#include <string.h>

#include "vramtrace/event_packed.h"

#if defined(__x86_64__)
#include <cpuid.h>
#endif

const char *vt_packed_decode_portable(const uint8_t *rec, uint32_t size, uint64_t readable,
                                      uint64_t chunk_first_seq, uint64_t chunk_first_t_ns,
                                      struct vt_event *ev)
{
	return vt_packed_decode(rec, size, readable, chunk_first_seq, chunk_first_t_ns, ev);
}

uint32_t vt_packed_decode_run_portable(const uint8_t **p, const uint8_t *end,
                                       const uint8_t *readable_end, uint64_t chunk_first_seq,
                                       uint64_t chunk_first_t_ns, struct vt_event *out,
                                       uint32_t max)
{
	return vt_packed_decode_run(p, end, readable_end, chunk_first_seq, chunk_first_t_ns, out,
	                            max);
}

#if !defined(VT_HAVE_PACKED_BMI2)
const vt_packed_decode_fn vt_packed_decode_bmi2 = NULL;
const vt_packed_run_fn vt_packed_decode_run_bmi2 = NULL;
#endif

int vt_packed_bmi2_fast(void)
{
#if defined(__x86_64__)
	unsigned a, b, c, d;
	if (!vt_packed_decode_bmi2 || !__get_cpuid_count(7, 0, &a, &b, &c, &d) ||
	    (b & (bit_BMI | bit_BMI2)) != (bit_BMI | bit_BMI2))
		return 0; /* the form is built with both (BMI1: blsmsk, tzcnt) */
	char vendor[13] = {0};
	__get_cpuid(0, &a, &b, &c, &d);
	memcpy(vendor, &b, 4);
	memcpy(vendor + 4, &d, 4);
	memcpy(vendor + 8, &c, 4);
	if (strcmp(vendor, "AuthenticAMD") && strcmp(vendor, "HygonGenuine"))
		return 1; /* Intel: PEXT is one fast uop on every core that has it */
	__get_cpuid(1, &a, &b, &c, &d);
	unsigned family = (a >> 8) & 0xf;
	if (family == 0xf)
		family += (a >> 20) & 0xff;
	return family >= 0x19; /* Zen 3 on; Zen 1/2 (0x17) and Hygon (0x18) microcode it */
#else
	return 0;
#endif
}

vt_packed_decode_fn vt_packed_decoder(void)
{
	const char *want = getenv("VRAMTRACE_DECODER");
	if (want && !strcmp(want, "portable"))
		return vt_packed_decode_portable;
	return vt_packed_bmi2_fast() ? vt_packed_decode_bmi2 : vt_packed_decode_portable;
}

vt_packed_run_fn vt_packed_run_decoder(vt_packed_decode_fn decode)
{
	return decode == vt_packed_decode_bmi2 && vt_packed_decode_run_bmi2
	           ? vt_packed_decode_run_bmi2
	           : vt_packed_decode_run_portable;
}
