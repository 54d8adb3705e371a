/* RTLD_NEXT from an object dlopen'ed RTLD_LOCAL (its dependencies, like
 * libc, were loaded before it). */
#define _GNU_SOURCE
#include <dlfcn.h>

const char *vt_next_probe(void) { return "local"; }

/* Not a tail call: glibc finds "the caller" from the return address. */
void *vt_next_from_local(const char *name)
{
	void *p = dlsym(RTLD_NEXT, name);
	__asm__ volatile("" ::: "memory");
	return p;
}
