/* Per-type validation of log records (format.h): is a record of this type
 * and size safe to expose? Shared by the reader's open-time scan (which
 * warns) and its iteration (which skips silently). */
#ifndef VT_LOG_RECORD_CHECK_H
#define VT_LOG_RECORD_CHECK_H

#include <stdint.h>

/* NULL when the record may be exposed; otherwise a short reason. Unknown
 * types return "" (skip without a warning: newer writers add kinds).
 * `size` must already be >= 8, a multiple of 8 and inside the mapping.
 * A packed event's fixed part only: its fields are checked by the decoding
 * the reader does anyway (log_reader.c), not decoded twice. */
const char *vt_record_problem(const uint8_t *rec, uint32_t type, uint32_t size);

/* Records with a process-wide seq (events, compact free, packed event,
 * module, meminfo, mark, exit, note): the reader merges threads by it. It is
 * at offset 8 in all of them but the packed event (vt_packed_decode). */
static inline int vt_record_has_seq(uint32_t type)
{
	return (type >= 1 && type <= 11) || type == 17 || type == 18 || type == 19 || type == 21 ||
	       type == 25;
}

/* Name of a record type for messages ("alloc", "stack", "type 77"). */
const char *vt_record_check_name(uint32_t type);

#endif
