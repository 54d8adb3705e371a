/* The packed event (VT_REC_PACKED): any struct vt_event in 16-40 bytes
 * instead of 64. The encoder (the shim's hot path) and the decoder (the
 * reader, which hands every consumer the plain vt_event) live here together,
 * so the bytes on disk are defined in exactly one place.
 *
 * Why: on the recording path the log's pages are the largest single cost
 * (the kernel zeroes and maps every new page of the log; on a VM that is
 * 2-4 us per 4 KiB page, 40-55 ns per 64-byte event). Most of an event's
 * 64 bytes are zeros or small numbers, so a varint form halves the pages.
 *
 *   0      4     5     6        7 ...                                 size
 *   +------+-----+-----+--------+-------------------------------+-------+
 *   | hdr  |type | api |present | varints (LEB128, see below)   | 0 pad |
 *   +------+-----+-----+--------+-------------------------------+-------+
 *
 *   type     the event's own vt_rec (VT_REC_ALLOC .. VT_REC_POOL_TRIM)
 *   api      vt_event.api
 *   present  bit i set: optional field i below is stored (else it is 0)
 *   varints, in this order:
 *     stack_id                      always
 *     zigzag(seq  - chunk first_seq)  always (a free takes its seq before
 *     zigzag(t_ns - chunk first_t_ns) always  the chunk it lands in exists)
 *     addr                          always: a varint, or with present
 *                                   bit 7 six little-endian bytes
 *     rt_api, device, kind          present bits 0, 1, 2 (one byte each)
 *     bytes, aux, stream            present bits 3, 4, 5
 *     zigzag(result)                present bit 6
 * A field left out is 0, except the device of a release (VT_REC_FREE,
 * VT_REC_UNMAP, VT_REC_UNRESERVE), which is VT_DEVICE_UNKNOWN: the shim does
 * not ask the driver which device a free runs on (the allocation's record
 * says where the bytes were), and that costs no byte.
 * The padding up to the 8-byte size must be 0.
 * A varint is at most 10 bytes. Everything relative is relative to the
 * header of the chunk holding the record, so a record decodes on its own
 * (no state carried from the record before it: a damaged record costs only
 * itself).
 */
#ifndef VRAMTRACE_EVENT_PACKED_H
#define VRAMTRACE_EVENT_PACKED_H

#include <stdint.h>
#include <string.h>
#if defined(__BMI2__)
#include <immintrin.h>
#endif

#include "vramtrace/format.h"

#define VT_PACKED_MAX_SIZE 80u /* 7 + 3 + 7 varints of 10: rounded up to 8 */
#define VT_PACKED_FIXED 7u     /* hdr, type, api, present */

enum vt_packed_present {
	VT_PK_RT_API = 1u << 0,
	VT_PK_DEVICE = 1u << 1,
	VT_PK_KIND = 1u << 2,
	VT_PK_BYTES = 1u << 3,
	VT_PK_AUX = 1u << 4,
	VT_PK_STREAM = 1u << 5,
	VT_PK_RESULT = 1u << 6,
	VT_PK_ADDR48 = 1u << 7, /* addr is 6 little-endian bytes, not a varint */
};

/* The device of an event of `type` whose device byte is left out. */
static inline uint8_t vt_packed_default_device(uint32_t type)
{
	return type == VT_REC_FREE || type == VT_REC_UNMAP || type == VT_REC_UNRESERVE
	           ? VT_DEVICE_UNKNOWN
	           : 0;
}
static inline uint64_t vt_zigzag(int64_t v)
{
	return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);
}

static inline int64_t vt_unzigzag(uint64_t v)
{
	return (int64_t)(v >> 1) ^ -(int64_t)(v & 1);
}

/* Should addr go as 6 fixed bytes? Device addresses sit at 2^42..2^48
 * (0x7f...: a 7-byte varint, a 7-step loop); 6 bytes are shorter and one
 * store. Lower addresses stay varints (5 bytes or fewer below 2^35). */
static inline int vt_packed_addr48(uint64_t addr)
{
	return (addr >> 42) != 0 && (addr >> 48) == 0;
}

/* The low 6 bytes of v at p, little-endian. Writes 8: the top two are 0
 * for a v below 2^48, so they are padding or are overwritten by the next
 * field, and out[] holds VT_PACKED_MAX_SIZE bytes (the writer reserves that
 * much room), far past the 45 a record with a 6-byte address can reach. */
