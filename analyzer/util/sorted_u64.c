/* Sorted arrays of 64-bit values (see sorted_u64.h). */
#include "sorted_u64.h"

int vt_cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

uint32_t vt_lower_bound_u64(const uint64_t *v, uint32_t n, uint64_t x)
{
	uint32_t lo = 0, hi = n;
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		if (v[mid] < x)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}
