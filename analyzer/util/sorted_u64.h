/* Sorted arrays of 64-bit values (times, seqs, sizes): the comparator qsort
 * takes and the binary search the rules read them with. */
#ifndef VT_SORTED_U64_H
#define VT_SORTED_U64_H

#include <stdint.h>

/* qsort's comparator for uint64_t, ascending. */
int vt_cmp_u64(const void *a, const void *b);

/* The index of the first of the sorted v[0..n) not below x (n: none). */
uint32_t vt_lower_bound_u64(const uint64_t *v, uint32_t n, uint64_t x);

#endif
