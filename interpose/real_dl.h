/* The dynamic linker's own functions, for the shim's own lookups
 * (real_dl.c). The shim exports dlsym, dlopen, dlmopen and dlclose wrappers
 * (dlsym_wrap.c, dlopen_wrap.c); its own lookups of the driver and of
 * libpython, and those wrappers themselves, call these instead, so the
 * exported wrappers sit on top of the shim and nothing in it calls them.
 * Only libc is called here: no guard, no log. */
#ifndef VT_REAL_DL_H
#define VT_REAL_DL_H

#include <dlfcn.h>

/* The dlsym after the shim: glibc's (dlvsym GLIBC_2.34, else GLIBC_2.2.5),
 * or another preloaded tool's wrapper of it; found on first use. */
typedef void *(*vt_dlsym_fn)(void *, const char *);
vt_dlsym_fn vt_real_dlsym(void);

/* glibc's dlopen, dlmopen and dlclose (dlvsym GLIBC_2.34, else
 * GLIBC_2.2.5), found once; a member is NULL if glibc lacks it. dlmopen's
 * namespace is a Lmid_t, which is a long: spelled so, this header needs no
 * _GNU_SOURCE. */
struct vt_real_dl {
	void *(*dlopen)(const char *, int);
	void *(*dlmopen)(long, const char *, int);
	int (*dlclose)(void *);
};
const struct vt_real_dl *vt_real_dl(void);

/* The shim's own lookups and loads, through the real dlsym and dlopen. They
 * may fail where the job never tried (no NVML, no libpython, an entry point
 * an older driver lacks); a failure leaves nothing in the calling thread's
 * dlerror() (real_dl.c says why). RTLD_NEXT means after the shim. */
void *vt_own_dlsym(void *handle, const char *name);
void *vt_own_dlopen(const char *file, int flags);

/* Does p lie in the same loaded object as anchor (dladdr, not cached)? */
int vt_same_object(const void *p, const void *anchor);
/* Is p inside the object these sources are linked into (libvramtrace.so)? */
int vt_is_own_address(const void *p);

#endif
