/* RTLD_NEXT test library B: the next definition after A. */
#define _GNU_SOURCE
#include <dlfcn.h>

const char *vt_next_probe(void) { return "b"; }

/* Not a tail call: glibc finds "the caller" from the return address. */
void *vt_next_from_b(const char *name)
{
	void *p = dlsym(RTLD_NEXT, name);
	__asm__ volatile("" ::: "memory");
	return p;
}
