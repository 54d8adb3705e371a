/* The dynamic linker's own functions (real_dl.h).
 *
 * dlvsym is not wrapped by the shim, so these lookups cannot come back to
 * it. Never __libc_dlsym: it is gone since glibc 2.34.
 *
 * Sanitizer runtimes call dlsym(RTLD_NEXT, ...) while they initialise,
 * before instrumented code may run, and the shim's dlsym calls
 * vt_real_dlsym: sanitizer builds compile this file without instrumentation
 * (interpose/CMakeLists.txt). */
#define _GNU_SOURCE
#include "real_dl.h"

#include <pthread.h>
#include <stdatomic.h>

static _Atomic(vt_dlsym_fn) real_dlsym;

vt_dlsym_fn vt_real_dlsym(void)
{
	vt_dlsym_fn f = atomic_load_explicit(&real_dlsym, memory_order_acquire);
	if (f)
		return f;
	vt_dlsym_fn glibc = (vt_dlsym_fn)dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.34");
	if (!glibc)
		glibc = (vt_dlsym_fn)dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.2.5");
	/* Chain to the next dlsym after us, not straight to glibc's: another
	 * preloaded tool that wraps dlsym too (HAMi-core enforcing memory
	 * limits, a profiler) must still see every lookup. glibc's dlsym finds
	 * "next" from its caller, here. An unversioned wrapper is invisible to
	 * dlvsym, hence this second step. Never the shim's own dlsym. */
	f = glibc ? (vt_dlsym_fn)glibc(RTLD_NEXT, "dlsym") : NULL;
	if (!f || vt_is_own_address((const void *)f))
		f = glibc;
	atomic_store_explicit(&real_dlsym, f, memory_order_release);
	return f;
}

static struct vt_real_dl real;
static pthread_once_t real_once = PTHREAD_ONCE_INIT;

static void *real_sym(const char *name)
{
	void *p = dlvsym(RTLD_NEXT, name, "GLIBC_2.34");
	return p ? p : dlvsym(RTLD_NEXT, name, "GLIBC_2.2.5");
}

static void real_init(void)
{
	real.dlopen = (void *(*)(const char *, int))real_sym("dlopen");
	real.dlmopen = (void *(*)(long, const char *, int))real_sym("dlmopen");
	real.dlclose = (int (*)(void *))real_sym("dlclose");
}

const struct vt_real_dl *vt_real_dl(void)
{
	pthread_once(&real_once, real_init);
	return &real;
}

int vt_same_object(const void *p, const void *anchor)
{
	Dl_info a, b;
	return p && anchor && dladdr(anchor, &a) && dladdr(p, &b) && a.dli_fbase == b.dli_fbase;
}

int vt_is_own_address(const void *p)
{
	return vt_same_object(p, (const void *)vt_is_own_address);
}
