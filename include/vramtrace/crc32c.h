/* CRC32C (Castagnoli, reflected polynomial 0x82f63b78, initial and final
 * value ~0): the check in a chunk's seal (format.h, struct vt_chunk_seal).
 * Shared by the writer, which computes it once per chunk, and the reader,
 * which verifies it. On x86-64 with SSE4.2 (every such CPU since 2008) the
 * crc32 instruction takes 8 bytes a step; elsewhere a table built on first
 * use takes one byte a step. Both give the same value. */
#ifndef VRAMTRACE_CRC32C_H
#define VRAMTRACE_CRC32C_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#if defined(__x86_64__)
#include <cpuid.h>

__attribute__((target("sse4.2"))) static inline uint32_t vt_crc32c_hw(uint32_t crc,
                                                                      const uint8_t *p, size_t n)
{
	uint64_t c = crc;
	for (; n >= 8; n -= 8, p += 8) {
		uint64_t word;
		memcpy(&word, p, sizeof word);
		c = __builtin_ia32_crc32di(c, word);
	}
	crc = (uint32_t)c;
	for (; n; n--)
		crc = __builtin_ia32_crc32qi(crc, *p++);
	return crc;
}

/* 1: the CPU has SSE4.2. Asked once (a race asks twice, same answer). */
static inline int vt_crc32c_have_hw(void)
{
	static int known; /* 0 not asked, 1 no, 2 yes */
	int k = __atomic_load_n(&known, __ATOMIC_RELAXED);
	if (!k) {
		unsigned a, b, c, d;
		k = __get_cpuid(1, &a, &b, &c, &d) && (c & bit_SSE4_2) ? 2 : 1;
		__atomic_store_n(&known, k, __ATOMIC_RELAXED);
	}
	return k == 2;
}
#endif

static inline uint32_t vt_crc32c_sw(uint32_t crc, const uint8_t *p, size_t n)
{
	static uint32_t table[256];
	static int built; /* the table is the same whoever builds it */
	if (!__atomic_load_n(&built, __ATOMIC_ACQUIRE)) {
		for (uint32_t i = 0; i < 256; i++) {
			uint32_t v = i;
			for (int k = 0; k < 8; k++)
				v = v & 1 ? (v >> 1) ^ 0x82f63b78u : v >> 1;
			table[i] = v;
		}
		__atomic_store_n(&built, 1, __ATOMIC_RELEASE);
	}
	for (; n; n--)
		crc = table[(crc ^ *p++) & 0xffu] ^ (crc >> 8);
	return crc;
}

/* The CRC32C of n bytes at p. */
static inline uint32_t vt_crc32c(const void *p, size_t n)
{
#if defined(__x86_64__)
	if (vt_crc32c_have_hw())
		return ~vt_crc32c_hw(~0u, p, n);
#endif
	return ~vt_crc32c_sw(~0u, p, n);
}

#endif
