/* The full-screen view of `vramtrace top` (ncurses): draws frames
 * (top_frame.h) and reads keys. Built only when CMake found curses
 * (VT_HAVE_CURSES); vt_top_screen_available() says whether it was. */
#ifndef VT_TOP_SCREEN_H
#define VT_TOP_SCREEN_H

#include "top_frame.h"

enum vt_top_key { VT_TOP_KEY_NONE = 0, VT_TOP_KEY_QUIT, VT_TOP_KEY_OTHER };

struct vt_top_view {
	int device; /* index into the frame's devs shown in detail */
	int sort;   /* 0: sites by bytes, 1: by allocations */
	int frozen; /* space / f: the last frame stays */
	int help;   /* ?: the key list */
};

int vt_top_screen_available(void);
/* Take the terminal (curses mode). 0, or -1 when it is no terminal. */
int vt_top_screen_open(void);
/* Give the terminal back as it was (also from a signal's exit path). */
void vt_top_screen_close(void);
void vt_top_screen_draw(const struct vt_top_frame *fr, const struct vt_top_view *v);
/* Wait up to ms for a key and apply it to v. */
enum vt_top_key vt_top_screen_key(struct vt_top_view *v, int ndevs, int ms);

#endif
