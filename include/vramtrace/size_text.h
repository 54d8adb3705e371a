/* Sizes as users write them ("123", "64K", "512M", "2G", "1GiB", "1MB":
 * binary multiples), parsed the same way by the launcher, which refuses a
 * bad --max-size, and by the shim, which reads VRAMTRACE_MAX_SIZE and
 * VRAMTRACE_CHUNK_SIZE and must never fail. */
#ifndef VRAMTRACE_SIZE_TEXT_H
#define VRAMTRACE_SIZE_TEXT_H

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

/* 0 and *bytes set, or -1 when text is not a size (no allocation). */
static inline int vt_parse_size(const char *text, uint64_t *bytes)
{
	if (!text || !*text || *text == '-')
		return -1;
	char *end;
	errno = 0;
	unsigned long long v = strtoull(text, &end, 10);
	if (errno || end == text)
		return -1;
	unsigned shift = 0;
	switch (*end) {
	case 'k':
	case 'K':
		shift = 10;
		break;
	case 'm':
	case 'M':
		shift = 20;
		break;
	case 'g':
	case 'G':
		shift = 30;
		break;
	case 't':
	case 'T':
		shift = 40;
		break;
	default:
		break;
	}
	if (shift) {
		end++;
		if (*end == 'i')
			end++;
	}
	if (*end == 'B' || *end == 'b')
		end++;
	if (*end || (shift && v > (UINT64_MAX >> shift)))
		return -1;
	*bytes = (uint64_t)v << shift;
	return 0;
}

#endif
