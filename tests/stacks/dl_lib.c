/* A library the tests dlopen after start and dlclose before exit: its frames
 * must still be named. Built -g -O0. */
#include <stdint.h>

typedef uint32_t (*vt_test_capture_fn)(void);

uint32_t dl_lib_site(vt_test_capture_fn capture);

uint32_t dl_lib_site(vt_test_capture_fn capture)
{
	uint32_t id = capture(); /* dl_lib.c: this line is asserted by tests */
	return id;
}
