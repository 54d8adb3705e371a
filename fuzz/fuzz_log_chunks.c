/* Fuzz target: the input is everything after a VALID file header (chunk size
 * 8192, the writer's minimum), so the fuzzer spends its effort on chunk
 * headers, record words, length fields, seals and the merge instead of on
 * the 4 KiB header it would rarely get right. The input's length picks the
 * variant: bit 0 text or JSON, bit 1 a log whose writer seals (VT_FLAG_SEALS),
 * bit 2 every whole chunk given the seal a writer would have written over
 * its bytes (a fuzzer seldom finds a CRC itself), bit 3 a header that counts
 * more chunks than the input holds. */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_common.h"
#include "vramtrace/crc32c.h"
#include "vramtrace/format.h"

#define CHUNK 8192u

static const uint8_t *valid_header(void)
{
	static uint8_t page[VT_HEADER_SIZE];
	struct vt_file_header *h = (struct vt_file_header *)(void *)page;
	if (h->version == 0) {
		memcpy(h->magic, VT_MAGIC, VT_MAGIC_LEN);
		h->version = VT_FORMAT_VERSION;
		h->byte_order = VT_BYTE_ORDER_MARK;
		h->header_size = VT_HEADER_SIZE;
		h->chunk_size = CHUNK;
		h->pid = 4242;
		h->ppid = 1;
		h->clock_base_ns = 1000000000ull;
		h->state = VT_STATE_WORD(VT_STATE_RUNNING, 0);
	}
	return page;
}

/* The seal the writer would put on chunk c: records walked while their
 * sizes are sane, up to the seal's room. */
static void seal_chunk(uint8_t *c)
{
	uint32_t pos = sizeof(struct vt_chunk_header), records = 0;
	while (pos + 4 <= CHUNK - VT_SEAL_SIZE) {
		uint32_t word;
		memcpy(&word, c + pos, sizeof word);
		uint32_t n = VT_HDR_SIZE(word);
		if (!word || n < 8 || n % 8 || pos + n > CHUNK - VT_SEAL_SIZE)
			break;
		pos += n;
		records++;
	}
	struct vt_chunk_seal seal = {.magic = VT_SEAL_MAGIC,
	                             .records = records,
	                             .bytes = pos,
	                             .crc = vt_crc32c(c, pos),
	                             .reason = VT_SEAL_FULL};
	seal.seal_crc = vt_crc32c(&seal.magic, offsetof(struct vt_chunk_seal, seal_crc) -
	                                           offsetof(struct vt_chunk_seal, magic));
	seal.hdr = VT_HDR(VT_REC_SEAL, VT_SEAL_SIZE);
	memcpy(c + CHUNK - VT_SEAL_SIZE, &seal, sizeof seal);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fz_quiet_stdout();
	uint8_t header[VT_HEADER_SIZE];
	memcpy(header, valid_header(), sizeof header);
	struct vt_file_header *h = (struct vt_file_header *)(void *)header;
	h->flags = size & 2 ? VT_FLAG_SEALS : 0;
	h->chunks_claimed = (size + CHUNK - 1) / CHUNK + (size & 8 ? 3 : 0);
	uint8_t *body = malloc(size ? size : 1);
	if (!body)
		return 0;
	memcpy(body, data, size);
	for (size_t off = 0; (size & 4) && off + CHUNK <= size; off += CHUNK)
		seal_chunk(body + off);
	fz_dump(fz_file(header, VT_HEADER_SIZE, body, size), (int)(size & 1));
	free(body);
	return 0;
}
