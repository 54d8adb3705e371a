/* A yes/no environment switch (VRAMTRACE_DISABLE, VRAMTRACE_FREE_STACKS):
 * set, non-empty and not "0". One rule for every part of the shim that reads
 * one; getenv only, no allocation. */
#ifndef VT_ENV_FLAG_H
#define VT_ENV_FLAG_H

#include <stdlib.h>
#include <string.h>

static inline int vt_env_flag(const char *name)
{
	const char *v = getenv(name);
	return v && *v && strcmp(v, "0") != 0;
}

#endif
