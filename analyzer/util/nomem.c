/* Out of memory: say so in one line (see nomem.h). */
#include "nomem.h"

#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <unistd.h>

_Noreturn void vt_nomem(void)
{
	/* the line needs no memory: snprintf into the stack, write(2) */
	struct rusage ru;
	long mib = getrusage(RUSAGE_SELF, &ru) == 0 ? ru.ru_maxrss / 1024 : -1;
	char line[256];
	int n = snprintf(line, sizeof line,
	                 "vramtrace: out of memory after %ld MiB: the trace needs more memory than "
	                 "this machine (or its limit) gives the analyzer (`report --stream` and "
	                 "`diff --stream` need memory only for what is live at once)\n",
	                 mib);
	if (n > 0) {
		ssize_t w = write(STDERR_FILENO, line,
		                  (size_t)n < sizeof line ? (size_t)n : sizeof line - 1);
		(void)w; /* nothing more to do if stderr is gone */
	}
	exit(3); /* stdio flushed: what was printed before stays whole */
}

void *vt_xcalloc(size_t n, size_t size)
{
	void *p = calloc(n ? n : 1, size ? size : 1);
	if (!p)
		vt_nomem();
	return p;
}

void *vt_xgrow(void *arr, size_t *cap, size_t need, size_t elem)
{
	if (need <= *cap)
		return arr;
	size_t c = *cap ? *cap * 2 : 16;
	while (c < need)
		c *= 2;
	void *p = realloc(arr, c * elem);
	if (!p)
		vt_nomem();
	*cap = c;
	return p;
}