static inline uint8_t *vt_put_addr48(uint8_t *p, uint64_t v)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	memcpy(p, &v, 8);
#else
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t)(v >> (8 * i));
#endif
	return p + 6;
}

static inline uint8_t *vt_put_varint(uint8_t *p, uint64_t v)
{
	while (v >= 0x80) {
		*p++ = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	*p++ = (uint8_t)v;
	return p;
}

/* Encode ev (an event of `type`) into out[VT_PACKED_MAX_SIZE], header word
 * left 0 for the writer to publish; returns the record's size (multiple of
 * 8). out must be zero beyond what is written (the padding). */
static inline uint32_t vt_packed_encode(uint8_t *out, uint32_t type, const struct vt_event *ev,
                                        uint64_t chunk_first_seq, uint64_t chunk_first_t_ns)
{
	uint8_t present =
	    (uint8_t)((ev->rt_api ? VT_PK_RT_API : 0) |
	              (ev->device != vt_packed_default_device(type) ? VT_PK_DEVICE : 0) |
	              (ev->kind ? VT_PK_KIND : 0) | (ev->bytes ? VT_PK_BYTES : 0) |
	              (ev->aux ? VT_PK_AUX : 0) | (ev->stream ? VT_PK_STREAM : 0) |
	              (ev->result ? VT_PK_RESULT : 0) |
	              (vt_packed_addr48(ev->addr) ? VT_PK_ADDR48 : 0));
	out[4] = (uint8_t)type;
	out[5] = ev->api;
	out[6] = present;
	uint8_t *p = out + VT_PACKED_FIXED;
	p = vt_put_varint(p, ev->stack_id);
	p = vt_put_varint(p, vt_zigzag((int64_t)(ev->seq - chunk_first_seq)));
	p = vt_put_varint(p, vt_zigzag((int64_t)(ev->t_ns - chunk_first_t_ns)));
	p = present & VT_PK_ADDR48 ? vt_put_addr48(p, ev->addr) : vt_put_varint(p, ev->addr);
	if (present & VT_PK_RT_API)
		*p++ = ev->rt_api;
	if (present & VT_PK_DEVICE)
		*p++ = ev->device;
	if (present & VT_PK_KIND)
		*p++ = ev->kind;
	if (present & VT_PK_BYTES)
		p = vt_put_varint(p, ev->bytes);
	if (present & VT_PK_AUX)
		p = vt_put_varint(p, ev->aux);
	if (present & VT_PK_STREAM)
		p = vt_put_varint(p, ev->stream);
	if (present & VT_PK_RESULT)
		p = vt_put_varint(p, vt_zigzag(ev->result));
	return ((uint32_t)(p - out) + 7u) & ~7u;
}

/* Bounded LEB128 read: 0 on success, -1 past end or longer than 10 bytes. */
static inline int vt_get_varint(const uint8_t **p, const uint8_t *end, uint64_t *out)
{
	uint64_t v = 0;
	for (unsigned shift = 0; shift < 70; shift += 7) {
		if (*p >= end)
			return -1;
		uint8_t b = *(*p)++;
		v |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80)) {
			*out = v;
			return 0;
		}
	}
	return -1;
}

static inline int vt_packed_type_ok(uint32_t type)
{
	return type >= VT_REC_ALLOC && type <= VT_REC_POOL_TRIM;
}

/* Eight bytes of p, little-endian whatever the host. On a little-endian
 * host a memcpy: GCC merges the byte-by-byte form into one load only where
 * it sees the address's alignment pattern, and at the padding check
 * (to - 8) it kept eight loads, shifts and ors, a tenth of the decoding. */
static inline uint64_t vt_packed_le64(const uint8_t *p)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	uint64_t v;
	memcpy(&v, p, 8);
	return v;
#else
	return (uint64_t)p[0] | (uint64_t)p[1] << 8 | (uint64_t)p[2] << 16 | (uint64_t)p[3] << 24 |
	       (uint64_t)p[4] << 32 | (uint64_t)p[5] << 40 | (uint64_t)p[6] << 48 |
	       (uint64_t)p[7] << 56;
#endif
}

