/* CPython 3.11+ location table decoder (see pyframes_linetable.h).
 *
 * Each entry starts with a byte that has bit 7 set:
 *
 *    7   6       3 2     0
 *   +---+---------+-------+
 *   | 1 |  code   | len-1 |   len = code units (2 bytes each) covered
 *   +---+---------+-------+
 *
 * code 15: no location; 14: long form (signed varint line delta, then
 * columns); 13: no columns (signed varint line delta); 10..12: one-line
 * forms, line delta code-10; 0..9: short forms, same line. The bytes after
 * the first (varints, columns) never have bit 7 set.
 */
#include "pyframes_linetable.h"

enum {
	LOC_ONE_LINE0 = 10,
	LOC_ONE_LINE1 = 11,
	LOC_ONE_LINE2 = 12,
	LOC_NO_COLUMNS = 13,
	LOC_LONG = 14,
	LOC_NONE = 15,
};

/* 6-bit little-endian groups, bit 6 = more follow. */
static unsigned read_varint(const uint8_t *p, const uint8_t *end)
{
	unsigned value = 0, shift = 0;
	while (p < end && shift < 32) {
		uint8_t b = *p++;
		value |= (unsigned)(b & 63u) << shift;
		shift += 6;
		if (!(b & 64u))
			break;
	}
	return value;
}

static int read_signed_varint(const uint8_t *p, const uint8_t *end)
{
	unsigned u = read_varint(p, end);
	return (u & 1u) ? -(int)(u >> 1) : (int)(u >> 1);
}

static int line_delta(const uint8_t *entry, const uint8_t *end)
{
	unsigned code = (entry[0] >> 3) & 15u;
	switch (code) {
	case LOC_NO_COLUMNS:
	case LOC_LONG:
		return read_signed_varint(entry + 1, end);
	case LOC_ONE_LINE1:
		return 1;
	case LOC_ONE_LINE2:
		return 2;
	default: /* LOC_NONE, LOC_ONE_LINE0, short forms */
		return 0;
	}
}

int vt_py_location_line(const uint8_t *table, size_t len, int firstlineno, int addr)
{
	if (addr < 0)
		return firstlineno;
	const uint8_t *p = table, *end = table + len;
	int line = firstlineno;
	long start = 0;
	while (p < end) {
		if (!(*p & 0x80u)) { /* not an entry start: damaged, resync */
			p++;
			continue;
		}
		line += line_delta(p, end);
		long stop = start + 2 * (long)((*p & 7u) + 1);
		if (addr < stop)
			return ((*p >> 3) & 15u) == LOC_NONE ? -1 : line;
		start = stop;
		for (p++; p < end && !(*p & 0x80u); p++)
			;
	}
	return -1;
}
