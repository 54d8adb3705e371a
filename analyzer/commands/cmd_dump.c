/* `vramtrace dump DIR|LOG [--json]`: every log's header, then every record,
 * one a line. Text is `kind key=value ...`; --json gives one JSON object per
 * line with the same keys. One printer per record kind writes through a
 * small emitter, so the two formats never drift apart. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "rank_env.h" /* the log writer's names of the rank variables */
#include "commands.h"
#include "json_out.h"
#include "log_reader.h"
#include "trace_dir.h"
#include "record_text.h"
#include "sites.h"

struct emit {
	FILE *out;
	int json;
	int nfields;
};

/* ---- the emitter ------------------------------------------------------------ */

static void e_begin(struct emit *e, const char *kind)
{
	e->nfields = 0;
	if (e->json) {
		fputs("{\"record\":", e->out);
		vt_json_write_escaped(e->out, kind, strlen(kind));
	} else {
		fputs(kind, e->out);
	}
}

static void e_key(struct emit *e, const char *key)
{
	if (e->json)
		fprintf(e->out, ",\"%s\":", key);
	else
		fprintf(e->out, " %s=", key);
	e->nfields++;
}

static void e_u64(struct emit *e, const char *key, uint64_t v)
{
	e_key(e, key);
	fprintf(e->out, "%" PRIu64, v);
}

static void e_i64(struct emit *e, const char *key, int64_t v)
{
	e_key(e, key);
	fprintf(e->out, "%" PRId64, v);
}

/* Addresses and handles: hex strings (JSON numbers stop being exact at 2^53). */
static void e_hex(struct emit *e, const char *key, uint64_t v)
{
	e_key(e, key);
	fprintf(e->out, e->json ? "\"0x%" PRIx64 "\"" : "0x%" PRIx64, v);
}

/* A string, JSON-quoted in both formats: in the text one a name with
 * spaces or control bytes stays one field. */
static void e_str(struct emit *e, const char *key, const char *s, size_t n)
{
	e_key(e, key);
	vt_json_write_escaped(e->out, s, n);
}

/* A bare word (a name from record_text.h); numbers when it is unknown. */
static void e_name(struct emit *e, const char *key, const char *name, uint64_t v)
{
	if (!name) {
		e_u64(e, key, v);
		return;
	}
	e_key(e, key);
	if (e->json)
		fprintf(e->out, "\"%s\"", name);
	else
		fputs(name, e->out);
}

static void e_bool(struct emit *e, const char *key, int v)
{
	e_key(e, key);
	fputs(v ? (e->json ? "true" : "yes") : (e->json ? "false" : "no"), e->out);
}

static void e_hex_list(struct emit *e, const char *key, const uint8_t *words, size_t n)
{
	e_key(e, key);
	fputs(e->json ? "[" : "", e->out);
	for (size_t i = 0; i < n; i++) {
		uint64_t v;
		memcpy(&v, words + 8 * i, sizeof v);
		fprintf(e->out, e->json ? "%s\"0x%" PRIx64 "\"" : "%s0x%" PRIx64, i ? "," : "", v);
	}
	fputs(e->json ? "]" : "", e->out);
}

static void e_end(struct emit *e)
{
	fputs(e->json ? "}\n" : "\n", e->out);
}

/* ---- record printers -------------------------------------------------------- */

struct dump_ctx {
	struct emit *e;
	const struct vt_log *log;
	uint64_t t_offset; /* this log's clock base - trace start */
	uint64_t records;
	struct vt_sites *sites; /* names each stack's site */
	uint32_t log_index;     /* this log's index in the trace */
};

#define REC(type, rec, view)                                                                       \
	type rec;                                                                                  \
	memcpy(&rec, (view)->data, sizeof rec)

static void print_event(struct dump_ctx *c, const struct vt_record_view *v)
{
	REC(struct vt_event, ev, v);
	struct emit *e = c->e;
	e_u64(e, "seq", ev.seq);
	e_u64(e, "t", ev.t_ns + c->t_offset);
	e_name(e, "api", vt_api_name(ev.api), ev.api);
	if (ev.rt_api)
		e_name(e, "rt", vt_rt_api_name(ev.rt_api), ev.rt_api);
	if (ev.device == VT_DEVICE_UNKNOWN)
		e_name(e, "dev", "unknown", 0);
	else
		e_u64(e, "dev", ev.device);
	if (v->type == VT_REC_COPY)
		e_name(e, "kind", vt_copy_dir_name(ev.kind), ev.kind);
	else if (v->type == VT_REC_ALLOC || v->type == VT_REC_FREE)
		e_name(e, "kind", vt_alloc_kind_name(ev.kind), ev.kind);
	e_hex(e, "addr", ev.addr);
	e_u64(e, "bytes", ev.bytes);
	e_hex(e, "aux", ev.aux);
	e_hex(e, "stream", ev.stream);
	e_i64(e, "result", ev.result);
	e_u64(e, "stack", ev.stack_id);
	if (ev.stack_id) {
		const char *site = vt_sites_of_event(c->sites, c->log_index, ev.stack_id);
		e_str(e, "site", site, strlen(site));
	}
}

