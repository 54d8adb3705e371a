/* vramtrace top [options] DIR: follow a trace while its job runs
 * (docs/top.md). Reads the logs' shared mappings incrementally
 * (vt_trace_follow, model_load.h): it never locks or writes them. */
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "commands.h"
#include "model_load.h"
#include "top_frame.h"
#include "top_screen.h"

static const struct vt_cli_option top_options[] = {
    {"--once", NULL, "print one frame as text and exit (no full screen)"},
    {"--json", NULL, "print one frame as a JSON object and exit"},
    {"-n", "SECONDS", "refresh interval (default 1)"},
    {NULL, NULL, NULL},
};

static const struct vt_cli_help top_help = {
    "top", "DIR",
    "Watch a trace while its job runs: live and peak bytes per device, top sites, steps.",
    top_options,
    "keys: Tab or 1-9 device, s sort, space or f freeze, ? help, q quit (Ctrl-C too).\n"
    "exit: 0, 1 when the trace cannot be read, 2 for a usage error, 128+N on signal N.\n"};

struct top_args {
	const char *dir;
	int once, json;
	double interval_s;
};

static int top_option(void *ctx, const struct vt_cli_option *o, const char *v)
{
	struct top_args *a = ctx;
	if (!strcmp(o->name, "--once")) {
		a->once = 1;
	} else if (!strcmp(o->name, "--json")) {
		a->json = 1;
	} else {
		char *end;
		double s = strtod(v, &end);
		if (*end || !(s >= 0.05 && s <= 3600))
			return vt_cli_usage_error("top",
			                          "-n wants seconds (0.05 to 3600), not '%s'", v);
		a->interval_s = s;
	}
	return 0;
}

static int top_operand(void *ctx, const char *arg)
{
	return vt_cli_one_trace("top", &((struct top_args *)ctx)->dir, arg);
}

static volatile sig_atomic_t stop_signal;

static void on_signal(int sig)
{
	stop_signal = sig;
}

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* --once / --json: one frame, with the report's categories and findings. */
static int print_once(struct vt_trace_follow *f, const struct top_args *a)
{
	static struct vt_top_frame fr;
	vt_trace_follow_poll(f);
	vt_top_frame_fill(&fr, f, a->dir, NULL, 0);
	if (fr.nprocs)
		vt_top_frame_add_report(&fr, a->dir);
	int rc = a->json ? vt_top_frame_json(&fr, stdout) : vt_top_frame_text(&fr, stdout);
	return rc ? 1 : 0;
}

/* One refresh: read on, and once the job has ended, add the report's
 * categories and findings (once: nothing changes after). */
static void refresh_frame(struct vt_trace_follow *f, const struct top_args *a,
                          struct vt_top_frame *fr, struct vt_top_frame *prev, double *t_prev)
{
	vt_trace_follow_poll(f);
	double t = now_s();
	*prev = *fr;
	vt_top_frame_fill(fr, f, a->dir, prev, t - *t_prev);
	*t_prev = t;
	if (fr->nprocs && fr->state != 0 && !fr->have_report)
		vt_top_frame_add_report(fr, a->dir);
}

static int run_screen(struct vt_trace_follow *f, const struct top_args *a)
{
	static struct vt_top_frame fr, prev, shown;
	struct sigaction sa = {.sa_handler = on_signal};
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	if (vt_top_screen_open() < 0) {
		fprintf(stderr,
		        "vramtrace top: no terminal for the full screen; use --once or --json\n");
		return 1;
	}
	struct vt_top_view view = {0};
	double t_prev = now_s(), next = t_prev;
	while (!stop_signal) {
		if (now_s() >= next) {
			refresh_frame(f, a, &fr, &prev, &t_prev);
			next = t_prev + a->interval_s;
			if (!view.frozen)
				shown = fr;
			vt_top_screen_draw(&shown, &view);
		}
		int wait_ms = (int)((next - now_s()) * 1000);
		enum vt_top_key k =
		    vt_top_screen_key(&view, shown.ndevs, wait_ms > 0 ? wait_ms : 0);
		if (k == VT_TOP_KEY_QUIT)
			break;
		if (k == VT_TOP_KEY_OTHER) {
			if (!view.frozen)
				shown = fr;
			vt_top_screen_draw(&shown, &view);
		}
	}
	vt_top_screen_close();
	if (stop_signal) { /* the terminal is back: die of the signal, as asked */
		signal(stop_signal, SIG_DFL);
		raise(stop_signal);
		return 128 + stop_signal;
	}
	return 0;
}

int cmd_top(int argc, char **argv)
{
	struct top_args a = {.interval_s = 1.0};
	const struct vt_cli_parser parser = {&top_help, top_option, top_operand, 0};
	int next, rc = vt_cli_parse(&parser, argc, argv, &a, &next);
	if (rc)
		return rc == VT_CLI_HELP_SHOWN ? 0 : rc;
	if (!a.dir)
		return vt_cli_usage_error("top",
		                          "which trace? (a directory `vramtrace run` writes)");
	if (!a.once && !a.json && !vt_top_screen_available())
		return vt_cli_usage_error(
		    "top", "built without ncurses: only --once and --json are available");
	char err[512];
	struct vt_trace_follow *f = vt_trace_follow_open(a.dir, err, sizeof err);
	if (!f) { /* a missing trace is said first: it is the bigger mistake */
		fprintf(stderr, "vramtrace top: %s\n", err);
		return 1;
	}
	if (!a.once && !a.json && (!isatty(STDIN_FILENO) || !isatty(STDOUT_FILENO))) {
		vt_trace_follow_close(f);
		return vt_cli_usage_error("top",
		                          "the full screen needs a terminal; use --once or --json");
	}
	rc = a.once || a.json ? print_once(f, &a) : run_screen(f, &a);
	vt_trace_follow_close(f);
	return rc;
}
