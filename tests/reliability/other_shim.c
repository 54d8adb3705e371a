/* Another preloaded library that also wraps dlsym, the way other GPU tools
 * do (HAMi-core, nvshare, profilers): it finds glibc's dlsym with dlvsym and
 * counts the lookups it forwards. VT_OTHER_SHIM_REPORT=1 prints the count at
 * exit, so a test can see it really was in the path. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

typedef void *(*dlsym_fn)(void *, const char *);
static _Atomic(dlsym_fn) real_dlsym;
static atomic_ulong lookups;

__attribute__((visibility("default"))) void *dlsym(void *handle, const char *name)
{
	dlsym_fn real = atomic_load(&real_dlsym);
	if (!real) {
		real = (dlsym_fn)dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.34");
		if (!real)
			real = (dlsym_fn)dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.2.5");
		atomic_store(&real_dlsym, real);
	}
	atomic_fetch_add(&lookups, 1);
	return real(handle, name);
}

__attribute__((destructor)) static void report(void)
{
	if (getenv("VT_OTHER_SHIM_REPORT"))
		fprintf(stderr, "other-shim: %lu dlsym lookups\n", atomic_load(&lookups));
}