static void print_py_frames(struct emit *e, const uint8_t *words, size_t n)
{
	e_key(e, "py_frames");
	fputs(e->json ? "[" : "", e->out);
	for (size_t i = 0; i < n; i++) {
		uint64_t a, b;
		memcpy(&a, words + 16 * i, 8);
		memcpy(&b, words + 16 * i + 8, 8);
		unsigned file = (unsigned)(a >> 32), func = (unsigned)a;
		/* format.h: line << 32 | eval_ord << 16 | native_index (0xffff: none) */
		unsigned line = (unsigned)(b >> 32), ord = (unsigned)(b >> 16) & 0xffffu;
		int native = (b & 0xffffu) == 0xffffu ? -1 : (int)(b & 0xffffu);
		if (e->json)
			fprintf(e->out,
			        "%s{\"file\":%u,\"func\":%u,\"line\":%u,\"eval_ord\":%u,"
			        "\"native_index\":%d}",
			        i ? "," : "", file, func, line, ord, native);
		else
			fprintf(e->out, "%s%u/%u:%u@%d", i ? "," : "", file, func, line, native);
	}
	fputs(e->json ? "]" : "", e->out);
}

static void print_stack(struct dump_ctx *c, const struct vt_record_view *v)
{
	REC(struct vt_stack_rec, s, v);
	const uint8_t *words = (const uint8_t *)v->data + sizeof s;
	e_u64(c->e, "id", s.stack_id);
	e_u64(c->e, "depth", s.depth);
	e_hex(c->e, "hash", s.hash);
	e_hex_list(c->e, "frames", words, s.depth);
	const char *site = vt_sites_of_event(c->sites, c->log_index, s.stack_id);
	e_str(c->e, "site", site, strlen(site));
	if (s.py_depth)
		print_py_frames(c->e, words + 8u * s.depth, s.py_depth);
}

static void print_module(struct dump_ctx *c, const struct vt_record_view *v)
{
	REC(struct vt_module_rec, m, v);
	const char *path = (const char *)v->data + sizeof m;
	e_u64(c->e, "seq", m.seq);
	e_name(c->e, "event", vt_module_event_name(m.event), m.event);
	e_u64(c->e, "generation", m.generation);
	e_hex(c->e, "base", m.base);
	e_hex(c->e, "lo", m.lo);
	e_hex(c->e, "hi", m.hi);
	char hex[65] = "";
	for (unsigned i = 0; i < m.build_id_len; i++)
		snprintf(hex + 2 * i, 3, "%02x", m.build_id[i]);
	e_str(c->e, "build_id", hex, strlen(hex));
	e_str(c->e, "path", path, m.path_len);
}

static void print_meminfo(struct dump_ctx *c, const struct vt_record_view *v)
{
	REC(struct vt_meminfo_rec, m, v);
	e_u64(c->e, "seq", m.seq);
	e_u64(c->e, "t", m.t_ns + c->t_offset);
	e_u64(c->e, "dev", m.device);
	e_name(c->e, "reason", vt_meminfo_reason_name(m.reason), m.reason);
	e_u64(c->e, "free", m.free_bytes);
	e_u64(c->e, "total", m.total_bytes);
}

static void print_mark(struct dump_ctx *c, const struct vt_record_view *v)
{
	REC(struct vt_mark_rec, m, v);
	e_u64(c->e, "seq", m.seq);
	e_u64(c->e, "t", m.t_ns + c->t_offset);
	e_name(c->e, "kind", vt_mark_kind_name(m.kind), m.kind);
	e_u64(c->e, "value", m.value);
	e_str(c->e, "text", (const char *)v->data + sizeof m, m.text_len);
}

static void print_thread(struct dump_ctx *c, const struct vt_record_view *v)
{
	REC(struct vt_thread_rec, t, v);
	e_u64(c->e, "thread", t.tid);
	e_str(c->e, "name", (const char *)v->data + sizeof t, t.name_len);
}

