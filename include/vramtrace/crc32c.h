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

/* CRC32C arithmetic modulo the polynomial (reflected): a * b, and x^(8n),
 * for joining the CRCs of consecutive blocks (as zlib's crc32_combine). */
static inline uint32_t vt_crc32c_mulmod(uint32_t a, uint32_t b)
{
	uint32_t product = 0;
	for (uint32_t m = 1u << 31; m; m >>= 1) {
		if (a & m)
			product ^= b;
		b = b & 1 ? (b >> 1) ^ 0x82f63b78u : b >> 1;
	}
	return product;
}

static inline uint32_t vt_crc32c_x8n(size_t n)
{
	uint32_t power = 1u << 31, square = 1u << 23; /* x^0; x^8 */
	for (; n; n >>= 1) {
		if (n & 1)
			power = vt_crc32c_mulmod(square, power);
		square = vt_crc32c_mulmod(square, square);
	}
	return power;
}

/* The finished CRC of A||B from those of A and of B (len_b bytes). */
static inline uint32_t vt_crc32c_join(uint32_t crc_a, uint32_t crc_b, size_t len_b)
{
	return vt_crc32c_mulmod(vt_crc32c_x8n(len_b), crc_a) ^ crc_b;
}

/* Three blocks at once: the crc32 instruction takes 3 cycles and one can
 * start every cycle, so three independent chains run three times as fast
 * as one (a 256 KiB chunk: ~35 instead of ~100 us). */
__attribute__((target("sse4.2"))) static inline uint32_t vt_crc32c_hw3(const uint8_t *p, size_t n)
{
	size_t third = n / 24 * 8;
	if (third < 4096)
		return ~vt_crc32c_hw(~0u, p, n);
	uint64_t c0 = ~0u, c1 = ~0u, c2 = ~0u;
	const uint8_t *b0 = p, *b1 = p + third, *b2 = p + 2 * third;
	for (size_t i = 0; i < third; i += 8) {
		uint64_t w0, w1, w2;
		memcpy(&w0, b0 + i, 8);
		memcpy(&w1, b1 + i, 8);
		memcpy(&w2, b2 + i, 8);
		c0 = __builtin_ia32_crc32di(c0, w0);
		c1 = __builtin_ia32_crc32di(c1, w1);
		c2 = __builtin_ia32_crc32di(c2, w2);
	}
	uint32_t crc = vt_crc32c_join(~(uint32_t)c0, ~(uint32_t)c1, third);
	crc = vt_crc32c_join(crc, ~(uint32_t)c2, third);
	size_t rest = n - 3 * third;
	return rest ? vt_crc32c_join(crc, ~vt_crc32c_hw(~0u, p + 3 * third, rest), rest) : crc;
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
		return vt_crc32c_hw3(p, n);
#endif
	return ~vt_crc32c_sw(~0u, p, n);
}

#endif
