/* The seal's CRC32C (vramtrace/crc32c.h): the hardware form, three blocks
 * at a time and joined, gives the table form's value at every length and
 * alignment, and the standard check value. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <stdlib.h>

#include "vramtrace/crc32c.h"

static void test_check_value(void **state)
{
	(void)state;
	assert_int_equal(vt_crc32c("123456789", 9), 0xe3069283u);
	assert_int_equal(~vt_crc32c_sw(~0u, (const uint8_t *)"123456789", 9), 0xe3069283u);
	assert_int_equal(vt_crc32c("", 0), 0);
}

static void test_every_form_agrees(void **state)
{
	(void)state;
	size_t n = 256 * 1024;
	uint8_t *b = malloc(n);
	assert_non_null(b);
	srand(7);
	for (size_t i = 0; i < n; i++)
		b[i] = (uint8_t)rand();
	for (int t = 0; t < 1500; t++) {
		size_t len = t < 500 ? (size_t)t * 61 : (size_t)rand() % n;
		size_t off = (size_t)rand() % 64;
		if (off + len > n)
			len = n - off;
		assert_int_equal(vt_crc32c(b + off, len), ~vt_crc32c_sw(~0u, b + off, len));
	}
	free(b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_check_value),
	    cmocka_unit_test(test_every_form_agrees),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
