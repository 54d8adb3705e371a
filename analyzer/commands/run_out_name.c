/* The -o placeholders of `vramtrace run` (run_out_name.h). */
#include "run_out_name.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rank_env.h"

/* Append s[0..n) to out at *at, '/' made '_'; -1 when out is full. */
static int put(char *out, size_t len, size_t *at, const char *s, size_t n, int no_slash)
{
	if (*at + n >= len)
		return -1;
	for (size_t i = 0; i < n; i++)
		out[(*at)++] = no_slash && s[i] == '/' ? '_' : s[i];
	out[*at] = '\0';
	return 0;
}

/* The value of the %q{NAME} that starts at p ("%q{"), its end in *end. */
static const char *env_placeholder(const char *p, const char **end, char *err, size_t errlen)
{
	const char *close = strchr(p + 3, '}');
	char name[256];
	size_t n = close ? (size_t)(close - (p + 3)) : 0;
	if (!close || n == 0 || n >= sizeof name) {
		snprintf(err, errlen, "-o: %%q needs a variable's name in braces, as %%q{RANK}");
		return NULL;
	}
	memcpy(name, p + 3, n);
	name[n] = '\0';
	const char *v = getenv(name);
	if (!v || !*v) {
		snprintf(err, errlen, "-o: %%q{%s}: %s is not set in this environment", name, name);
		return NULL;
	}
	*end = close + 1;
	return v;
}

/* gethostname leaves a truncated name unterminated. */
static const char *host_name(char *buf, size_t len)
{
	if (gethostname(buf, len - 1))
		return "unknown-host";
	buf[len - 1] = '\0';
	return buf;
}

int vt_run_out_name(const char *pattern, char *out, size_t len, char *err, size_t errlen)
{
	size_t at = 0;
	char host[256], pid[24];
	if (!len)
		return -1;
	out[0] = '\0';
	for (const char *p = pattern; *p;) {
		const char *value = NULL, *next = p + 2;
		if (p[0] != '%') {
			next = p + 1;
			if (put(out, len, &at, p, 1, 0))
				goto too_long;
			p = next;
			continue;
		}
		if (p[1] == '%')
			value = "%";
		else if (p[1] == 'h')
			value = host_name(host, sizeof host);
		else if (p[1] == 'p')
			value = (snprintf(pid, sizeof pid, "%d", (int)getpid()), pid);
		else if (p[1] == 'q' && p[2] == '{')
			value = env_placeholder(p, &next, err, errlen);
		else {
			snprintf(err, errlen,
			         "-o: unknown placeholder '%%%c' (%%h, %%p, %%q{NAME}, %%%%)",
			         p[1] ? p[1] : ' ');
			return -1;
		}
		if (!value)
			return -1;
		if (put(out, len, &at, value, strlen(value), 1))
			goto too_long;
		p = next;
	}
	return 0;
too_long:
	snprintf(err, errlen, "-o: the directory's name is too long once filled in");
	return -1;
}

long vt_run_env_rank(void)
{
	struct vt_file_header h;
	memset(&h, 0, sizeof h);
	vt_rank_env_describe(&h);
	return h.rank_source ? (long)h.rank_p1 - 1 : -1;
}
