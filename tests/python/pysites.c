/* pysites DIR: each event's site and full stack as the reports get them
 * (analyzer/sites.h: vt_sites_of_event, vt_sites_print_stack, which merge
 * Python frames through analyzer/pystack.c), one JSON line per event:
 *   {"log":0,"type":"copy","bytes":8388608,"site":"upload (/x/e2e_data.py:33)",
 *    "stack":["#0   ffi_call (libffi.so.8)", ..., "py * upload (/x/e2e_data.py:33)", ...]}
 * e2e_check.py asserts on it. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log_reader.h"
#include "trace_dir.h"
#include "sites.h"

struct ctx {
	struct vt_sites sites;
	uint32_t log_index;
};

static void json_str(const char *s, size_t n)
{
	putchar('"');
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		if (c == '"' || c == '\\')
			printf("\\%c", c);
		else if (c < 0x20)
			printf("\\u%04x", c);
		else
			putchar(c);
	}
	putchar('"');
}

static int on_record(const struct vt_record_view *v, void *p)
{
	static const char *const names[] = {"", "alloc", "free", "copy", "map", "unmap",
					    "reserve", "unreserve", "memset", "pool_trim"};
	struct ctx *c = p;
	if (v->type < VT_REC_ALLOC || v->type > VT_REC_POOL_TRIM)
		return 0;
	const struct vt_event *ev = v->data;
	const char *site = vt_sites_of_event(&c->sites, c->log_index, ev->stack_id);
	printf("{\"log\":%u,\"type\":\"%s\",\"bytes\":%llu,\"site\":", c->log_index, names[v->type],
	       (unsigned long long)ev->bytes);
	json_str(site, strlen(site));
	printf(",\"stack\":[");
	char *text = NULL;
	size_t len = 0;
	FILE *mem = open_memstream(&text, &len);
	if (!mem)
		return 1;
	uint32_t canonical = vt_stack_store_canonical(c->sites.store, c->log_index, ev->stack_id);
	vt_sites_print_stack(&c->sites, canonical, mem, "");
	fclose(mem);
	int first = 1;
	for (char *line = text, *end; line && *line; line = end + 1) {
		end = strchr(line, '\n');
		if (!end)
			end = line + strlen(line) - 1;
		if (!first)
			putchar(',');
		json_str(line, (size_t)(end - line) + (*end != '\n'));
		first = 0;
	}
	free(text);
	printf("]}\n");
	return 0;
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: pysites TRACE_DIR\n");
		return 2;
	}
	struct vt_trace t;
	char err[256];
	if (vt_trace_open(argv[1], &t, err, sizeof err)) {
		fprintf(stderr, "pysites: %s\n", err);
		return 1;
	}
	struct ctx c;
	if (vt_sites_open(&c.sites, &t, 0, err, sizeof err)) {
		fprintf(stderr, "pysites: %s\n", err);
		return 1;
	}
	for (size_t i = 0; i < t.nlogs; i++) {
		c.log_index = (uint32_t)i;
		vt_log_for_each(t.logs[i], on_record, &c);
	}
	vt_sites_close(&c.sites);
	vt_trace_close(&t);
	return 0;
}