/* One varint at p (8 bytes from p are readable). Why not the byte loop: a
 * record holds 5-8 varints of 1-7 bytes, and a branch per byte mispredicts
 * on every length change; here a varint of up to 8 bytes is one load, a mask and three
 * shift steps that squeeze the 7-bit groups together (one PEXT where this is
 * compiled with BMI2: the analyzer's reader picks that form on CPUs where PEXT
 * is fast, see analyzer/packed_decode.h). NULL: the varint does
 * not end before end (the bytes after end may be anything). */
static inline const uint8_t *vt_packed_varint(const uint8_t *p, const uint8_t *end, uint64_t *out)
{
	uint64_t x = vt_packed_le64(p);
	uint64_t stop = ~x & 0x8080808080808080ull; /* bytes without the "more" bit */
	if (__builtin_expect(stop == 0, 0))
		return vt_get_varint(&p, end, out) ? NULL : p;
	const uint8_t *next =
	    p + ((size_t)__builtin_ctzll(stop) >> 3) + 1; /* size_t: no sign extension */
	if (__builtin_expect(next > end, 0))
		return NULL;
	x &= stop ^ (stop - 1); /* the bytes up to and including the last one */
#if defined(__BMI2__)
	x = _pext_u64(x, 0x7f7f7f7f7f7f7f7full);
#else
	x = ((x & 0x7f007f007f007f00ull) >> 1) | (x & 0x007f007f007f007full);
	x = ((x & 0x3fff00003fff0000ull) >> 2) | (x & 0x00003fff00003fffull);
	x = ((x & 0x0fffffff00000000ull) >> 4) | (x & 0x000000000fffffffull);
#endif
	*out = x;
	return next;
}

/* Are buf[from..to) all zero? (the padding; the encoder leaves under 8) */
static inline int vt_packed_zero(const uint8_t *from, const uint8_t *to)
{
	size_t n = (size_t)(to - from);
	if (n < 8) /* to - 8 is inside the record (size >= 16); the top n bytes */
		return (vt_packed_le64(to - 8) & ~(~0ull >> (8 * n))) == 0;
	while (from < to)
		if (*from++)
			return 0;
	return 1;
}

/* What the fixed part of a packed record says wrong (size, event type,
 * all 8 field bits are defined), or NULL: the check a reader can make
 * without decoding. */
static inline const char *vt_packed_header_problem(const uint8_t *rec, uint32_t size)
{
	if (size < 16 || size > VT_PACKED_MAX_SIZE || (size & 7u))
		return "bad size";
	if (!vt_packed_type_ok(rec[4]))
		return "not an event type";
	return NULL;
}

/* Decode the fields of the packed record buf[0..size) whose fixed part is
 * sound (vt_packed_header_problem said so) and after which 8 more bytes are
 * readable. Returns NULL, or a static description of what is wrong. The
 * part of vt_packed_decode a reader whose index already checked the fixed
 * parts calls record after record (vt_packed_decode_run). */
static inline __attribute__((always_inline)) const char *
vt_packed_decode_fields(const uint8_t *buf, uint32_t size, uint64_t chunk_first_seq,
                        uint64_t chunk_first_t_ns, struct vt_event *ev)
{
	uint32_t type = buf[4];
	uint8_t present = buf[6];
	const uint8_t *p = buf + VT_PACKED_FIXED, *end = buf + size;
	uint64_t stack, dseq, dt, addr, v;
	if (!(p = vt_packed_varint(p, end, &stack)) || !(p = vt_packed_varint(p, end, &dseq)) ||
	    !(p = vt_packed_varint(p, end, &dt)))
		return "field runs past the record";
	if (present & VT_PK_ADDR48) { /* p <= end: its 8 bytes are readable */
		addr = vt_packed_le64(p) & 0xffffffffffffull;
		if ((p += 6) > end)
			return "field runs past the record";
	} else if (!(p = vt_packed_varint(p, end, &addr))) {
		return "field runs past the record";
	}
	*ev = (struct vt_event){
	    .hdr = VT_HDR(type, sizeof *ev),
	    .stack_id = (uint32_t)stack,
	    .seq = chunk_first_seq + (uint64_t)vt_unzigzag(dseq),
	    .t_ns = chunk_first_t_ns + (uint64_t)vt_unzigzag(dt),
	    .addr = addr,
	    .api = buf[5],
	};
	if (present & VT_PK_RT_API)
		ev->rt_api = *p++;
	ev->device = present & VT_PK_DEVICE ? *p++ : vt_packed_default_device(type);
	if (present & VT_PK_KIND)
		ev->kind = *p++;
	if (p > end) /* keeps every later load within 8 bytes of end */
		return "field runs past the record";
	if ((present & VT_PK_BYTES) && !(p = vt_packed_varint(p, end, &ev->bytes)))
		return "field runs past the record";
	/* an allocation or a free has none of the last three: one test */
	if (__builtin_expect(present & (VT_PK_AUX | VT_PK_STREAM | VT_PK_RESULT), 0)) {
		if ((present & VT_PK_AUX) && !(p = vt_packed_varint(p, end, &ev->aux)))
			return "field runs past the record";
		if ((present & VT_PK_STREAM) && !(p = vt_packed_varint(p, end, &ev->stream)))
			return "field runs past the record";
		if (present & VT_PK_RESULT) {
			if (!(p = vt_packed_varint(p, end, &v)))
				return "field runs past the record";
			ev->result = (int32_t)vt_unzigzag(v);
		}
	}
	if (stack > UINT32_MAX)
		return "field runs past the record";
	return vt_packed_zero(p, end) ? NULL : "non-zero padding";
}

