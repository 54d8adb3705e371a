/* Environment of the simulated driver.
 *
 *   VT_SIM_CAPACITY        bytes per device, K/M/G/T suffix (default 16G)
 *   VT_SIM_DEVICES         device count 1..8 (default 1)
 *   VT_SIM_DRIVER_VERSION  cuDriverGetVersion (default 13000); entry points
 *                          introduced after it are hidden like VT_SIM_MISSING
 *   VT_SIM_MISSING         comma list of base names ("cuMemAllocAsync") or
 *                          exported symbols ("cuMemcpyBatchAsync_v2") that
 *                          dlsym and cuGetProcAddress must not find
 *   VT_SIM_NESTED          1: cuMemAllocAsync_ptsz calls the exported
 *                          cuMemAllocAsync, which calls cuMemAlloc_v2
 *
 * Capacity, devices and version are read at the first cuInit (or after
 * vtsim_reset()); hiding is evaluated at every lookup. The hiding test runs
 * inside ifunc resolvers, possibly before libc or a sanitizer runtime is
 * ready, so it touches nothing but `environ` and plain memory. */
#include "sim_internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

extern char **environ;

#define DEFAULT_CAPACITY (16ull << 30)
#define DEFAULT_DRIVER_VERSION 13000

VTSIM_NOSAN static const char *env_value(const char *name)
{
	if (!environ)
		return NULL;
	for (char **e = environ; *e; e++) {
		const char *s = *e, *n = name;
		while (*n && *s == *n) {
			s++;
			n++;
		}
		if (!*n && *s == '=')
			return s + 1;
	}
	return NULL;
}

/* Decimal integer, or fallback when absent or malformed. */
VTSIM_NOSAN static int env_int(const char *text, int fallback)
{
	if (!text || !*text)
		return fallback;
	long v = 0;
	for (const char *p = text; *p; p++) {
		if (*p < '0' || *p > '9' || v > 100000000)
			return fallback;
		v = v * 10 + (*p - '0');
	}
	return (int)v;
}

VTSIM_NOSAN static inline int is_sep(char c) { return c == ',' || c == ' ' || c == ':' || c == ';'; }

/* Does item [p, end) name `word`, or `word` minus its _ptds/_ptsz suffix?
 * (Hiding "cuMemcpyBatchAsync_v2" hides the whole 13.0 ABI.) */
VTSIM_NOSAN static int item_names(const char *p, const char *end, const char *word)
{
	const char *w = word;
	while (p < end && *w && *p == *w) {
		p++;
		w++;
	}
	if (p != end)
		return 0;
	if (!*w)
		return 1;
	return w[0] == '_' && w[1] == 'p' && w[2] == 't' &&
	       ((w[3] == 'd' && w[4] == 's') || (w[3] == 's' && w[4] == 'z')) && !w[5];
}

/* Is `word` one of the separated items of `list`? */
VTSIM_NOSAN static int list_has(const char *list, const char *word)
{
	const char *p = list;
	while (*p) {
		while (*p && is_sep(*p))
			p++;
		const char *start = p;
		while (*p && !is_sep(*p))
			p++;
		if (p > start && item_names(start, p, word))
			return 1;
	}
	return 0;
}

VTSIM_NOSAN int sim_env_hides(const char *base, const char *symbol, int version)
{
	if (version > env_int(env_value("VT_SIM_DRIVER_VERSION"), DEFAULT_DRIVER_VERSION))
		return 1;
	const char *missing = env_value("VT_SIM_MISSING");
	return missing && (list_has(missing, base) || list_has(missing, symbol));
}

int sim_parse_size(const char *text, size_t *out)
{
	static const struct {
		char suffix;
		unsigned shift;
	} units[] = {{'K', 10}, {'M', 20}, {'G', 30}, {'T', 40}};
	char *end;
	errno = 0;
	unsigned long long v = strtoull(text, &end, 10);
	if (errno || end == text || *text == '-')
		return -1;
	unsigned shift = 0;
	if (*end) {
		char c = (char)(*end & ~0x20); /* upper case */
		size_t i;
		for (i = 0; i < sizeof units / sizeof units[0] && units[i].suffix != c; i++)
			;
		if (i == sizeof units / sizeof units[0])
			return -1;
		shift = units[i].shift;
		end++;
		if ((*end == 'i' || *end == 'I') && (end[1] == 'B' || end[1] == 'b'))
			end += 2;
		else if (*end == 'B' || *end == 'b')
			end++;
	}
	if (*end || v == 0 || (shift && v > (~0ull >> shift)))
		return -1;
	*out = (size_t)(v << shift);
	return 0;
}

size_t sim_env_capacity(void)
{
	const char *text = getenv("VT_SIM_CAPACITY");
	size_t cap;
	if (!text || !*text)
		return DEFAULT_CAPACITY;
	if (sim_parse_size(text, &cap) != 0) {
		fprintf(stderr, "vtsim: bad VT_SIM_CAPACITY '%s' (bytes, optional K/M/G/T suffix); using 16G\n",
			text);
		return DEFAULT_CAPACITY;
	}
	return cap;
}

/* Bytes a device's first context holds back (the CUDA context, kernel
 * images): charged, never allocated by the job. 0 without the variable. */
size_t sim_env_context_reserve(void)
{
	const char *text = getenv("VT_SIM_CONTEXT_RESERVE");
	size_t bytes;
	if (!text || !*text)
		return 0;
	if (sim_parse_size(text, &bytes) != 0) {
		fprintf(stderr, "vtsim: bad VT_SIM_CONTEXT_RESERVE '%s' (bytes, optional K/M/G/T suffix); using 0\n",
			text);
		return 0;
	}
	return bytes;
}

int sim_env_devices(void)
{
	const char *text = getenv("VT_SIM_DEVICES");
	int n = env_int(text, -1);
	if (!text || !*text)
		return 1;
	if (n < 1 || n > VTSIM_MAX_DEVICES) {
		fprintf(stderr, "vtsim: bad VT_SIM_DEVICES '%s' (1..%d); using 1\n", text, VTSIM_MAX_DEVICES);
		return 1;
	}
	return n;
}

int sim_env_driver_version(void)
{
	return env_int(env_value("VT_SIM_DRIVER_VERSION"), DEFAULT_DRIVER_VERSION);
}

int sim_env_nested(void)
{
	return env_int(env_value("VT_SIM_NESTED"), 0) == 1;
}
