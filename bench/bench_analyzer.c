/* Analyzer throughput: a generated trace of >= 10 million events (or
 * VT_BENCH_ANALYZER_EVENTS) loaded into the model, classified and turned into
 * the report, single-threaded. Prints bench rows (bench/run_all.sh):
 * events per second, peak memory, and the ratio to merely reading the file.
 *   bench_analyzer [TRACE_DIR]     (no argument: generate into a temp dir) */
#define _GNU_SOURCE
#include <dirent.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "gen_trace.h"
#include "model.h"
#include "report.h"

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* What `cat` does: read every log of the directory once. */
static double read_all(const char *dir, uint64_t *bytes)
{
	static char buf[1 << 20];
	double t0 = now();
	DIR *d = opendir(dir);
	struct dirent *e;
	*bytes = 0;
	while (d && (e = readdir(d))) {
		if (strncmp(e->d_name, "vramtrace.", 10))
			continue;
		char path[4096];
		snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
		int fd = open(path, O_RDONLY);
		ssize_t n;
		while (fd >= 0 && (n = read(fd, buf, sizeof buf)) > 0)
			*bytes += (uint64_t)n;
		if (fd >= 0)
			close(fd);
	}
	if (d)
		closedir(d);
	return now() - t0;
}

static void remove_trace(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	while (d && (e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		char path[4096];
		snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
		unlink(path);
	}
	if (d)
		closedir(d);
	rmdir(dir);
}

static void row(const char *name, double v, const char *fmt, const char *unit)
{
	printf("analyzer\t%s\t", name);
	printf(fmt, v);
	printf("\t%s\n", unit);
}

int main(int argc, char **argv)
{
	char tmp[] = "/tmp/vt-bench-analyzer-XXXXXX";
	const char *dir = argc > 1 ? argv[1] : NULL;
	if (!dir) {
		const char *env = getenv("VT_BENCH_ANALYZER_EVENTS");
		uint64_t want = env ? strtoull(env, NULL, 10) : 10000000ull;
		if (!mkdtemp(tmp)) {
			perror("mkdtemp");
			return 1;
		}
		dir = tmp;
		if (vt_gen_trace(dir, want, 16, NULL) != 0)
			return 1;
	}
	uint64_t file_bytes;
	double t_read = read_all(dir, &file_bytes);
	char err[512];
	double t0 = now();
	struct vt_model *m = vt_model_load_trace(dir, err, sizeof err);
	if (!m) {
		fprintf(stderr, "bench_analyzer: %s\n", err);
		return 1;
	}
	double t1 = now();
	struct vt_report r;
	struct vt_report_options opt = {.top = 10, .title = dir};
	if (vt_report_build(&r, m, &opt, err, sizeof err) != 0) {
		fprintf(stderr, "bench_analyzer: %s\n", err);
		return 1;
	}
	double t2 = now();
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	double events = (double)m->totals.events;
	row("events", events, "%.0f", "events");
	row("allocations", (double)m->nallocs, "%.0f", "allocs");
	row("load+replay", t1 - t0, "%.3f", "s");
	row("classify+report", t2 - t1, "%.3f", "s");
	row("throughput", events / (t2 - t0) / 1e6, "%.2f", "M ev/s");
	row("peak RSS", (double)ru.ru_maxrss / 1024.0, "%.0f", "MiB");
	row("vs reading the files", (t2 - t0) / (t_read > 0 ? t_read : 1e-9), "%.1f", "x");
	row("file size", (double)file_bytes / (1024.0 * 1024.0), "%.0f", "MiB");
	vt_report_free(&r);
	vt_model_free(m);
	if (dir == tmp)
		remove_trace(dir);
	return 0;
}