/* Decode the packed record rec[0..size) into the vt_event it stands for
 * (its header word says the event's own type and 64 bytes). readable: how
 * many bytes from rec may be read (>= size); with 8 to spare the record is
 * read in place, else (the end of a mapping) from a zero-filled copy.
 * Returns NULL, or a static description of what is wrong: the caller skips
 * the record.
 * tests/log/test_log_packed.c holds a byte-at-a-time reference decoder and
 * checks this one against it on valid and damaged records. */
static inline const char *vt_packed_decode(const uint8_t *rec, uint32_t size, uint64_t readable,
                                           uint64_t chunk_first_seq, uint64_t chunk_first_t_ns,
                                           struct vt_event *ev)
{
	const char *problem = vt_packed_header_problem(rec, size);
	if (problem)
		return problem;
	if (readable < size)
		return "bad size";
	uint8_t copy[VT_PACKED_MAX_SIZE + 8];
	const uint8_t *buf = rec;
	if (readable < (uint64_t)size + 8) { /* rare: keep the 8-byte loads inside */
		memset(copy, 0, sizeof copy);
		memcpy(copy, rec, size);
		buf = copy;
	}
	return vt_packed_decode_fields(buf, size, chunk_first_seq, chunk_first_t_ns, ev);
}

/* Decode the run of packed records from *p on into out[], up to max of
 * them: a reader's loop over a chunk whose index checked every record's
 * size and every packed record's fixed part (vt_packed_header_problem) at
 * open, so only the fields are left to check, and one call decodes many
 * records (called per record, the call and the fixed part's checks were a
 * fifth of the decoding). [*p, end): records so checked; readable_end: the
 * end of what may be read (>= end). Stops before a record that is not packed, one
 * without 8 readable bytes after it (vt_packed_decode reads it from a copy)
 * and one that does not decode: the caller takes those one at a time.
 * Returns how many were decoded, each record after the one before, and
 * moves *p past them (the caller need not walk their sizes again). */
static inline uint32_t vt_packed_decode_run(const uint8_t **p, const uint8_t *end,
                                            const uint8_t *readable_end, uint64_t chunk_first_seq,
                                            uint64_t chunk_first_t_ns, struct vt_event *out,
                                            uint32_t max)
{
	const uint8_t *at = *p;
	/* every record ends by end: with 8 bytes readable past it, each one
	 * has its 8 (one test a run, not a subtraction and a test a record) */
	const int room = readable_end - end >= 8;
	uint32_t n = 0;
	while (n < max && at < end) {
		/* acquire, as every reader's load of a header word: it pairs
		 * with the writer's release store of it */
		uint32_t word =
		    __atomic_load_n((const uint32_t *)(const void *)at, __ATOMIC_ACQUIRE);
		uint32_t size = VT_HDR_SIZE(word);
		if (VT_HDR_TYPE(word) != VT_REC_PACKED ||
		    (!room && (uint64_t)(readable_end - at) < (uint64_t)size + 8) ||
		    vt_packed_decode_fields(at, size, chunk_first_seq, chunk_first_t_ns, &out[n]))
			break;
		n++;
		/* ahead across the page's end, where the hardware's
		 * prefetcher stops (a read ahead never faults) */
		__builtin_prefetch(at + 2048);
		at += size;
	}
	*p = at;
	return n;
}

#endif
