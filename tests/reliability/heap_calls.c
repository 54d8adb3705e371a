/* LD_PRELOAD test double that counts the calling thread's heap calls
 * (malloc, calloc, realloc, free), read with rel_heap_calls(). A job
 * compares the count before and after a call to see whether that call
 * touched the heap: a dlsym that succeeds touches it only to free an error
 * state an earlier failed dl call left in the thread.
 * glibc's __libc_* entry points are the real allocator without dlsym
 * (which itself allocates); initial-exec TLS, because the general TLS model
 * may allocate on a thread's first access. */
#define _GNU_SOURCE
#include <stdlib.h>

extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void __libc_free(void *);

static __thread unsigned long calls __attribute__((tls_model("initial-exec")));

unsigned long rel_heap_calls(void)
{
	return calls;
}

void *malloc(size_t bytes)
{
	calls++;
	return __libc_malloc(bytes);
}

void *calloc(size_t n, size_t bytes)
{
	calls++;
	return __libc_calloc(n, bytes);
}

void *realloc(void *p, size_t bytes)
{
	calls++;
	return __libc_realloc(p, bytes);
}

void free(void *p)
{
	calls++;
	__libc_free(p);
}
