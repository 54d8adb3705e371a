/* Known addresses at known lines for the symbolizer tests (-g -O0). Each
 * function records the return address of its call to fixture_mark (an
 * address inside itself) and the line of that call. */
#include "sym_fixture.h"

#include "sym_fixture_inl.h"

struct fixture_point fixture_last;

__attribute__((noinline)) void fixture_mark(int line)
{
	fixture_last.ra = __builtin_extract_return_addr(__builtin_return_address(0));
	fixture_last.line = line;
}

void fixture_alpha(void)
{
	fixture_mark(__LINE__);
}

void fixture_inline_outer(void)
{
	fixture_last.outer_line = __LINE__ + 1;
	fixture_inlined_helper();
}
