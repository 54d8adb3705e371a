/* Unit tests for the Python frame capture's building blocks (no Python
 * needed): location-table decoding, the lock-free intern table under
 * concurrency, and the "no CPython" / switched-off paths. */
#define _GNU_SOURCE
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "pyframes.h"
#include "pyframes_intern.h"
#include "pyframes_linetable.h"

int vt_fake_pystr(uint32_t id, char *out, size_t outlen, unsigned *copies);
unsigned vt_fake_count_text(const char *s);
void vt_fake_refuse(int on);

/* ---- location tables ---- */

#define ENTRY(code, units) (uint8_t)(0x80u | ((code) << 3) | ((units) - 1))

static void test_linetable_forms(void **state)
{
	(void)state;
	const uint8_t table[] = {
		ENTRY(13, 2), 0x02,             /* no columns, line +1: addr 0..3 */
		ENTRY(0, 1), 0x05,              /* short form, same line: 4..5 */
		ENTRY(15, 1),                   /* no location: 6..7 */
		ENTRY(11, 1), 3, 9,             /* one line, +1: 8..9 */
		ENTRY(14, 3), 0x03, 0, 1, 2,    /* long form, -1 (svarint 3): 10..15 */
		ENTRY(13, 1), 0x40 | 0x00, 0x01,/* varint 64 -> +32: 16..17 */
		ENTRY(12, 1), 1, 2,             /* one line, +2: 18..19 */
	};
	const int first = 10;
	const struct { int addr, line; } want[] = {
		{-2, 10}, {0, 11}, {2, 11}, {4, 11}, {6, -1}, {8, 12}, {10, 11},
		{14, 11}, {16, 43}, {18, 45}, {20, -1},
	};
	for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
		assert_int_equal(vt_py_location_line(table, sizeof table, first, want[i].addr),
		                 want[i].line);
}

static void test_linetable_damaged(void **state)
{
	(void)state;
	/* Truncated varint and a stray continuation byte: no crash, a line or -1. */
	const uint8_t table[] = {0x05, ENTRY(13, 1), 0x40};
	int line = vt_py_location_line(table, sizeof table, 1, 0);
	assert_true(line >= -1);
	assert_int_equal(vt_py_location_line(table, 0, 7, 0), -1);
}

/* ---- intern table ---- */

static void test_intern_once(void **state)
{
	(void)state;
	assert_int_equal(vt_py_intern_init(), 0);
	uint32_t a = vt_py_intern("train.py", 8);
	uint32_t b = vt_py_intern("train.py", 8);
	uint32_t c = vt_py_intern("step", 4);
	assert_true(a != 0);
	assert_int_equal(a, b);
	assert_true(c != a);
	char text[64];
	unsigned copies;
	assert_int_equal(vt_fake_pystr(a, text, sizeof text, &copies), 0);
	assert_string_equal(text, "train.py");
	assert_int_equal(copies, 1);
	assert_int_equal(vt_fake_count_text("train.py"), 1);
}

#define THREADS 16
#define NAMES 300

static void *intern_many(void *arg)
{
	uint32_t *ids = arg; /* NAMES ids out */
	char name[32];
	for (int round = 0; round < 3; round++)
		for (int i = 0; i < NAMES; i++) {
			int len = snprintf(name, sizeof name, "module_%d.py", i);
			uint32_t id = vt_py_intern(name, (uint32_t)len);
			if (round == 2)
				ids[i] = id;
		}
	return NULL;
}

static void test_intern_threads(void **state)
{
	(void)state;
	assert_int_equal(vt_py_intern_init(), 0);
	static uint32_t ids[THREADS][NAMES];
	pthread_t t[THREADS];
	for (int i = 0; i < THREADS; i++)
		pthread_create(&t[i], NULL, intern_many, ids[i]);
	for (int i = 0; i < THREADS; i++)
		pthread_join(t[i], NULL);
	char name[32], text[64];
	for (int i = 0; i < NAMES; i++) {
		snprintf(name, sizeof name, "module_%d.py", i);
		unsigned records = vt_fake_count_text(name);
		/* one record, or a few more if threads raced on the first use */
		assert_true(records >= 1 && records <= 3 * THREADS);
		for (int k = 0; k < THREADS; k++) {
			unsigned copies;
			assert_true(ids[k][i] != 0);
			assert_int_equal(vt_fake_pystr(ids[k][i], text, sizeof text, &copies), 0);
			assert_string_equal(text, name);
			assert_int_equal(copies, 1);
		}
		/* once every writer is done, one id is published for good */
		uint32_t settled = vt_py_intern(name, (uint32_t)strlen(name));
		assert_int_equal(vt_py_intern(name, (uint32_t)strlen(name)), settled);
		assert_int_equal(vt_fake_count_text(name), records); /* no new record */
	}
}

static void test_intern_reset_and_refusal(void **state)
{
	(void)state;
	assert_int_equal(vt_py_intern_init(), 0);
	uint32_t before = vt_py_intern("child.py", 8);
	vt_py_intern_reset(); /* what a fork child does: new log, new strings */
	uint32_t after = vt_py_intern("child.py", 8);
	assert_true(before && after && before != after);
	assert_int_equal(vt_fake_count_text("child.py"), 2);
	vt_fake_refuse(1); /* log off or full: no id without its record */
	assert_int_equal(vt_py_intern("never.py", 8), 0);
	vt_fake_refuse(0);
	assert_int_equal(vt_fake_count_text("never.py"), 0);
}

/* ---- a process without CPython ---- */

static void test_no_python(void **state)
{
	(void)state;
	uint64_t words[64];
	assert_int_equal(vt_py_capture(words, 32), 0);
	assert_int_equal(vt_py_capture(words, 32), 0);
	assert_false(vt_py_active());
	assert_string_equal(vt_py_describe(), "no CPython in this process");
	vt_py_bind_native(words, 0, NULL, 0); /* nothing to bind: no crash */
}

static void test_switched_off(void **state)
{
	(void)state;
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) { /* a fresh state: the parent has not captured yet */
		setenv("VRAMTRACE_PYTHON", "0", 1);
		uint64_t words[8];
		int ok = vt_py_capture(words, 4) == 0 &&
		         !strcmp(vt_py_describe(), "off (VRAMTRACE_PYTHON=0)");
		_exit(ok ? 0 : 1);
	}
	int status;
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_switched_off), /* must run before any capture */
		cmocka_unit_test(test_linetable_forms),
		cmocka_unit_test(test_linetable_damaged),
		cmocka_unit_test(test_intern_once),
		cmocka_unit_test(test_intern_threads),
		cmocka_unit_test(test_intern_reset_and_refusal),
		cmocka_unit_test(test_no_python),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
