/* Preloaded before the shim: counts calls into libunwind's unw_backtrace
 * (then forwards them) and, at exit, writes the count to the file named by
 * VT_UNW_COUNT_FILE. "Stacks off means no unwinding" is then a number. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

static _Atomic unsigned long calls;

int unw_backtrace(void **buf, int size);
int unw_backtrace(void **buf, int size)
{
	static int (*real)(void **, int);
	if (!real)
		real = (int (*)(void **, int))dlsym(RTLD_NEXT, "unw_backtrace");
	calls++;
	return real ? real(buf, size) : 0;
}

__attribute__((destructor)) static void write_count(void)
{
	const char *path = getenv("VT_UNW_COUNT_FILE");
	FILE *f = path ? fopen(path, "w") : NULL;
	if (f) {
		fprintf(f, "%lu\n", (unsigned long)calls);
		fclose(f);
	}
}
