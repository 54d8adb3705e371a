/* The scope index (analyzer/dwarf_scopes.h) on a hostile file: a unit that
 * imports itself twice (hostile_dwarf.s). The index is built in bounded
 * time (each unit walked once; a walk that follows every import does 2^256
 * steps: the alarm turns that hang into a failure), holds the unit's
 * function once, and names it, and nothing outside it. */
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <unistd.h>

#include <cmocka.h>

#include <dwarf.h>
#include <elfutils/libdw.h>

#include "dwarf_scopes.h"

static void self_import_is_walked_once(void **state)
{
	(void)state;
	int fd = open(VT_HOSTILE_DWARF, O_RDONLY);
	assert_true(fd >= 0);
	Dwarf *dw = dwarf_begin(fd, DWARF_C_READ);
	assert_non_null(dw);
	Dwarf_Off off = 0, next;
	size_t hsize;
	assert_int_equal(dwarf_nextcu(dw, off, &next, &hsize, NULL, NULL, NULL), 0);
	Dwarf_Die cu;
	assert_non_null(dwarf_offdie(dw, off + hsize, &cu));

	alarm(20);
	struct vt_scope_index *ix = vt_scope_index_build(&cu);
	alarm(0);
	assert_int_equal(vt_scope_index_count(ix), 1); /* the function, once */
	Dwarf_Die chain[8];
	assert_int_equal(vt_scope_chain(ix, 0x1010, chain, 8), 1);
	assert_string_equal(dwarf_diename(&chain[0]), "victim");
	assert_int_equal(dwarf_tag(&chain[0]), DW_TAG_subprogram);
	assert_int_equal(vt_scope_chain(ix, 0x1020, chain, 8), 0); /* high_pc is past the end */
	assert_int_equal(vt_scope_chain(ix, 0xfff, chain, 8), 0);
	vt_scope_index_free(ix);
	dwarf_end(dw);
	close(fd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(self_import_is_walked_once),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
