/* An always-inlined helper: its frame exists only as DWARF inline scopes. */
#ifndef VT_SYM_FIXTURE_INL_H
#define VT_SYM_FIXTURE_INL_H

void fixture_mark(int line);

static inline __attribute__((always_inline)) void fixture_inlined_helper(void)
{
	fixture_mark(__LINE__); /* SYM_INLINE_LINE */
}

#endif
