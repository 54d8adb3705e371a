/* Yes/no environment switches, one rule for the shim and the launcher.
 *
 * A switch is false when it is unset, empty, or one of 0, no, off, false
 * (any case); any other value is true. vt_env_flag reads a switch that is
 * off unless asked for (VRAMTRACE_DISABLE, VRAMTRACE_FREE_STACKS);
 * vt_env_off one that is on unless turned off (VRAMTRACE_PYTHON,
 * VRAMTRACE_TSC, VRAMTRACE_RELAY): only a false word turns it off.
 * Why one rule: the switches were read three ways ("0" only, a leading '0',
 * 0/off/no), so VRAMTRACE_DISABLE=false disabled the shim.
 * getenv only, no allocation, no locale: safe in the shim's constructor. */
#ifndef VRAMTRACE_ENV_FLAG_H
#define VRAMTRACE_ENV_FLAG_H

#include <stdlib.h>

/* Is v (non-NULL) one of the false words, ASCII case ignored? */
static inline int vt_env_false_word(const char *v)
{
	static const char *const words[] = {"0", "no", "off", "false"};
	for (unsigned w = 0; w < sizeof words / sizeof words[0]; w++) {
		const char *a = v, *b = words[w];
		while (*a && (*a >= 'A' && *a <= 'Z' ? *a + ('a' - 'A') : *a) == *b)
			a++, b++;
		if (!*a && !*b)
			return 1;
	}
	return 0;
}

/* A switch that is off unless set to a true value. */
static inline int vt_env_flag(const char *name)
{
	const char *v = getenv(name);
	return v && *v && !vt_env_false_word(v);
}

/* A switch that is on unless set to a false word (empty counts as unset). */
static inline int vt_env_off(const char *name)
{
	const char *v = getenv(name);
	return v && *v && vt_env_false_word(v);
}

#endif
