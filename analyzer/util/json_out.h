/* A small streaming JSON writer: values go straight to a FILE, commas and
 * nesting are tracked here so callers never hand-place them, and every string
 * is escaped per RFC 8259 (control characters as \u00XX, invalid UTF-8 bytes
 * replaced by U+FFFD so the output is always valid JSON).
 *
 *   struct vt_json j; vt_json_init(&j, stdout, 1);
 *   vt_json_begin_object(&j);
 *     vt_json_key(&j, "pid"); vt_json_u64(&j, 42);
 *     vt_json_key(&j, "tags"); vt_json_begin_array(&j);
 *       vt_json_string(&j, "a\"b");
 *     vt_json_end_array(&j);
 *   vt_json_end_object(&j);
 *   vt_json_finish(&j);           // newline; returns -1 if misuse was seen
 */
#ifndef VT_JSON_OUT_H
#define VT_JSON_OUT_H

#include <stdint.h>
#include <stdio.h>

#define VT_JSON_MAX_DEPTH 64

struct vt_json {
	FILE *out;
	int pretty;                          /* indent 2 spaces per level */
	int depth;
	int error;                           /* misuse seen (unbalanced, too deep) */
	unsigned char has_items[VT_JSON_MAX_DEPTH]; /* a value written at this level */
	unsigned char after_key;             /* next value completes a key */
};

void vt_json_init(struct vt_json *j, FILE *out, int pretty);
void vt_json_begin_object(struct vt_json *j);
void vt_json_end_object(struct vt_json *j);
void vt_json_begin_array(struct vt_json *j);
void vt_json_end_array(struct vt_json *j);
void vt_json_key(struct vt_json *j, const char *key);
void vt_json_string(struct vt_json *j, const char *s);
void vt_json_string_n(struct vt_json *j, const char *s, size_t n);
void vt_json_u64(struct vt_json *j, uint64_t v);
void vt_json_i64(struct vt_json *j, int64_t v);
void vt_json_double(struct vt_json *j, double v); /* non-finite -> null */
void vt_json_bool(struct vt_json *j, int v);
void vt_json_null(struct vt_json *j);
/* Finish the document (writes a newline). Returns 0, or -1 on misuse or a
 * write error. */
int vt_json_finish(struct vt_json *j);

/* Shorthands for "key": value members. */
void vt_json_kv_string(struct vt_json *j, const char *key, const char *s);
void vt_json_kv_u64(struct vt_json *j, const char *key, uint64_t v);
void vt_json_kv_i64(struct vt_json *j, const char *key, int64_t v);
void vt_json_kv_double(struct vt_json *j, const char *key, double v);
void vt_json_kv_bool(struct vt_json *j, const char *key, int v);

/* Escape s into a FILE as a JSON string with quotes (used by the writer,
 * exported for line-oriented JSON outputs such as `dump --json`). */
void vt_json_write_escaped(FILE *out, const char *s, size_t n);

#endif
