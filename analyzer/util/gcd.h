/* The greatest common divisor of two sizes: the unit they share (a pool's
 * chunk, the rows of two arrays). */
#ifndef VT_GCD_H
#define VT_GCD_H

#include <stdint.h>

static inline uint64_t vt_gcd_u64(uint64_t a, uint64_t b)
{
	while (b) {
		uint64_t r = a % b;
		a = b;
		b = r;
	}
	return a;
}

#endif
