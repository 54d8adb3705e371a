/* RTLD_NEXT test library A (linked before B): defines vt_next_probe and asks
 * for the NEXT definition, which must be B's, not A's own and not the
 * shim-relative answer. */
#define _GNU_SOURCE
#include <dlfcn.h>

const char *vt_next_probe(void) { return "a"; }

/* Not a tail call: glibc finds "the caller" from the return address. */
void *vt_next_from_a(const char *name)
{
	void *p = dlsym(RTLD_NEXT, name);
	__asm__ volatile("" ::: "memory");
	return p;
}