static void print_exit(struct dump_ctx *c, const struct vt_record_view *v)
{
	REC(struct vt_exit_rec, x, v);
	e_u64(c->e, "seq", x.seq);
	e_u64(c->e, "t", x.t_ns + c->t_offset);
	e_i64(c->e, "code", x.code);
}

static void print_device(struct dump_ctx *c, const struct vt_record_view *v)
{
	REC(struct vt_device_rec, d, v);
	e_u64(c->e, "ordinal", d.ordinal);
	e_u64(c->e, "total", d.total_bytes);
	e_str(c->e, "name", (const char *)v->data + sizeof d, d.name_len);
}

static void print_lookup(struct dump_ctx *c, const struct vt_record_view *v)
{
	REC(struct vt_lookup_rec, l, v);
	e_name(c->e, "path", vt_lookup_path_name(l.path), l.path);
	e_name(c->e, "outcome", vt_lookup_outcome_name(l.outcome), l.outcome);
	e_name(c->e, "api", l.api ? vt_api_name(l.api) : "none", l.api);
	e_u64(c->e, "version", l.version);
	e_hex(c->e, "flags", l.flags);
	e_str(c->e, "name", (const char *)v->data + sizeof l, l.name_len);
}

static void print_pystr(struct dump_ctx *c, const struct vt_record_view *v)
{
	REC(struct vt_pystr_rec, p, v);
	e_u64(c->e, "id", p.id);
	e_str(c->e, "text", (const char *)v->data + sizeof p, p.len);
}

static void print_note(struct dump_ctx *c, const struct vt_record_view *v)
{
	REC(struct vt_note_rec, n, v);
	e_u64(c->e, "seq", n.seq);
	e_str(c->e, "text", (const char *)v->data + sizeof n, n.len);
}

/* The processes NVML listed, as "pid:bytes:comm,..." (bytes "?" when NVML
 * could not size it). */
static void print_nvml(struct dump_ctx *c, const struct vt_record_view *v)
{
	REC(struct vt_nvml_rec, n, v);
	e_u64(c->e, "seq", n.seq);
	e_u64(c->e, "t", n.t_ns + c->t_offset);
	e_u64(c->e, "dev", n.device);
	e_name(c->e, "reason", vt_meminfo_reason_name(n.reason), n.reason);
	e_u64(c->e, "reading_seq", n.reading_seq);
	e_u64(c->e, "self", n.self_bytes);
	e_u64(c->e, "others", n.others);
	e_u64(c->e, "others_bytes", n.others_bytes);
	char listed[VT_NVML_LISTED * 64] = "";
	size_t len = 0;
	for (uint32_t i = 0; i < n.nlisted && i < VT_NVML_LISTED && len < sizeof listed; i++) {
		struct vt_nvml_proc p;
		memcpy(&p, (const uint8_t *)v->data + sizeof n + i * sizeof p, sizeof p);
		p.comm[sizeof p.comm - 1] = 0;
		char bytes[24] = "?";
		if (p.used_bytes != VT_NVML_UNKNOWN)
			snprintf(bytes, sizeof bytes, "%llu", (unsigned long long)p.used_bytes);
		len += (size_t)snprintf(listed + len, sizeof listed - len, "%s%d:%s:%s",
		                        i ? "," : "", (int)p.pid, bytes, p.comm);
	}
	e_str(c->e, "listed", listed, strlen(listed));
}

typedef void (*printer_fn)(struct dump_ctx *, const struct vt_record_view *);

static const printer_fn printers[] = {
    [VT_REC_ALLOC] = print_event,     [VT_REC_FREE] = print_event,
    [VT_REC_COPY] = print_event,      [VT_REC_MAP] = print_event,
    [VT_REC_UNMAP] = print_event,     [VT_REC_RESERVE] = print_event,
    [VT_REC_UNRESERVE] = print_event, [VT_REC_MEMSET] = print_event,
    [VT_REC_POOL_TRIM] = print_event, [VT_REC_STACK] = print_stack,
    [VT_REC_MODULE] = print_module,   [VT_REC_MEMINFO] = print_meminfo,
    [VT_REC_MARK] = print_mark,       [VT_REC_THREAD] = print_thread,
    [VT_REC_EXIT] = print_exit,       [VT_REC_DEVICE] = print_device,
    [VT_REC_LOOKUP] = print_lookup,   [VT_REC_PYSTR] = print_pystr,
    [VT_REC_NOTE] = print_note,       [VT_REC_NVML] = print_nvml,
};

