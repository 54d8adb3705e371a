/* Export sizes and times on a generated trace of a million events (or
 * VT_BENCH_EXPORT_EVENTS): each format written once, and the HTML page
 * loaded in headless Chromium (VT_CHROMIUM, else chromium on the PATH; the
 * page's own #selftest mode says how long parsing and drawing took).
 * Prints bench rows (bench/run_all.sh).
 *   bench_export [TRACE_DIR]     (no argument: generate into a temp dir) */
#define _GNU_SOURCE
#include <dirent.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "export_csv.h"
#include "export_data.h"
#include "export_folded.h"
#include "export_html.h"
#include "export_perfetto.h"
#include "gen_trace.h"
#include "model.h"
#include "model_load.h"

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void row(const char *name, const char *fmt, double v, const char *unit)
{
	printf("export\t%s\t", name);
	printf(fmt, v);
	printf("\t%s\n", unit);
}

static void remove_dir(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	while (d && (e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		char path[4500];
		snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
		unlink(path);
	}
	if (d)
		closedir(d);
	rmdir(dir);
}

enum { HTML, PERFETTO, FOLDED, CSV, NFORMATS };
static const char *const format_names[NFORMATS] = {"html", "perfetto", "folded", "csv"};

static int write_format(int f, const struct vt_export *x, const char *dir, FILE *out)
{
	switch (f) {
	case HTML: return vt_export_html(x, dir, out);
	case PERFETTO: return vt_export_perfetto(x, dir, out);
	case FOLDED: return vt_export_folded(x, out);
	default: return vt_export_csv(x, out);
	}
}

/* Write one format into out_dir; its size and time as rows. */
static int bench_format(int f, const struct vt_export *x, const char *trace, const char *out_dir,
                        char *path, size_t pathlen)
{
	snprintf(path, pathlen, "%s/export.%s", out_dir, format_names[f]);
	FILE *out = fopen(path, "w");
	if (!out)
		return -1;
	double t0 = now();
	int rc = write_format(f, x, trace, out);
	rc |= fclose(out);
	double dt = now() - t0;
	struct stat st;
	if (rc || stat(path, &st) != 0)
		return -1;
	char name[64];
	snprintf(name, sizeof name, "%s_bytes", format_names[f]);
	row(name, "%.0f", (double)st.st_size, "bytes");
	snprintf(name, sizeof name, "%s_write", format_names[f]);
	row(name, "%.3f", dt, "s");
	return 0;
}

static const char *find_chromium(void)
{
	const char *env = getenv("VT_CHROMIUM");
	if (env && *env)
		return env;
	static const char *const candidates[] = {"/usr/bin/chromium", "/usr/bin/chromium-browser"};
	for (size_t i = 0; i < sizeof candidates / sizeof candidates[0]; i++)
		if (access(candidates[i], X_OK) == 0)
			return candidates[i];
	return NULL;
}

/* Load a page headless; wall seconds, and the page's own "page_ms". */
static double load_page(const char *chromium, const char *url, const char *profile,
                        double *page_ms)
{
	char cmd[8192];
	snprintf(cmd, sizeof cmd,
	         "'%s' --headless --no-sandbox --disable-gpu --disable-dev-shm-usage --no-first-run "
	         "--user-data-dir='%s' --virtual-time-budget=60000 --window-size=1400,1900 "
	         "--dump-dom '%s' 2>/dev/null",
	         chromium, profile, url);
	double t0 = now();
	FILE *p = popen(cmd, "r");
	if (!p)
		return -1;
	/* the DOM, whole: the self-check line is near its end */
	char *dom = NULL, buf[1 << 16];
	size_t len = 0, n;
	while ((n = fread(buf, 1, sizeof buf, p)) > 0) {
		char *grown = realloc(dom, len + n + 1);
		if (!grown)
			break;
		dom = grown;
		memcpy(dom + len, buf, n);
		len += n;
		dom[len] = 0;
	}
	*page_ms = -1;
	const char *m = dom ? strstr(dom, "\"page_ms\":") : NULL;
	if (m)
		*page_ms = atof(strchr(m, ':') + 1);
	free(dom);
	int rc = pclose(p);
	return rc == 0 ? now() - t0 : -1;
}

static void bench_browser(const char *out_dir, const char *html)
{
	const char *chromium = find_chromium();
	if (!chromium) {
		fprintf(stderr, "bench_export: no chromium: the page's load time is not measured\n");
		return;
	}
	char profile[4200], url[4400], blank[4200];
	snprintf(profile, sizeof profile, "%s/chromium-profile", out_dir);
	snprintf(blank, sizeof blank, "%s/blank.html", out_dir);
	FILE *b = fopen(blank, "w");
	if (b) {
		fputs("<!DOCTYPE html><title>blank</title>", b);
		fclose(b);
	}
	double ms;
	snprintf(url, sizeof url, "file://%s", blank);
	double base = load_page(chromium, url, profile, &ms);
	snprintf(url, sizeof url, "file://%s#selftest", html);
	double wall = load_page(chromium, url, profile, &ms);
	if (base >= 0)
		row("chromium_blank_page_wall", "%.2f", base, "s");
	if (wall >= 0)
		row("html_load_wall", "%.2f", wall, "s");
	if (ms >= 0)
		row("html_load_in_page", "%.0f", ms, "ms");
	char rm[4300];
	snprintf(rm, sizeof rm, "rm -rf '%s'", profile);
	if (system(rm) != 0)
		fprintf(stderr, "bench_export: could not remove %s\n", profile);
	unlink(blank);
}

int main(int argc, char **argv)
{
	char tmpl[] = "/tmp/vt-bench-export.XXXXXX";
	const char *trace = argc > 1 ? argv[1] : NULL;
	char *out_dir = mkdtemp(tmpl);
	if (!out_dir)
		return perror("mkdtemp"), 1;
	char trace_dir[4200];
	uint64_t events = 0;
	if (!trace) {
		const char *env = getenv("VT_BENCH_EXPORT_EVENTS");
		uint64_t want = env ? strtoull(env, NULL, 10) : 1000000;
		snprintf(trace_dir, sizeof trace_dir, "%s/trace", out_dir);
		if (vt_gen_trace(trace_dir, want, 8, &events) != 0)
			return 1;
		trace = trace_dir;
	}
	char err[512];
	double t0 = now();
	struct vt_model *m = vt_model_load_trace(trace, err, sizeof err);
	if (!m)
		return fprintf(stderr, "bench_export: %s\n", err), 1;
	struct vt_export x;
	if (vt_export_open(&x, m, NULL, err, sizeof err) != 0)
		return fprintf(stderr, "bench_export: %s\n", err), 1;
	row("events", "%.0f", (double)m->totals.events, "events");
	row("load_classify", "%.3f", now() - t0, "s");
	char path[NFORMATS][4300];
	for (int f = 0; f < NFORMATS; f++)
		if (bench_format(f, &x, trace, out_dir, path[f], sizeof path[f]) != 0)
			fprintf(stderr, "bench_export: %s export failed\n", format_names[f]);
	vt_export_close(&x);
	vt_model_free(m);
	bench_browser(out_dir, path[HTML]);
	for (int f = 0; f < NFORMATS; f++)
		unlink(path[f]);
	if (trace == trace_dir)
		remove_dir(trace_dir);
	rmdir(out_dir);
	(void)events;
	return 0;
}
