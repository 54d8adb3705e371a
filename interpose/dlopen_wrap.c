/* The dlopen, dlmopen and dlclose the job calls: the real function, then
 * the module records (modules.h) and a new look for libpython (pyframes.h),
 * since the loader's list may have changed.
 *
 * The real functions are glibc's (real_dl.h), never found through dlsym,
 * which the shim also wraps. Since glibc searches the *caller's*
 * DT_RPATH/DT_RUNPATH and namespace and the caller the real dlopen sees is
 * the shim, a bare-name dlopen that fails is retried along the real caller's
 * RUNPATH (or RPATH), with $ORIGIN expanded, and a caller in a dlmopen
 * namespace is served in that namespace.
 *
 * The shim's own lookups (the driver, libpython) call the real functions
 * directly: nothing in the shim calls these wrappers. A load the stack
 * unwinder makes while it captures passes straight through. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <link.h>
#include <string.h>
#include <unistd.h>

#include "modules.h"
#include "pyframes.h"
#include "real_dl.h"
#include "shim.h"
#include "stack_capture.h"

static void after_loader_change(void)
{
	vt_modules_loader_changed();
	vt_py_rescan(); /* an embedding host may have just loaded libpython */
}

/* Open `path` in the caller's namespace. */
static void *open_in(Lmid_t ns, const char *path, int flags)
{
	const struct vt_real_dl *real = vt_real_dl();
	if (ns == LM_ID_BASE || !real->dlmopen)
		return real->dlopen(path, flags);
	return real->dlmopen(ns, path, flags);
}

/* The search path the caller's own dynamic section asks for: DT_RUNPATH, or
 * DT_RPATH when it has none. Returns NULL if neither. */
static const char *caller_search_path(const struct link_map *lm)
{
	uintptr_t strtab = 0;
	long rpath = -1, runpath = -1;
	for (const ElfW(Dyn) *d = lm->l_ld; d && d->d_tag != DT_NULL; d++) {
		if (d->d_tag == DT_STRTAB)
			strtab = d->d_un.d_ptr;
		else if (d->d_tag == DT_RPATH)
			rpath = (long)d->d_un.d_val;
		else if (d->d_tag == DT_RUNPATH)
			runpath = (long)d->d_un.d_val;
	}
	if (!strtab || (rpath < 0 && runpath < 0))
		return NULL;
	if (strtab < lm->l_addr) /* not relocated in place by ld.so */
		strtab += lm->l_addr;
	return (const char *)strtab + (runpath >= 0 ? runpath : rpath);
}

/* dir = one search-path element with $ORIGIN / ${ORIGIN} expanded. */
static int expand_dir(const char *elem, size_t n, const char *origin, char *out, size_t cap)
{
	size_t o = 0;
	for (size_t i = 0; i < n;) {
		size_t tok = !strncmp(elem + i, "${ORIGIN}", 9) && i + 9 <= n ? 9
			   : !strncmp(elem + i, "$ORIGIN", 7) && i + 7 <= n  ? 7
									      : 0;
		if (!tok && elem[i] == '$')
			return -1; /* $LIB, $PLATFORM: leave to the loader */
		const char *src = tok ? origin : elem + i;
		size_t len = tok ? strlen(origin) : 1;
		if (o + len + 1 > cap)
			return -1;
		memcpy(out + o, src, len);
		o += len;
		i += tok ? tok : 1;
	}
	out[o] = '\0';
	return 0;
}

/* out = dir/file; -1 if it does not fit (no stdio in the shim). */
static int join_path(char *out, size_t cap, const char *dir, const char *file)
{
	size_t d = strlen(dir), f = strlen(file);
	if (d + 1 + f + 1 > cap)
		return -1;
	memcpy(out, dir, d);
	out[d] = '/';
	memcpy(out + d + 1, file, f + 1);
	return 0;
}

static void *open_along_caller_path(const struct link_map *lm, Lmid_t ns, const char *file,
				    int flags)
{
	const char *sp = caller_search_path(lm);
	if (!sp)
		return NULL;
	char origin[PATH_MAX];
	const char *name = lm->l_name;
	if (!name || !*name) {
		ssize_t n = readlink("/proc/self/exe", origin, sizeof origin - 1);
		origin[n > 0 ? n : 0] = '\0';
	} else {
		strncpy(origin, name, sizeof origin - 1);
		origin[sizeof origin - 1] = '\0';
	}
	char *slash = strrchr(origin, '/');
	if (slash)
		*slash = '\0';
	for (const char *p = sp; *p;) {
		size_t n = strcspn(p, ":");
		char dir[PATH_MAX], full[PATH_MAX];
		if (n && expand_dir(p, n, origin, dir, sizeof dir) == 0 &&
		    join_path(full, sizeof full, dir, file) == 0) {
			void *h = open_in(ns, full, flags);
			if (h)
				return h;
		}
		p += n + (p[n] == ':');
	}
	return NULL;
}

static void *dlopen_as(const void *caller, Lmid_t ns, int explicit_ns, const char *file,
		       int flags)
{
	struct link_map *lm = NULL;
	Dl_info info;
	if (!explicit_ns && dladdr1(caller, &info, (void **)&lm, RTLD_DL_LINKMAP) && lm)
		dlinfo(lm, RTLD_DI_LMID, &ns);
	void *h = open_in(ns, file, flags);
	if (!h && file && !strchr(file, '/') && lm) {
		h = open_along_caller_path(lm, ns, file, flags);
		if (!h) /* leave the loader's own error message in dlerror() */
			open_in(ns, file, flags);
	}
	return h;
}

VT_EXPORT void *dlopen(const char *file, int flags)
{
	const struct vt_real_dl *real = vt_real_dl();
	if (!real->dlopen)
		return NULL;
	if (vt_stack_capturing())
		return real->dlopen(file, flags);
	const void *caller = __builtin_extract_return_addr(__builtin_return_address(0));
	void *h = dlopen_as(caller, LM_ID_BASE, 0, file, flags);
	int saved_errno = errno;
	after_loader_change();
	errno = saved_errno;
	return h;
}

VT_EXPORT void *dlmopen(Lmid_t ns, const char *file, int flags)
{
	const struct vt_real_dl *real = vt_real_dl();
	if (!real->dlmopen)
		return NULL;
	if (vt_stack_capturing())
		return real->dlmopen(ns, file, flags);
	const void *caller = __builtin_extract_return_addr(__builtin_return_address(0));
	void *h = ns == LM_ID_NEWLM ? real->dlmopen(ns, file, flags)
				    : dlopen_as(caller, ns, 1, file, flags);
	int saved_errno = errno;
	after_loader_change();
	errno = saved_errno;
	return h;
}

VT_EXPORT int dlclose(void *handle)
{
	const struct vt_real_dl *real = vt_real_dl();
	if (!real->dlclose)
		return -1;
	int rc = real->dlclose(handle);
	if (vt_stack_capturing())
		return rc;
	int saved_errno = errno;
	after_loader_change();
	errno = saved_errno;
	return rc;
}
