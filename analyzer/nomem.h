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

#undef uthash_fatal
#define uthash_fatal(msg) vt_nomem()

#endif
