/* Terminal colours and the progress bar (see term.h). */
#include "term.h"

#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

int vt_term_use_color(FILE *f)
{
	const char *no = getenv("NO_COLOR");
	if (no && *no)
		return 0;
	const char *term = getenv("TERM");
	if (term && !*term)
		return 0;
	if (term && !__builtin_strcmp(term, "dumb"))
		return 0;
	return isatty(fileno(f));
}

const char *vt_term_color(FILE *f, enum vt_color c)
{
	static const char *const esc[VT_COLOR_COUNT] = {
	    [VT_COLOR_RESET] = "\033[0m",  [VT_COLOR_BOLD] = "\033[1m",
	    [VT_COLOR_DIM] = "\033[2m",    [VT_COLOR_RED] = "\033[31m",
	    [VT_COLOR_GREEN] = "\033[32m", [VT_COLOR_YELLOW] = "\033[33m",
	    [VT_COLOR_BLUE] = "\033[34m",
	};
	if ((unsigned)c >= VT_COLOR_COUNT || !vt_term_use_color(f))
		return "";
	return esc[c];
}

const char *vt_term_rgb(FILE *f, uint32_t rgb, char *buf, size_t len)
{
	if (!vt_term_use_color(f) || len == 0)
		return "";
	snprintf(buf, len, "\033[38;2;%u;%u;%um", (rgb >> 16) & 0xffu, (rgb >> 8) & 0xffu,
	         rgb & 0xffu);
	return buf;
}

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

void vt_progress_begin(struct vt_progress *p, const char *label)
{
	p->enabled = isatty(STDERR_FILENO);
	p->label = label;
	/* nothing for the first half second: small traces never show a bar */
	p->last_draw_ns = now_ns() + 400000000u;
	p->drawn = 0;
}

void vt_progress_update(struct vt_progress *p, uint64_t done, uint64_t total)
{
	if (!p->enabled || total == 0)
		return;
	uint64_t now = now_ns();
	if (now < p->last_draw_ns + 100000000u)
		return;
	p->last_draw_ns = now;
	p->drawn = 1;
	if (done > total)
		done = total;
	enum { WIDTH = 30 };
	unsigned fill = (unsigned)(done * WIDTH / total), pct = (unsigned)(done * 100 / total);
	char bar[WIDTH + 1];
	for (unsigned i = 0; i < WIDTH; i++)
		bar[i] = i < fill ? '#' : '.';
	bar[WIDTH] = 0;
	fprintf(stderr, "\r%s [%s] %3u%%", p->label, bar, pct);
	fflush(stderr);
}

void vt_progress_end(struct vt_progress *p)
{
	if (p->enabled && p->drawn) {
		fputs("\r\033[K", stderr);
		fflush(stderr);
	}
	p->drawn = 0;
}

void vt_progress_hook(uint64_t done, uint64_t total, void *ctx)
{
	vt_progress_update(ctx, done, total);
}

const char *vt_term_safe(const char *s, char *buf, size_t n)
{
	size_t i = 0;
	for (const unsigned char *p = (const unsigned char *)s; p && *p && i + 1 < n; p++) {
		int c1 = p[0] == 0xc2 && p[1] >= 0x80 && p[1] <= 0x9f; /* U+0080..U+009F */
		buf[i++] = *p < 0x20 || *p == 0x7f || c1 ? '?' : (char)*p;
		p += c1;
	}
	if (n)
		buf[i] = '\0';
	return buf;
}
