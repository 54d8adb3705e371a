/* The terminal: colour only on a TTY and never with NO_COLOR set
 * (https://no-color.org: any non-empty value), and a progress bar on
 * stderr, drawn only when stderr is a TTY, for reading a large trace.
 *
 *   const char *on = vt_term_color(stdout, VT_COLOR_BOLD), *off = vt_term_color(stdout,
 * VT_COLOR_RESET); printf("%speak%s\n", on, off);          // plain text when piped
 *
 *   struct vt_progress p; vt_progress_begin(&p, "reading");
 *   vt_progress_update(&p, done, total);    // cheap: redraws at most 10 times a second
 *   vt_progress_end(&p);                    // clears the line
 */
#ifndef VT_TERM_H
#define VT_TERM_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

enum vt_color {
	VT_COLOR_RESET = 0,
	VT_COLOR_BOLD,
	VT_COLOR_DIM,
	VT_COLOR_RED,
	VT_COLOR_GREEN,
	VT_COLOR_YELLOW,
	VT_COLOR_BLUE,
	VT_COLOR_COUNT
};

/* Text that comes from a trace (an exe path, a symbol name, a sidecar's
 * names), made safe to print: ASCII and C1 control characters become '?', so
 * a hostile trace cannot send escape sequences to the terminal. Returns buf. */
const char *vt_term_safe(const char *s, char *buf, size_t n);

/* 1 if colour escapes may be written to f. */
int vt_term_use_color(FILE *f);
/* The escape for c on f, or "" when colour is off for f. */
const char *vt_term_color(FILE *f, enum vt_color c);
/* The 24-bit foreground escape for rgb (0xRRGGBB) on f, written into buf
 * (24 bytes are enough), or "" when colour is off for f: the HTML page's
 * colours, the same in the terminal. */
const char *vt_term_rgb(FILE *f, uint32_t rgb, char *buf, size_t len);

struct vt_progress {
	int enabled; /* stderr is a TTY */
	const char *label;
	uint64_t last_draw_ns;
	int drawn;
};

void vt_progress_begin(struct vt_progress *p, const char *label);
void vt_progress_update(struct vt_progress *p, uint64_t done, uint64_t total);
void vt_progress_end(struct vt_progress *p);

/* For vt_model_set_load_progress (model_load.h): ctx is a struct vt_progress. */
void vt_progress_hook(uint64_t done, uint64_t total, void *ctx);

#endif
