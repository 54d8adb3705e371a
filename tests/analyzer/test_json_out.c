/* The streaming JSON writer: nesting, commas, escaping, misuse detection. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "json_out.h"

static char *render(void (*fn)(struct vt_json *), int pretty, int *rc)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	assert_non_null(f);
	struct vt_json j;
	vt_json_init(&j, f, pretty);
	fn(&j);
	*rc = vt_json_finish(&j);
	fclose(f);
	return buf;
}

static void doc_nested(struct vt_json *j)
{
	vt_json_begin_object(j);
	vt_json_kv_u64(j, "a", 1);
	vt_json_key(j, "list");
	vt_json_begin_array(j);
	vt_json_i64(j, -2);
	vt_json_bool(j, 1);
	vt_json_null(j);
	vt_json_begin_object(j);
	vt_json_end_object(j);
	vt_json_begin_array(j);
	vt_json_end_array(j);
	vt_json_end_array(j);
	vt_json_kv_double(j, "x", 0.5);
	vt_json_kv_double(j, "nan", 0.0 / 0.0);
	vt_json_end_object(j);
}

static void test_nesting(void **state)
{
	(void)state;
	int rc;
	char *s = render(doc_nested, 0, &rc);
	assert_int_equal(rc, 0);
	assert_string_equal(s, "{\"a\":1,\"list\":[-2,true,null,{},[]],\"x\":0.5,\"nan\":null}\n");
	free(s);
	s = render(doc_nested, 1, &rc);
	assert_int_equal(rc, 0);
	assert_non_null(strstr(s, "\n  \"list\": [\n    -2,\n"));
	free(s);
}

static void doc_escapes(struct vt_json *j)
{
	vt_json_begin_array(j);
	vt_json_string(j, "q\"b\\s\n\t\x01\x7f");
	vt_json_string(j, "caf\xc3\xa9 \xe2\x82\xac");  /* valid UTF-8 passes */
	vt_json_string(j, "bad\xff\xc3(\xed\xa0\x80");  /* invalid bytes, surrogate */
	vt_json_string_n(j, "nul\0in", 6);
	vt_json_end_array(j);
}

static void test_escapes(void **state)
{
	(void)state;
	int rc;
	char *s = render(doc_escapes, 0, &rc);
	assert_int_equal(rc, 0);
	assert_string_equal(s, "[\"q\\\"b\\\\s\\n\\t\\u0001\\u007f\","
	                       "\"caf\xc3\xa9 \xe2\x82\xac\","
	                       "\"bad\\ufffd\\ufffd(\\ufffd\\ufffd\\ufffd\","
	                       "\"nul\\u0000in\"]\n");
	free(s);
}

static void doc_unbalanced(struct vt_json *j)
{
	vt_json_begin_object(j);
	vt_json_key(j, "dangling");
}

static void doc_extra_close(struct vt_json *j)
{
	vt_json_begin_array(j);
	vt_json_end_array(j);
	vt_json_end_array(j);
}

static void test_misuse(void **state)
{
	(void)state;
	int rc;
	free(render(doc_unbalanced, 0, &rc));
	assert_int_equal(rc, -1);
	free(render(doc_extra_close, 0, &rc));
	assert_int_equal(rc, -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_nesting),
		cmocka_unit_test(test_escapes),
		cmocka_unit_test(test_misuse),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