static int print_record(const struct vt_record_view *v, void *ctx)
{
	struct dump_ctx *c = ctx;
	if (v->type >= sizeof printers / sizeof printers[0] || !printers[v->type])
		return 0; /* the reader only hands out kinds it validated */
	const char *name = vt_rec_name(v->type);
	e_begin(c->e, name ? name : "unknown");
	e_i64(c->e, "pid", vt_log_header(c->log)->pid);
	e_u64(c->e, "tid", v->tid);
	printers[v->type](c, v);
	e_end(c->e);
	c->records++;
	return 0;
}

/* ---- header ---------------------------------------------------------------- */

static void print_cmdline(struct emit *e, const struct vt_file_header *h)
{
	e_key(e, "cmdline");
	if (!e->json) {
		char joined[sizeof h->cmdline];
		memcpy(joined, h->cmdline, h->cmdline_len);
		for (uint32_t i = 0; i < h->cmdline_len; i++)
			if (joined[i] == '\0')
				joined[i] = ' ';
		vt_json_write_escaped(e->out, joined, h->cmdline_len);
		return;
	}
	fputc('[', e->out);
	for (uint32_t i = 0; i < h->cmdline_len;) {
		size_t n = strnlen(h->cmdline + i, h->cmdline_len - i);
		if (i)
			fputc(',', e->out);
		vt_json_write_escaped(e->out, h->cmdline + i, n);
		i += (uint32_t)n + 1;
	}
	fputc(']', e->out);
}

static void print_header(struct emit *e, const struct vt_log *log, uint64_t trace_start)
{
	const struct vt_file_header *h = vt_log_header(log);
	uint32_t state = VT_STATE_OF(h->state);
	e_begin(e, "log");
	e_str(e, "path", vt_log_path(log), strlen(vt_log_path(log)));
	e_i64(e, "pid", h->pid);
	e_i64(e, "ppid", h->ppid);
	e_u64(e, "exec_index", h->exec_index);
	e_str(e, "exe", h->exe, h->exe_len);
	e_name(e, "state", vt_state_name(state), state);
	if (state == VT_STATE_EXITED)
		e_i64(e, "exit_code", VT_EXIT_CODE_OF(h->state));
	e_bool(e, "truncated", (h->flags & VT_FLAG_TRUNCATED) != 0);
	e_u64(e, "dropped", h->events_dropped);
	e_u64(e, "chunks", h->chunks_claimed);
	e_u64(e, "chunk_size", h->chunk_size);
	e_bool(e, "seals", (h->flags & VT_FLAG_SEALS) != 0);
	e_u64(e, "stack_depth", h->stack_depth);
	e_u64(e, "max_size", h->max_size);
	e_u64(e, "start", h->clock_base_ns - trace_start);
	e_u64(e, "realtime_base_ns", h->realtime_base_ns);
	const char *clock = h->flags & VT_FLAG_TSC_CLOCK ? "tsc" : "clock_gettime";
	e_str(e, "clock", clock, strlen(clock));
	e_str(e, "host", h->hostname, strlen(h->hostname));
	if (h->rank_source) { /* the launcher's rank environment (logwriter/rank_env.h) */
		e_u64(e, "rank", h->rank_p1 - 1);
		const char *from = vt_rank_source_variable(h->rank_source);
		e_str(e, "rank_from", from, strlen(from));
	}
	e_u64(e, "warnings", vt_log_warnings(log));
	e_u64(e, "self_calls", h->self_calls); /* the shim's own time: recording_cost.h */
	e_u64(e, "self_timed", h->self_timed);
	e_u64(e, "self_est_ns", h->self_est_ns);
	e_u64(e, "self_tail_calls", h->self_tail_calls);
	e_u64(e, "self_first_calls", h->self_first_calls);
	e_u64(e, "self_first_ns", h->self_first_ns);
	e_u64(e, "stack_captures", h->stack_captures); /* the stack memo: stack_memo.h */
	e_u64(e, "stack_memo_hits", h->stack_memo_hits);
	e_u64(e, "stack_memo_verified", h->stack_memo_verified);
	e_u64(e, "stack_memo_mismatches", h->stack_memo_mismatches);
	print_cmdline(e, h);
	e_end(e);
}

/* ---- chunks: their seals and verdicts ---------------------------------------- */

static const char *const verdict_names[] = {
    [VT_CHUNK_UNSEALED] = "unsealed",
    [VT_CHUNK_SEALED_OK] = "sealed",
    [VT_CHUNK_DAMAGED] = "damaged",
    [VT_CHUNK_CUT] = "cut",
};

static const char *const seal_reason_names[] = {
    [VT_SEAL_FULL] = "full",
    [VT_SEAL_THREAD_EXIT] = "thread_exit",
    [VT_SEAL_PROCESS_EXIT] = "process_exit",
};

