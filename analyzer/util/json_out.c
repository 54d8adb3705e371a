/* Streaming JSON writer (see json_out.h). */
#include "json_out.h"

#include <inttypes.h>
#include <math.h>
#include <string.h>

void vt_json_init(struct vt_json *j, FILE *out, int pretty)
{
	memset(j, 0, sizeof *j);
	j->out = out;
	j->pretty = pretty;
}

static void newline_indent(struct vt_json *j)
{
	if (!j->pretty)
		return;
	fputc('\n', j->out);
	for (int i = 0; i < j->depth; i++)
		fputs("  ", j->out);
}

/* Everything a value needs before it: a comma and indentation inside a
 * container, nothing after a key. */
static void before_value(struct vt_json *j)
{
	if (j->after_key) {
		j->after_key = 0;
		return;
	}
	if (j->depth > 0) {
		if (j->has_items[j->depth])
			fputc(',', j->out);
		newline_indent(j);
	}
	if (j->depth < VT_JSON_MAX_DEPTH)
		j->has_items[j->depth] = 1;
}

static void open_container(struct vt_json *j, char c)
{
	before_value(j);
	fputc(c, j->out);
	if (j->depth + 1 >= VT_JSON_MAX_DEPTH) {
		j->error = 1;
		return;
	}
	j->depth++;
	j->has_items[j->depth] = 0;
}

static void close_container(struct vt_json *j, char c)
{
	if (j->depth <= 0 || j->after_key) {
		j->error = 1;
		return;
	}
	int had_items = j->has_items[j->depth];
	j->depth--;
	if (had_items)
		newline_indent(j);
	fputc(c, j->out);
}

void vt_json_begin_object(struct vt_json *j) { open_container(j, '{'); }
void vt_json_end_object(struct vt_json *j) { close_container(j, '}'); }
void vt_json_begin_array(struct vt_json *j) { open_container(j, '['); }
void vt_json_end_array(struct vt_json *j) { close_container(j, ']'); }

/* Length of the valid UTF-8 sequence at s (1..4), or 0 if invalid. */
static size_t utf8_len(const unsigned char *s, size_t n)
{
	unsigned char c = s[0];
	size_t len;
	uint32_t cp;
	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf) {
		len = 2;
		cp = c & 0x1f;
	} else if (c >= 0xe0 && c <= 0xef) {
		len = 3;
		cp = c & 0x0f;
	} else if (c >= 0xf0 && c <= 0xf4) {
		len = 4;
		cp = c & 0x07;
	} else {
		return 0;
	}
	if (len > n)
		return 0;
	for (size_t i = 1; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = (cp << 6) | (s[i] & 0x3f);
	}
	/* overlong, surrogate or out-of-range forms are invalid */
	if ((len == 3 && cp < 0x800) || (len == 4 && (cp < 0x10000 || cp > 0x10ffff)) ||
	    (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return len;
}

void vt_json_write_escaped(FILE *out, const char *s, size_t n)
{
	const unsigned char *p = (const unsigned char *)s;
	fputc('"', out);
	for (size_t i = 0; i < n;) {
		unsigned char c = p[i];
		switch (c) {
		case '"': fputs("\\\"", out); i++; continue;
		case '\\': fputs("\\\\", out); i++; continue;
		case '\n': fputs("\\n", out); i++; continue;
		case '\r': fputs("\\r", out); i++; continue;
		case '\t': fputs("\\t", out); i++; continue;
		case '\b': fputs("\\b", out); i++; continue;
		case '\f': fputs("\\f", out); i++; continue;
		default: break;
		}
		if (c < 0x20 || c == 0x7f) {
			fprintf(out, "\\u%04x", c);
			i++;
			continue;
		}
		size_t len = utf8_len(p + i, n - i);
		if (len == 0) {
			fputs("\\ufffd", out);
			i++;
			continue;
		}
		fwrite(p + i, 1, len, out);
		i += len;
	}
	fputc('"', out);
}

void vt_json_key(struct vt_json *j, const char *key)
{
	if (j->after_key)
		j->error = 1;
	before_value(j);
	vt_json_write_escaped(j->out, key, strlen(key));
	fputs(j->pretty ? ": " : ":", j->out);
	j->after_key = 1;
}

void vt_json_string_n(struct vt_json *j, const char *s, size_t n)
{
	before_value(j);
	vt_json_write_escaped(j->out, s, n);
}

void vt_json_string(struct vt_json *j, const char *s)
{
	if (!s) {
		vt_json_null(j);
		return;
	}
	vt_json_string_n(j, s, strlen(s));
}

void vt_json_u64(struct vt_json *j, uint64_t v)
{
	before_value(j);
	fprintf(j->out, "%" PRIu64, v);
}

void vt_json_i64(struct vt_json *j, int64_t v)
{
	before_value(j);
	fprintf(j->out, "%" PRId64, v);
}

void vt_json_double(struct vt_json *j, double v)
{
	if (!isfinite(v)) {
		vt_json_null(j);
		return;
	}
	before_value(j);
	fprintf(j->out, "%.6g", v);
}

void vt_json_bool(struct vt_json *j, int v)
{
	before_value(j);
	fputs(v ? "true" : "false", j->out);
}

void vt_json_null(struct vt_json *j)
{
	before_value(j);
	fputs("null", j->out);
}

int vt_json_finish(struct vt_json *j)
{
	fputc('\n', j->out);
	if (j->depth != 0 || j->after_key)
		j->error = 1;
	if (fflush(j->out) != 0 || ferror(j->out))
		j->error = 1;
	return j->error ? -1 : 0;
}

void vt_json_kv_string(struct vt_json *j, const char *key, const char *s)
{
	vt_json_key(j, key);
	vt_json_string(j, s);
}

void vt_json_kv_u64(struct vt_json *j, const char *key, uint64_t v)
{
	vt_json_key(j, key);
	vt_json_u64(j, v);
}

void vt_json_kv_i64(struct vt_json *j, const char *key, int64_t v)
{
	vt_json_key(j, key);
	vt_json_i64(j, v);
}

void vt_json_kv_double(struct vt_json *j, const char *key, double v)
{
	vt_json_key(j, key);
	vt_json_double(j, v);
}

void vt_json_kv_bool(struct vt_json *j, const char *key, int v)
{
	vt_json_key(j, key);
	vt_json_bool(j, v);
}
