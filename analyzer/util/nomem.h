/* What the analyzer does when memory runs out: one line on stderr that says
 * so, and exit status 3. Why not recover: the model needs a record per
 * allocation of the trace (README, Limitations), so a trace too big for the
 * machine fails in the middle of building it, where there is no partial
 * result worth printing; what the user needs is to know it was memory, not
 * a bad trace, and how much was in use.
 * Include before <uthash.h>: a table that cannot grow says the same. */
#ifndef VT_NOMEM_H
#define VT_NOMEM_H

_Noreturn void vt_nomem(void);

#include <stddef.h>

/* calloc that ends in vt_nomem() instead of returning NULL (0 elements or
 * 0 bytes still give a unique pointer). */
void *vt_xcalloc(size_t n, size_t size);

/* arr with room for at least `need` elements of `elem` bytes, *cap
 * doubling as it grows; vt_nomem() when it cannot. */
void *vt_xgrow(void *arr, size_t *cap, size_t need, size_t elem);

#undef uthash_fatal
#define uthash_fatal(msg) vt_nomem()

#endif
