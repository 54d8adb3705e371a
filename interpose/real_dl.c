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
#include <signal.h>
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

/* The shim's own dl calls run on the job's threads, and two things about
 * them must not reach the job:
 * - A failure leaves its message in the thread's dlerror() state, which
 *   glibc allocates on the job's heap and frees at that thread's next dl
 *   call: the job would read a message it did not cause, and its next
 *   lookup would free memory, which a lookup without the shim never does.
 *   So a failure is dropped at once: the first dlerror() returns the
 *   message and marks it read, the next frees it and returns NULL.
 * - A job's signal handler may call dlsym (not async-signal-safe, but
 *   harmless without the shim: the job's own threads were not inside the
 *   dynamic linker then). Landing inside the shim's failed call or its
 *   dlerror(), that dlsym frees the message the interrupted call is still
 *   using: a double free. So the job's signals wait while the shim's call
 *   runs, and are delivered right after. Faults stay unblocked: a fault
 *   whose signal is blocked kills the process at once. */
static void block_job_signals(sigset_t *old)
{
	static const int faults[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGTRAP, SIGSYS, SIGABRT};
	sigset_t set;
	sigfillset(&set);
	for (size_t i = 0; i < sizeof faults / sizeof faults[0]; i++)
		sigdelset(&set, faults[i]);
	pthread_sigmask(SIG_BLOCK, &set, old);
}

static void forget_error(void)
{
	while (dlerror())
		;
}

void *vt_own_dlsym(void *handle, const char *name)
{
	vt_dlsym_fn real = vt_real_dlsym();
	if (!real)
		return NULL;
	sigset_t old;
	block_job_signals(&old);
	void *p = real(handle, name);
	if (!p)
		forget_error();
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return p;
}

void *vt_own_dlopen(const char *file, int flags)
{
	const struct vt_real_dl *dl = vt_real_dl();
	if (!dl->dlopen)
		return NULL;
	sigset_t old;
	block_job_signals(&old);
	void *h = dl->dlopen(file, flags);
	if (!h)
		forget_error();
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return h;
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
