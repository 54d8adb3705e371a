/* Test tool: a raw record stream (what fakecuda.c writes: records back to
 * back, no file header) replayed into the model as one process and reported
 * exactly as `vramtrace report` would.
 *   report_records FILE [--json] [--allocs] [--at X] [--top N] */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model.h"
#include "model_history.h"
#include "report.h"
#include "report_json.h"
#include "report_text.h"

static int feed_file(struct vt_model *m, const char *path)
{
	FILE *f = fopen(path, "rb");
	if (!f) {
		perror(path);
		return -1;
	}
	struct vt_file_header h;
	memset(&h, 0, sizeof h);
	h.pid = 1;
	h.state = VT_STATE_WORD(VT_STATE_EXITED, 0);
	snprintf(h.exe, sizeof h.exe, "trainer");
	h.exe_len = 7;
	uint32_t p = vt_model_begin_process(m, &h, 0);
	static uint64_t buf[VT_MAX_RECORD_SIZE / 8 + 1];
	uint32_t hdr;
	while (fread(&hdr, 4, 1, f) == 1) {
		uint32_t size = VT_HDR_SIZE(hdr);
		if (size < 8 || size % 8 || size > VT_MAX_RECORD_SIZE) {
			fprintf(stderr, "%s: bad record size %u\n", path, size);
			fclose(f);
			return -1;
		}
		buf[0] = hdr;
		if (fread((char *)buf + 4, size - 4, 1, f) != 1)
			break;
		vt_model_feed(m, p, VT_HDR_TYPE(hdr), buf, size);
	}
	fclose(f);
	vt_model_end_process(m, p);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: report_records FILE [--json] [--allocs] [--at X] [--top N]\n");
		return 2;
	}
	struct vt_report_options opt = {.top = 10, .title = argv[1]};
	for (int i = 2; i < argc; i++) {
		if (!strcmp(argv[i], "--json"))
			opt.json = 1;
		else if (!strcmp(argv[i], "--allocs"))
			opt.with_allocs = 1;
		else if (!strcmp(argv[i], "--at") && i + 1 < argc)
			opt.at = argv[++i];
		else if (!strcmp(argv[i], "--top") && i + 1 < argc)
			opt.top = atoi(argv[++i]);
	}
	struct vt_model *m = vt_model_new();
	if (!m || feed_file(m, argv[1]) != 0)
		return 1;
	vt_model_finish(m);
	struct vt_report r;
	char err[256];
	if (vt_report_build(&r, m, &opt, err, sizeof err) != 0) {
		fprintf(stderr, "%s\n", err);
		return 2;
	}
	int rc = opt.json ? vt_report_write_json(&r, stdout) : vt_report_write_text(&r, stdout);
	vt_report_free(&r);
	vt_model_free(m);
	return rc ? 1 : 0;
}
