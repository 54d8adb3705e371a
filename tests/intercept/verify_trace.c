/* verify_trace DIR TRUTH [--logs N] [--strict] [--truth-lines N]: does the trace hold every
 * allocation, free and host-to-device copy of the truth file (written by the
 * clients) exactly once, in the log of the right process, with the right API,
 * address, size, device and result? "ev" truth lines name every field of one
 * event. Failed allocations need an OOM meminfo record. --strict: every event
 * of the trace must be in the truth (default: allocs, frees and H2D copies).
 * Prints the lookup counts per path. Exit 0 = all good. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log_reader.h"
#include "trace_dir.h"

static const char *const api_names[256] = {
#define VT_API(id, sym, cls) [id] = #sym,
#include "vramtrace/api.def"
};
static const char *const rt_names[256] = {
    [0] = "-",
#define VT_RT(id, sym) [id] = #sym,
#include "vramtrace/runtime_api.def"
};

struct ev {
	int pid;
	uint32_t type;
	uint8_t api, device, kind, rt;
	int32_t result;
	uint64_t addr, bytes, aux;
	int matched;
};

enum {
	F_BYTES = 1,
	F_AUX = 2,
	F_KIND = 4,
	F_RESULT = 8,
	F_RT = 16
}; /* fields a truth line fixes */

struct collected {
	struct ev *evs;
	size_t n, cap;
	int pid;                /* of the log being read */
	unsigned lookups[3][5]; /* path x outcome */
	unsigned oom_records;
	const struct vt_log *log; /* being read */
	unsigned free_form_bad;   /* frees not in the form the shim should pick */
};

static int collect(const struct vt_record_view *rec, void *ctx)
{
	struct collected *c = ctx;
	if (rec->type == VT_REC_LOOKUP) {
		const struct vt_lookup_rec *l = rec->data;
		if (l->path < 3 && l->outcome < 5)
			c->lookups[l->path][l->outcome]++;
	} else if (rec->type == VT_REC_MEMINFO) {
		const struct vt_meminfo_rec *m = rec->data;
		c->oom_records += m->reason == VT_MEMINFO_OOM;
	} else if (rec->type >= VT_REC_ALLOC && rec->type <= VT_REC_POOL_TRIM) {
		const struct vt_event *e = rec->data;
		/* the shim writes every event packed: less than the 64 bytes of
		 * the plain form (a free of a plain address in at most 32) */
		uint32_t stored = vt_log_stored_size(c->log, rec);
		if (stored >= 64u ||
		    (rec->type == VT_REC_FREE && !(e->bytes | e->aux | e->stream) && stored > 32u))
			c->free_form_bad++;
		if (c->n == c->cap) {
			c->cap = c->cap ? 2 * c->cap : 1024;
			c->evs = realloc(c->evs, c->cap * sizeof *c->evs);
			if (!c->evs)
				abort();
		}
		c->evs[c->n++] =
		    (struct ev){c->pid,    rec->type, e->api,   e->device, e->kind, e->rt_api,
		                e->result, e->addr,   e->bytes, e->aux,    0};
	}
	return 0;
}

static int name_id(const char *const *names, const char *name)
{
	for (int i = 0; i < 256; i++)
		if (names[i] && !strcmp(names[i], name))
			return i;
	return -1;
}

/* Mark the one unmatched event equal to the expectation; 0 if none. */
static int match(struct collected *c, const struct ev *want, unsigned fields)
{
	for (size_t i = 0; i < c->n; i++) {
		struct ev *e = &c->evs[i];
		if (e->matched || e->pid != want->pid || e->type != want->type ||
		    e->api != want->api || e->addr != want->addr || e->device != want->device ||
		    ((fields & F_BYTES) && e->bytes != want->bytes) ||
		    ((fields & F_AUX) && e->aux != want->aux) ||
		    ((fields & F_KIND) && e->kind != want->kind) ||
		    ((fields & F_RESULT) && e->result != want->result) ||
		    ((fields & F_RT) && e->rt != want->rt))
			continue;
		e->matched = 1;
		return 1;
	}
	return 0;
}

/* One truth line into an expectation; returns the fields it fixes, or -1. */
static int parse_truth(const char *line, struct ev *want, unsigned *want_oom)
{
	char what[16], api[64], rt[64] = "";
	unsigned long long addr = 0, bytes = 0, aux = 0;
	int pid, dev = 0, result = 0;
	unsigned type = 0, kind = 0, fields;
	if (sscanf(line, "%15s %d", what, &pid) != 2)
		return -1;
	int named = !strcmp(what, "ev") ? sscanf(line, "%*s %*d %u %63s", &type, api) == 2
	                                : sscanf(line, "%*s %*d %63s", api) == 1;
	if (!named)
		return -1;
	if (!strcmp(what, "alloc")) {
		if (sscanf(line, "%*s %*d %*s %llu %llu %d %d", &addr, &bytes, &dev, &result) != 4)
			return -1;
		type = VT_REC_ALLOC;
		fields = F_BYTES | F_RESULT;
		*want_oom += result == 2;
	} else if (!strcmp(what, "free")) {
		if (sscanf(line, "%*s %*d %*s %llu %d", &addr, &dev) != 2)
			return -1;
		type = VT_REC_FREE;
		fields = 0;
	} else if (!strcmp(what, "htod")) {
		if (sscanf(line, "%*s %*d %*s %llu %llu %d", &addr, &bytes, &dev) != 3)
			return -1;
		type = VT_REC_COPY;
		kind = VT_COPY_HTOD;
		fields = F_BYTES | F_KIND;
	} else if (!strcmp(what, "ev")) {
		int n = sscanf(line, "%*s %*d %*u %*s %llu %llu %llu %u %d %d %63s", &addr, &bytes,
		               &aux, &kind, &dev, &result, rt);
		if (n < 6 || (n == 7 && name_id(rt_names, rt) < 0))
			return -1;
		fields = F_BYTES | F_AUX | F_KIND | F_RESULT | (n == 7 ? F_RT : 0);
		*want_oom += type == VT_REC_ALLOC && result == 2;
	} else {
		return -1;
	}
	/* a release names no device: the shim does not ask the driver on a free
	 * (the allocation's record says where the bytes were) */
	if (type == VT_REC_FREE || type == VT_REC_UNMAP || type == VT_REC_UNRESERVE)
		dev = VT_DEVICE_UNKNOWN;
	*want = (struct ev){.pid = pid,
	                    .type = type,
	                    .api = (uint8_t)name_id(api_names, api),
	                    .device = (uint8_t)dev,
	                    .kind = (uint8_t)kind,
	                    .rt = (uint8_t)(rt[0] ? name_id(rt_names, rt) : 0),
	                    .result = result,
	                    .addr = addr,
	                    .bytes = bytes,
	                    .aux = aux};
	return (int)fields;
}

