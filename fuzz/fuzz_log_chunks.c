/* Fuzz target: the input is everything after a VALID file header (chunk size
 * 8192, the writer's minimum), so the fuzzer spends its effort on chunk
 * headers, record words, length fields and the merge instead of on the
 * 4 KiB header it would rarely get right. */
#include <string.h>

#include "fuzz_common.h"
#include "vramtrace/format.h"

static const uint8_t *valid_header(void)
{
	static uint8_t page[VT_HEADER_SIZE];
	struct vt_file_header *h = (struct vt_file_header *)(void *)page;
	if (h->version == 0) {
		memcpy(h->magic, VT_MAGIC, VT_MAGIC_LEN);
		h->version = VT_FORMAT_VERSION;
		h->byte_order = VT_BYTE_ORDER_MARK;
		h->header_size = VT_HEADER_SIZE;
		h->chunk_size = 8192;
		h->pid = 4242;
		h->ppid = 1;
		h->clock_base_ns = 1000000000ull;
		h->state = VT_STATE_WORD(VT_STATE_RUNNING, 0);
	}
	return page;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fz_quiet_stdout();
	fz_dump(fz_file(valid_header(), VT_HEADER_SIZE, data, size), (int)(size & 1));
	return 0;
}
