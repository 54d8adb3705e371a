/* LD_PRELOAD test double for a machine without the memory a trace needs:
 * every malloc, calloc or realloc asking for VT_TEST_ALLOC_LIMIT bytes or
 * more returns NULL (ENOMEM). A size limit, not a count, so the failure
 * lands in the analyzer's big arrays whatever the build's allocation
 * pattern, and the small allocations of start-up (dlsym, stdio) succeed.
 * glibc's __libc_* entry points are the real allocator without dlsym
 * (which itself allocates). */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>

extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);

static size_t limit(void)
{
	static size_t cached = (size_t)-1;
	if (cached == (size_t)-1) {
		const char *v = getenv("VT_TEST_ALLOC_LIMIT");
		cached = v && *v ? (size_t)strtoull(v, NULL, 10) : 0;
	}
	return cached;
}

static int refused(size_t bytes)
{
	size_t l = limit();
	if (l && bytes >= l) {
		errno = ENOMEM;
		return 1;
	}
	return 0;
}

void *malloc(size_t n)
{
	return refused(n) ? NULL : __libc_malloc(n);
}

void *calloc(size_t n, size_t size)
{
	if (size && n > (size_t)-1 / size)
		return __libc_calloc(n, size); /* its own overflow answer */
	return refused(n * size) ? NULL : __libc_calloc(n, size);
}

void *realloc(void *p, size_t n)
{
	return refused(n) ? NULL : __libc_realloc(p, n);
}
