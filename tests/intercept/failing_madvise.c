/* LD_PRELOAD test double for run_errno.sh: madvise(MADV_POPULATE_WRITE)
 * fails with EINVAL, as it does on kernels before 5.14. The shim asks for it
 * when it claims a log chunk, which happens while it writes an event after
 * the driver call returned: the errno it leaves must never reach the job.
 * Other advice goes to the real madvise (the simulated driver uses it). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stddef.h>
#include <sys/mman.h>

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

typedef int (*madvise_fn)(void *, size_t, int);

int madvise(void *addr, size_t len, int advice)
{
	if (advice == MADV_POPULATE_WRITE) {
		errno = EINVAL;
		return -1;
	}
	static madvise_fn real;
	if (!real)
		real = (madvise_fn)dlsym(RTLD_NEXT, "madvise");
	return real ? real(addr, len, advice) : -1;
}
