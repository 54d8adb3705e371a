/* A cheaper hash for the analyzer's uthash tables on its per-allocation
 * paths (classification, sites): keys there are one or two words, hashed
 * once per allocation, and uthash's default (Jenkins) cost ~80 instructions
 * a lookup, more than the rest of the lookup. Include BEFORE <uthash.h>.
 * Word-at-a-time multiply-xorshift with a final mix, so uthash's low-bit
 * bucket index is well spread. */
#ifndef VT_MODEL_HASH_H
#define VT_MODEL_HASH_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

static inline unsigned vt_model_hash(const void *key, size_t n)
{
	const unsigned char *p = key;
	uint64_t h = 0x9e3779b97f4a7c15ull ^ (uint64_t)n;
	for (; n >= 8; n -= 8, p += 8) {
		uint64_t w;
		memcpy(&w, p, 8);
		h = (h ^ w) * 0xff51afd7ed558ccdull;
		h ^= h >> 32;
	}
	if (n) {
		uint64_t w = 0;
		memcpy(&w, p, n);
		h = (h ^ w) * 0xff51afd7ed558ccdull;
	}
	h ^= h >> 29;
	h *= 0xc4ceb9fe1a85ec53ull;
	h ^= h >> 32;
	return (unsigned)h;
}

#undef HASH_FUNCTION
#define HASH_FUNCTION(keyptr, keylen, hashv) ((hashv) = vt_model_hash((keyptr), (size_t)(keylen)))

#endif
