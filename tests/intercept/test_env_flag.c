/* The one rule for yes/no switches (include/vramtrace/env_flag.h): which
 * values turn a default-off switch on and a default-on switch off. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <stdlib.h>

#include "vramtrace/env_flag.h"

#define NAME "VT_TEST_SWITCH"

static const char *const false_words[] = {"0", "no", "off", "false", "NO", "Off", "FALSE"};
static const char *const true_words[] = {"1",    "yes", "on",     "true", "2",  "00",
                                         "nope", "of",  "falsey", " 0",   "0 ", "\x10"};

static void unset_and_empty(void **state)
{
	(void)state;
	unsetenv(NAME);
	assert_false(vt_env_flag(NAME)); /* default off stays off */
	assert_false(vt_env_off(NAME));  /* default on stays on */
	setenv(NAME, "", 1);
	assert_false(vt_env_flag(NAME));
	assert_false(vt_env_off(NAME));
}

static void false_words_are_false(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof false_words / sizeof false_words[0]; i++) {
		setenv(NAME, false_words[i], 1);
		assert_false(vt_env_flag(NAME)); /* VRAMTRACE_DISABLE=false does not disable */
		assert_true(vt_env_off(NAME));   /* VRAMTRACE_PYTHON=off turns Python frames off */
	}
}

static void anything_else_is_true(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof true_words / sizeof true_words[0]; i++) {
		setenv(NAME, true_words[i], 1);
		assert_true(vt_env_flag(NAME));
		assert_false(vt_env_off(NAME));
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(unset_and_empty),
	    cmocka_unit_test(false_words_are_false),
	    cmocka_unit_test(anything_else_is_true),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