static int check_truth(struct collected *c, const char *truth_path, unsigned *want_oom,
                       long want_lines)
{
	FILE *f = fopen(truth_path, "r");
	if (!f) {
		perror(truth_path);
		return 1;
	}
	char line[512];
	int bad = 0, lines = 0;
	while (fgets(line, sizeof line, f)) {
		struct ev want;
		int fields = parse_truth(line, &want, want_oom);
		lines++;
		if (fields < 0 || !match(c, &want, (unsigned)fields)) {
			fprintf(stderr, "verify: not in the trace (exactly once): %s", line);
			bad++;
		}
	}
	fclose(f);
	printf("verify: %d truth lines, %d missing\n", lines, bad);
	if (want_lines >= 0 && lines != want_lines) {
		fprintf(stderr, "verify: %d truth lines, want %ld\n", lines, want_lines);
		return 1;
	}
	return bad || lines == 0;
}

/* Every alloc/free/H2D copy event must be explained by the truth. */
static int check_extra(const struct collected *c, int strict)
{
	int bad = 0;
	for (size_t i = 0; i < c->n; i++) {
		const struct ev *e = &c->evs[i];
		int counted = e->type == VT_REC_ALLOC || e->type == VT_REC_FREE ||
		              (e->type == VT_REC_COPY && e->kind == VT_COPY_HTOD);
		if (e->matched || (!strict && !counted))
			continue;
		fprintf(stderr, "verify: extra event type %u api %s addr %llu bytes %llu pid %d\n",
		        e->type, api_names[e->api] ? api_names[e->api] : "?",
		        (unsigned long long)e->addr, (unsigned long long)e->bytes, e->pid);
		bad++;
	}
	return bad;
}

static void print_lookups(const struct collected *c)
{
	static const char *paths[] = {"dlsym", "cuGetProcAddress", "cuGetProcAddress_v2"};
	for (int p = 0; p < 3; p++)
		printf(
		    "lookups %s: routed %u, routed by name %u, passed %u, unrouted %u, failed %u\n",
		    paths[p], c->lookups[p][0], c->lookups[p][1], c->lookups[p][2],
		    c->lookups[p][3], c->lookups[p][4]);
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr,
		        "usage: verify_trace DIR TRUTH [--logs N] [--strict] [--truth-lines N]\n");
		return 2;
	}
	long want_logs = -1, want_lines = -1;
	int strict = 0;
	for (int i = 3; i < argc; i++) {
		if (!strcmp(argv[i], "--strict"))
			strict = 1;
		else if (!strcmp(argv[i], "--logs") && i + 1 < argc)
			want_logs = strtol(argv[++i], NULL, 10);
		else if (!strcmp(argv[i], "--truth-lines") && i + 1 < argc)
			want_lines = strtol(argv[++i], NULL, 10);
	}
	struct vt_trace trace;
	char err[256];
	if (vt_trace_open(argv[1], &trace, err, sizeof err)) {
		fprintf(stderr, "verify: %s\n", err);
		return 1;
	}
	struct collected c = {0};
	for (size_t i = 0; i < trace.nlogs; i++) {
		c.pid = vt_log_header(trace.logs[i])->pid;
		c.log = trace.logs[i];
		vt_log_for_each(trace.logs[i], collect, &c);
		if (vt_log_warnings(trace.logs[i]))
			fprintf(stderr, "verify: %s has damage warnings\n",
			        vt_log_path(trace.logs[i]));
	}
	unsigned want_oom = 0;
	int bad = check_truth(&c, argv[2], &want_oom, want_lines);
	bad |= check_extra(&c, strict) != 0;
	if (c.free_form_bad) {
		fprintf(stderr, "verify: %u events not in their packed form\n", c.free_form_bad);
		bad = 1;
	}
	if (c.oom_records != want_oom) {
		fprintf(stderr, "verify: %u OOM meminfo records, want %u\n", c.oom_records,
		        want_oom);
		bad = 1;
	}
	if (want_logs >= 0 && (long)trace.nlogs != want_logs) {
		fprintf(stderr, "verify: %zu logs, want %ld\n", trace.nlogs, want_logs);
		bad = 1;
	}
	printf("verify: %zu logs, %zu events, %u OOM records\n", trace.nlogs, c.n, c.oom_records);
	print_lookups(&c);
	vt_trace_close(&trace);
	free(c.evs);
	return bad;
}
