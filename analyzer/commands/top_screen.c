/* The full-screen view of `vramtrace top` (top_screen.h). */
#include "top_screen.h"

#ifdef VT_HAVE_CURSES
#include <curses.h>
#include <string.h>

#include "units.h"

int vt_top_screen_available(void)
{
	return 1;
}

static int screen_on;

int vt_top_screen_open(void)
{
	if (!initscr())
		return -1;
	screen_on = 1;
	cbreak(); /* Ctrl-C still raises SIGINT: cmd_top ends the screen then */
	noecho();
	curs_set(0);
	keypad(stdscr, TRUE);
	return 0;
}

void vt_top_screen_close(void)
{
	if (screen_on)
		endwin();
	screen_on = 0;
}

/* [#####.....] of width w for part of whole. */
static void bar(int y, int x, int w, uint64_t part, uint64_t whole)
{
	int n = whole ? (int)((double)part / (double)whole * w + 0.5) : 0;
	n = n > w ? w : n;
	mvaddch(y, x, '[');
	for (int i = 0; i < w; i++)
		addch(i < n ? '#' : '.');
	addch(']');
}

static void draw_device(int *y, const struct vt_top_device *d, int selected)
{
	char live[32], peak[32], cap[32];
	vt_format_bytes(d->live, live, sizeof live);
	vt_format_bytes(d->peak, peak, sizeof peak);
	vt_format_bytes(d->capacity, cap, sizeof cap);
	if (selected)
		attron(A_BOLD);
	mvprintw(*y, 0, "%cGPU %d  live %-10s peak %-10s capacity %s", selected ? '>' : ' ',
	         d->ordinal, live, peak, d->capacity ? cap : "unknown");
	attroff(A_BOLD);
	uint64_t whole = d->capacity ? d->capacity : d->peak;
	bar(*y, 68, 30, d->live, whole);
	(*y)++;
	for (int c = 0; selected && d->have_cats && c < VT_CAT_COUNT; c++) {
		if (!d->cats[c])
			continue;
		vt_format_bytes(d->cats[c], live, sizeof live);
		mvprintw(*y, 4, "%-12s %10s at peak", vt_category_name(c), live);
		bar(*y, 40, 30, d->cats[c], d->peak);
		(*y)++;
	}
}

static void draw_help(void)
{
	static const char *const lines[] = {
	    "Tab, 1-9   switch device",
	    "s          sort sites (bytes / allocations)",
	    "space, f   freeze / unfreeze",
	    "?          this help",
	    "q, Ctrl-C  quit",
	};
	for (size_t i = 0; i < sizeof lines / sizeof lines[0]; i++)
		mvprintw(4 + (int)i, 4, "%s", lines[i]);
}

static void draw_sites(int *y, const struct vt_top_frame *fr, const struct vt_top_view *v)
{
	int order[VT_TOP_SITES];
	for (int i = 0; i < fr->nsites; i++)
		order[i] = i;
	for (int i = 1; v->sort && i < fr->nsites; i++) /* by allocations: insertion sort */
		for (int k = i;
		     k > 0 && fr->sites[order[k]].allocs > fr->sites[order[k - 1]].allocs; k--) {
			int t = order[k];
			order[k] = order[k - 1];
			order[k - 1] = t;
		}
	mvprintw((*y)++, 0, "top sites now (by %s):", v->sort ? "allocations" : "bytes");
	for (int i = 0; i < fr->nsites && *y < LINES - 2; i++) {
		const struct vt_top_site *s = &fr->sites[order[i]];
		char b[32];
		vt_format_bytes(s->bytes, b, sizeof b);
		mvprintw((*y)++, 2, "%10s  GPU %d  %7llu allocs  %.*s", b, s->device,
		         (unsigned long long)s->allocs, COLS > 40 ? COLS - 40 : 0, s->name);
	}
}

void vt_top_screen_draw(const struct vt_top_frame *fr, const struct vt_top_view *v)
{
	erase();
	mvprintw(0, 0, "vramtrace top  %s  %s%s  processes %u (%u gone)  steps %llu (%.1f/s)",
	         fr->dir, vt_top_state_name(fr->state), v->frozen ? " [frozen]" : "", fr->nprocs,
	         fr->left, (unsigned long long)fr->steps, fr->steps_per_s);
	mvprintw(1, 0,
	         "events %llu (%.0f/s)   Tab: device  s: sort  space: freeze  ?: help  q: quit",
	         (unsigned long long)fr->events, fr->events_per_s);
	if (v->help) {
		draw_help();
		refresh();
		return;
	}
	int y = 3;
	for (int i = 0; i < fr->ndevs; i++)
		draw_device(&y, &fr->devs[i], i == v->device);
	if (!fr->ndevs)
		mvprintw(y++, 0, "no device memory recorded yet");
	y++;
	draw_sites(&y, fr, v);
	for (int i = 0; i < fr->nfindings && y < LINES - 1; i++)
		mvprintw(y++, 0, "finding: %s", fr->findings[i]);
	refresh();
}

enum vt_top_key vt_top_screen_key(struct vt_top_view *v, int ndevs, int ms)
{
	timeout(ms);
	int ch = getch();
	if (ch == ERR)
		return VT_TOP_KEY_NONE;
	if (ch == 'q' || ch == 'Q')
		return VT_TOP_KEY_QUIT;
	if (ch == '\t' && ndevs)
		v->device = (v->device + 1) % ndevs;
	else if (ch >= '1' && ch <= '9' && ch - '1' < ndevs)
		v->device = ch - '1';
	else if (ch == 's')
		v->sort = !v->sort;
	else if (ch == ' ' || ch == 'f')
		v->frozen = !v->frozen;
	else if (ch == '?')
		v->help = !v->help;
	return VT_TOP_KEY_OTHER;
}

#else /* no curses: --once and --json only */

int vt_top_screen_available(void)
{
	return 0;
}
int vt_top_screen_open(void)
{
	return -1;
}
void vt_top_screen_close(void)
{
}
void vt_top_screen_draw(const struct vt_top_frame *fr, const struct vt_top_view *v)
{
	(void)fr;
	(void)v;
}
enum vt_top_key vt_top_screen_key(struct vt_top_view *v, int ndevs, int ms)
{
	(void)v;
	(void)ndevs;
	(void)ms;
	return VT_TOP_KEY_QUIT;
}
#endif
