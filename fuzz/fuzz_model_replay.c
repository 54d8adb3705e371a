/* Fuzz target: the model replay and everything `vramtrace report` builds on
 * it (steps, classification, flags, sites, text and JSON). The input is the
 * chunk area after a valid header, as in fuzz_log_chunks, so records reach
 * the model in every order and with every value the reader lets through.
 * The input's size picks the output (text / --json) and --at (peak / end /
 * a time), so all of the report's paths are exercised. The streaming
 * model replays the same input and must find the same peak and end bytes
 * on every device (one process: both are exact): a difference aborts. */
#include <stdlib.h>
#include <string.h>

#include "fuzz_common.h"
#include "model.h"
#include "model_load.h"
#include "model_stream.h"
#include "vramtrace/format.h"

/* Not through commands.h: a weak reference would not pull cmd_report.o in. */
int cmd_report(int argc, char **argv);

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
		h->state = VT_STATE_WORD(VT_STATE_EXITED, 0);
	}
	return page;
}

/* The differential check: full and streaming model, device by device. */
static void same_peaks(const char *path)
{
	char err[256];
	struct vt_model *full = vt_model_load_trace(path, err, sizeof err);
	struct vt_model *sm = vt_model_load_trace_streaming(path, err, sizeof err);
	for (int d = 0; full && sm && d < VT_MAX_DEVICES; d++)
		if (full->devices[d].peak_bytes != sm->devices[d].peak_bytes ||
		    full->devices[d].peak_seq != sm->devices[d].peak_seq ||
		    full->devices[d].end_bytes != sm->devices[d].end_bytes)
			abort();
	vt_model_free(full);
	vt_model_free(sm);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fz_quiet_stdout();
	const char *path = fz_file(valid_header(), VT_HEADER_SIZE, data, size);
	static const char *const at[] = {NULL, "end", "0.000004"};
	char *argv[6] = {"report", (char *)path};
	int argc = 2;
	if (size & 1)
		argv[argc++] = "--json";
	if (at[size / 2 % 3]) {
		argv[argc++] = "--at";
		argv[argc++] = (char *)at[size / 2 % 3];
	}
	argv[argc] = NULL;
	cmd_report(argc, argv);
	char *stream_argv[] = {"report", (char *)path, "--stream", size & 1 ? "--json" : NULL, NULL};
	cmd_report(size & 1 ? 4 : 3, stream_argv);
	same_peaks(path);
	return 0;
}
