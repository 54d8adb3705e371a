/* Chrome Trace Event Format JSON, written flat (see trace_event.h). */
#include "trace_event.h"

#include <inttypes.h>
#include <string.h>

#include "json_out.h"

/* A JSON string: printable ASCII without '"' or '\\' (nearly every name
 * and site) is written as is, the rest through the JSON writer's escaping;
 * a million events spend most of their time here. */
static void put_string(FILE *out, const char *s)
{
	size_t n = 0;
	for (; s[n]; n++) {
		unsigned char c = (unsigned char)s[n];
		if (c < 0x20 || c >= 0x7f || c == '"' || c == '\\') {
			vt_json_write_escaped(out, s, strlen(s));
			return;
		}
	}
	fputc('"', out);
	fwrite(s, 1, n, out);
	fputc('"', out);
}

static void member_key(struct vt_te_writer *j, const char *key)
{
	if (!j->first_member)
		fputc(',', j->out);
	j->first_member = 0;
	put_string(j->out, key);
	fputc(':', j->out);
}

void vt_te_open(struct vt_te_writer *j, FILE *out, const char *trace_dir)
{
	*j = (struct vt_te_writer){out, 1, 1};
	fputs("{\"displayTimeUnit\":\"ns\",\"otherData\":{\"generator\":\"vramtrace\",\"trace\":",
	      out);
	vt_json_write_escaped(out, trace_dir ? trace_dir : "", trace_dir ? strlen(trace_dir) : 0);
	fputs("},\"traceEvents\":[", out);
}

void vt_te_close(struct vt_te_writer *j)
{
	fputs("\n]}\n", j->out);
}

void vt_te_kv_string(struct vt_te_writer *j, const char *key, const char *v)
{
	member_key(j, key);
	put_string(j->out, v);
}

void vt_te_kv_u64(struct vt_te_writer *j, const char *key, uint64_t v)
{
	member_key(j, key);
	fprintf(j->out, "%" PRIu64, v);
}

void vt_te_kv_i64(struct vt_te_writer *j, const char *key, int64_t v)
{
	member_key(j, key);
	fprintf(j->out, "%" PRId64, v);
}

void vt_te_args_begin(struct vt_te_writer *j)
{
	member_key(j, "args");
	fputc('{', j->out);
	j->first_member = 1;
}

void vt_te_end_object(struct vt_te_writer *j)
{
	fputc('}', j->out);
	j->first_member = 0;
}

/* "M" metadata events carry ts 0. ts in exact microseconds. */
void vt_te_event(struct vt_te_writer *j, const char *name, const char *ph, uint64_t t_ns,
                 uint64_t pid, uint64_t tid)
{
	fputs(j->first_event ? "\n{" : ",\n{", j->out);
	j->first_event = 0;
	j->first_member = 1;
	vt_te_kv_string(j, "name", name);
	vt_te_kv_string(j, "ph", ph);
	member_key(j, "ts");
	fprintf(j->out, "%" PRIu64 ".%03u", t_ns / 1000, (unsigned)(t_ns % 1000));
	vt_te_kv_u64(j, "pid", pid);
	vt_te_kv_u64(j, "tid", tid);
}

void vt_te_instant(struct vt_te_writer *j, const char *name, const char *scope, uint64_t t_ns,
                   uint64_t pid, uint64_t tid)
{
	vt_te_event(j, name, "i", t_ns, pid, tid);
	vt_te_kv_string(j, "s", scope);
}

void vt_te_metadata(struct vt_te_writer *j, const char *what, uint64_t pid, uint64_t tid,
                    const char *key, const char *text, int64_t number)
{
	vt_te_event(j, what, "M", 0, pid, tid);
	vt_te_args_begin(j);
	if (text)
		vt_te_kv_string(j, key, text);
	else
		vt_te_kv_i64(j, key, number);
	vt_te_end_object(j);
	vt_te_end_object(j);
}