static const char *seal_reason_name(uint32_t reason)
{
	return reason < sizeof seal_reason_names / sizeof *seal_reason_names
	           ? seal_reason_names[reason]
	           : NULL;
}

static void print_chunk(struct emit *e, const struct vt_file_header *h,
                        const struct vt_chunk_info *c)
{
	e_begin(e, "chunk");
	e_i64(e, "pid", h->pid);
	e_u64(e, "tid", c->tid);
	e_u64(e, "index", c->index);
	e_u64(e, "offset", c->offset);
	e_name(e, "verdict", verdict_names[c->verdict], c->verdict);
	e_u64(e, "records", c->records);
	e_u64(e, "events", c->events);
	if (c->have_seal) {
		e_u64(e, "seal_records", c->seal.records);
		e_u64(e, "seal_bytes", c->seal.bytes);
		e_hex(e, "seal_crc", c->seal.crc);
		e_name(e, "seal_reason", seal_reason_name(c->seal.reason), c->seal.reason);
	}
	e_end(e);
}

/* Every chunk that holds data, then the chunks the header counts that the
 * file does not hold (one line for all of them). */
static void print_chunks(struct emit *e, const struct vt_log *log)
{
	const struct vt_file_header *h = vt_log_header(log);
	struct vt_chunk_info c;
	for (uint32_t i = 0; vt_log_chunk_info(log, i, &c) == 0; i++)
		print_chunk(e, h, &c);
	const struct vt_log_integrity *in = vt_log_integrity(log);
	if (!in->chunks_missing)
		return;
	e_begin(e, "chunk");
	e_i64(e, "pid", h->pid);
	e_u64(e, "index", in->chunks_in_file);
	e_name(e, "verdict", "missing", 0);
	e_u64(e, "count", in->chunks_missing);
	e_end(e);
}

/* ---- command ---------------------------------------------------------------- */

static const struct vt_cli_option dump_options[] = {
    {"--json", NULL, "one JSON object a line instead of text"},
    {NULL, NULL, NULL},
};

static const struct vt_cli_help dump_help = {
    "dump", "DIR|LOG", "Print every record of a trace's logs (or of one log file).", dump_options,
    "exit: 0, 1 when the trace cannot be read or the output written, 2 for a usage "
    "error.\n"};

struct dump_args {
	const char *path;
	int json;
};

static int dump_option(void *ctx, const struct vt_cli_option *o, const char *v)
{
	(void)o, (void)v; /* --json, the only one */
	((struct dump_args *)ctx)->json = 1;
	return 0;
}

static int dump_operand(void *ctx, const char *arg)
{
	return vt_cli_one_trace("dump", &((struct dump_args *)ctx)->path, arg);
}

int cmd_dump(int argc, char **argv)
{
	struct dump_args a = {NULL, 0};
	const struct vt_cli_parser parser = {&dump_help, dump_option, dump_operand, 0};
	int next, rc = vt_cli_parse(&parser, argc, argv, &a, &next);
	if (rc)
		return rc == VT_CLI_HELP_SHOWN ? 0 : rc;
	if (!a.path)
		return vt_cli_usage_error("dump",
		                          "which trace? (a trace directory or one log file)");
	const char *path = a.path;
	int json = a.json;

	struct vt_trace trace;
	char err[1024];
	if (vt_trace_open(path, &trace, err, sizeof err) < 0) {
		fprintf(stderr, "vramtrace dump: %s\n", err);
		return 1;
	}
	struct vt_sites sites;
	if (vt_sites_open(&sites, &trace, 0, err, sizeof err) < 0) {
		fprintf(stderr, "vramtrace dump: %s\n", err);
		vt_trace_close(&trace);
		return 1;
	}
	static char outbuf[1 << 16];
	setvbuf(stdout, outbuf, _IOFBF, sizeof outbuf);
	struct emit e = {.out = stdout, .json = json};
	uint64_t start = vt_trace_start_ns(&trace);
	for (size_t i = 0; i < trace.nlogs; i++) {
		const struct vt_log *log = trace.logs[i];
		struct dump_ctx c = {.e = &e,
		                     .log = log,
		                     .t_offset = vt_log_header(log)->clock_base_ns - start,
		                     .sites = &sites,
		                     .log_index = (uint32_t)i};
		print_header(&e, log, start);
		print_chunks(&e, log);
		vt_log_for_each(trace.logs[i], print_record, &c);
	}
	vt_sites_close(&sites);
	vt_trace_close(&trace);
	if (fflush(stdout) != 0 || ferror(stdout)) {
		fprintf(stderr, "vramtrace dump: cannot write the output\n");
		return 1;
	}
	return 0;
}
