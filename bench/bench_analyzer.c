/* Analyzer throughput: a generated trace loaded into the model, classified
 * and turned into the report, single-threaded. Prints bench rows
 * (bench/run_all.sh): events per second (wall clock, and per CPU second:
 * this machine is shared, the CPU figure is the stable one), peak memory,
 * and the ratio to the time `cat` needs to read the same files.
 *   bench_analyzer [--events N] [TRACE_DIR]
 * Without TRACE_DIR a trace of N events (default 10 million, or
 * VT_BENCH_ANALYZER_EVENTS) is generated into a temporary directory.
 * The peer in the same run: heaptrack_print reading heaptrack's log of a
 * loop of malloc+free pairs with as many events (this program, run as
 *   bench_analyzer --malloc-pairs N
 * under heaptrack), when heaptrack is installed. The streaming model
 * (report --stream) in a child of its own, so its peak memory is its own:
 *   bench_analyzer --stream-only TRACE_DIR
 * and then on a trace of 100 million events of its own (VT_BENCH_STREAM_EVENTS=N
 * for another count, 0 to skip it). The classifying report as
 * `vramtrace report` makes it (the folding model, model_fold.h, the full
 * model where that cannot classify), in a child of its own too:
 *   bench_analyzer --report-only TRACE_DIR
 * on both traces, each beside heaptrack_print on as many events. */
#define _GNU_SOURCE
#include <dirent.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "gen_trace.h"
#include "log_reader.h"
#include "trace_dir.h"
#include "model.h"
#include "model_fold.h"
#include "model_load.h"
#include "model_stream.h"
#include "report.h"

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* The logs of the directory, shell-quoted, for `cat`. */
static int log_list(const char *dir, char *out, size_t cap, uint64_t *bytes)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	size_t n = 0;
	*bytes = 0;
	out[0] = 0;
	while (d && (e = readdir(d))) {
		if (strncmp(e->d_name, "vramtrace.", 10) || strchr(e->d_name, '\''))
			continue;
		int k = snprintf(out + n, cap - n, " '%s/%s'", dir, e->d_name);
		if (k < 0 || (size_t)k >= cap - n)
			break;
		n += (size_t)k;
		char path[4096];
		struct stat st;
		snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
		if (stat(path, &st) == 0)
			*bytes += (uint64_t)st.st_size;
	}
	if (d)
		closedir(d);
	return n ? 0 : -1;
}

/* The time `cat` needs to read the logs (the page cache warmed by a first
 * read, as it is for the analyzer right after). */
static double cat_time(const char *dir, uint64_t *bytes)
{
	static char cmd[1 << 16];
	static char files[(1 << 16) - 64];
	if (strchr(dir, '\'') || log_list(dir, files, sizeof files, bytes) != 0)
		return -1;
	snprintf(cmd, sizeof cmd, "cat --%s >/dev/null", files);
	if (system(cmd) != 0)
		return -1;
	double t0 = now();
	if (system(cmd) != 0)
		return -1;
	return now() - t0;
}

/* CPU seconds spent in the kernel: for the analyzer nearly all of it is
 * the kernel providing fresh zeroed pages for the model (on a VM, each one
 * first faulted in by the host too), so it shows what the model's size
 * costs. */
/* This process's CPU seconds so far: user + kernel in all, and the kernel's part. */
struct cpu_time {
	double all, sys;
};

static struct cpu_time cpu_now(void)
{
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	double user = (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6;
	double sys = (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
	return (struct cpu_time){.all = user + sys, .sys = sys};
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

static int count_record(const struct vt_record_view *rec, void *ctx)
{
	(void)rec;
	++*(uint64_t *)ctx;
	return 0;
}

/* The floor under the analyzer: the trace's logs opened and every record
 * decoded and delivered, in order, to a callback that only counts them (what
 * any analysis of the log must pay before it models anything). CPU seconds,
 * or -1. */
static double read_floor(const char *dir, uint64_t *records)
{
	struct vt_trace trace;
	char err[512];
	*records = 0;
	if (vt_trace_open(dir, &trace, err, sizeof err) != 0) {
		fprintf(stderr, "bench_analyzer: %s\n", err);
		return -1;
	}
	double c0 = cpu_now().all;
	vt_trace_for_each(&trace, count_record, records);
	double c1 = cpu_now().all;
	vt_trace_close(&trace);
	return c1 - c0;
}

static void row(const char *name, double v, const char *fmt, const char *unit)
{
	printf("analyzer\t%s\t", name);
	printf(fmt, v);
	printf("\t%s\n", unit);
	fflush(stdout); /* before a child of the peer run writes anything */
}

/* ---- the peer: heaptrack_print ------------------------------------------- */

/* The job heaptrack traces: n malloc+free pairs of one call site. */
static int malloc_pairs(uint64_t n)
{
	static void *volatile sink;
	for (uint64_t i = 0; i < n; i++) {
		sink = malloc(64 + (i & 7));
		free(sink);
	}
	return 0;
}

/* Run argv with stdout and stderr to /dev/null; 0 when it exited 0, its
 * CPU seconds and peak RSS (KiB) in *cpu and *rss_kib. */
static int run_quiet(char *const argv[], double *cpu, long *rss_kib)
{
	pid_t pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		int null = open("/dev/null", O_WRONLY);
		if (null >= 0) {
			dup2(null, 1);
			dup2(null, 2);
		}
		execvp(argv[0], argv);
		_exit(127);
	}
	int status = 0;
	struct rusage ru;
	if (wait4(pid, &status, 0, &ru) != pid)
		return -1;
	*cpu = (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
	       (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
	*rss_kib = ru.ru_maxrss;
	return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -1;
}

/* The file heaptrack wrote for -o PREFIX: PREFIX.zst or PREFIX.gz. */
static int heaptrack_file(const char *prefix, char *out, size_t cap)
{
	static const char *const ext[] = {".zst", ".gz", ""};
	for (size_t i = 0; i < sizeof ext / sizeof ext[0]; i++) {
		snprintf(out, cap, "%s%s", prefix, ext[i]);
		if (access(out, R_OK) == 0)
			return 0;
	}
	return -1;
}

static void row_na(const char *name, const char *why)
{
	printf("analyzer\t%s\tn/a\t%s\n", name, why);
	fflush(stdout);
}

/* heaptrack_print on heaptrack's log of `events` malloc/free events: its
 * events per CPU second and its peak memory, beside ours; `scale` names the
 * rows of the at-scale case ("" for the first). */
static void peer_heaptrack_print(const char *self, uint64_t events, const char *scale)
{
	char name[160], rss_name[160];
	snprintf(name, sizeof name,
	         "%speer: heaptrack_print, same event count of malloc+free (CPU)", scale);
	snprintf(rss_name, sizeof rss_name, "%speer: heaptrack_print peak RSS", scale);
	if (system("command -v heaptrack >/dev/null 2>&1 && "
	           "command -v heaptrack_print >/dev/null 2>&1") != 0) {
		row_na(name, "heaptrack not installed: apt-get install heaptrack");
		return;
	}
	char dir[] = "/tmp/vt-bench-heaptrack-XXXXXX";
	if (!mkdtemp(dir)) {
		row_na(name, "no temporary directory");
		return;
	}
	char prefix[64], file[80], pairs[32];
	snprintf(prefix, sizeof prefix, "%s/ht", dir);
	snprintf(pairs, sizeof pairs, "%" PRIu64, events / 2);
	char *record[] = {"heaptrack", "-o", prefix, (char *)self, "--malloc-pairs", pairs, NULL};
	double cpu = 0;
	long rss = 0;
	if (run_quiet(record, &cpu, &rss) != 0 || heaptrack_file(prefix, file, sizeof file) != 0) {
		row_na(name, "heaptrack run failed");
	} else {
		char *print[] = {"heaptrack_print", file, NULL};
		if (run_quiet(print, &cpu, &rss) != 0)
			row_na(name, "heaptrack_print failed");
		else {
			row(name, (double)(events / 2 * 2) / (cpu > 0 ? cpu : 1e-9) / 1e6, "%.2f",
			    "M ev/s");
			row(rss_name, (double)rss / 1024.0, "%.0f", "MiB");
		}
	}
	unlink(file);
	rmdir(dir);
}

/* The streaming model's load of dir in a child (its own peak RSS), RUNS
 * times: the fastest run's CPU and wall seconds (the machine is shared,
 * other load only ever adds time), the largest peak RSS. 0, or -1 when a
 * run failed. */
#define STREAM_RUNS 3
struct stream_run {
	double cpu, wall;
	long rss_kib;
};

static int stream_runs(const char *self, const char *dir, struct stream_run *best)
{
	char *argv[] = {(char *)self, "--stream-only", (char *)dir, NULL};
	*best = (struct stream_run){.cpu = 1e30, .wall = 1e30};
	for (int i = 0; i < STREAM_RUNS; i++) {
		double cpu = 0, t0 = now();
		long rss = 0;
		if (run_quiet(argv, &cpu, &rss) != 0)
			return -1;
		double wall = now() - t0;
		best->cpu = cpu < best->cpu ? cpu : best->cpu;
		best->wall = wall < best->wall ? wall : best->wall;
		best->rss_kib = rss > best->rss_kib ? rss : best->rss_kib;
	}
	return 0;
}

/* The streaming model on the same trace: events per CPU second, peak
 * memory, and the ratio to the floor. */
static void streaming(const char *self, const char *dir, uint64_t events, double c_floor)
{
	const char *name = "streaming model (report --stream), per CPU second, best of 3";
	struct stream_run r;
	if (stream_runs(self, dir, &r) != 0) {
		row_na(name, "the streaming load failed");
		return;
	}
	row(name, (double)events / (r.cpu > 0 ? r.cpu : 1e-9) / 1e6, "%.2f", "M ev/s");
	row("streaming model peak RSS", (double)r.rss_kib / 1024.0, "%.0f", "MiB");
	if (c_floor > 0)
		row("streaming model vs the floor (CPU)", r.cpu / c_floor, "%.1f", "x");
}

/* `vramtrace report`'s classifying report of dir: the folding model, and
 * the full model when the folded evidence cannot classify (cmd_report.c). */
static int report_only(const char *dir)
{
	char err[512];
	struct vt_model *m = vt_model_load_trace_folding(dir, err, sizeof err);
	struct vt_report r;
	struct vt_report_options opt = {.top = 10, .title = dir};
	if (!m || vt_report_build(&r, m, &opt, err, sizeof err) != 0) {
		fprintf(stderr, "bench_analyzer: %s\n", err);
		return 1;
	}
	int exact = vt_fold_exact(m, NULL);
	vt_report_free(&r);
	vt_model_free(m);
	if (exact)
		return 0;
	if (!(m = vt_model_load_trace(dir, err, sizeof err)) ||
	    vt_report_build(&r, m, &opt, err, sizeof err) != 0)
		return 1;
	vt_report_free(&r);
	vt_model_free(m);
	return 3; /* classified, by the full model */
}

/* The classifying report of dir in a child, best of 3 (stream_runs' way):
 * events per CPU second and peak RSS, rows named after `scale`. */
static void classifying(const char *self, const char *dir, uint64_t events, const char *scale)
{
	char name[160], rss_name[160];
	snprintf(name, sizeof name,
	         "%sclassifying report (report, report --json), per CPU second, best of 3", scale);
	snprintf(rss_name, sizeof rss_name, "%sclassifying report peak RSS", scale);
	char *argv[] = {(char *)self, "--report-only", (char *)dir, NULL};
	double best = 1e30;
	long rss = 0;
	for (int i = 0; i < STREAM_RUNS; i++) {
		double cpu = 0;
		long r = 0;
		if (run_quiet(argv, &cpu, &r) != 0) {
			row_na(name, "the folding model could not classify it, or the load failed");
			return;
		}
		best = cpu < best ? cpu : best;
		rss = r > rss ? r : rss;
	}
	row(name, (double)events / (best > 0 ? best : 1e-9) / 1e6, "%.2f", "M ev/s");
	row(rss_name, (double)rss / 1024.0, "%.0f", "MiB");
}

/* A row of the at-scale case: its name starts with the event count. */
static void scale_row(uint64_t events, const char *what, double v, const char *fmt,
                      const char *unit)
{
	char name[128];
	snprintf(name, sizeof name, "%.0f M events, %s", (double)events / 1e6, what);
	row(name, v, fmt, unit);
}

/* The streaming model on a generated trace of
 * `events` (default 100 M: 2.6 GiB of logs, so only where the temporary
 * directory has room for it), against `cat` of the same files. */
static void streaming_at_scale(const char *self, uint64_t events)
{
	char name[128];
	snprintf(name, sizeof name, "%.0f M events, streaming model, per CPU second, best of 3",
	         (double)events / 1e6);
	struct statvfs fs;
	uint64_t need = events * 28 + (1ull << 30); /* 26.5 bytes an event, and a margin */
	if (statvfs("/tmp", &fs) != 0 || (uint64_t)fs.f_bavail * fs.f_frsize < need) {
		row_na(name, "not enough room in /tmp for the trace");
		return;
	}
	char dir[] = "/tmp/vt-bench-stream-XXXXXX";
	if (!mkdtemp(dir)) {
		row_na(name, "no temporary directory");
		return;
	}
	struct stream_run r;
	uint64_t bytes = 0;
	if (vt_gen_trace(dir, events, 16, NULL) != 0) {
		row_na(name, "generating the trace failed");
	} else if (stream_runs(self, dir, &r) != 0) {
		row_na(name, "the streaming load failed");
	} else {
		double t_cat = cat_time(dir, &bytes);
		row(name, (double)events / (r.cpu > 0 ? r.cpu : 1e-9) / 1e6, "%.2f", "M ev/s");
		scale_row(events, "streaming model, wall, best of 3", r.wall, "%.2f", "s");
		scale_row(events, "streaming model peak RSS", (double)r.rss_kib / 1024.0, "%.0f",
		          "MiB");
		scale_row(events, "log files", (double)bytes / (1024.0 * 1024.0), "%.0f", "MiB");
		if (t_cat > 0) {
			scale_row(events, "cat of the logs", t_cat, "%.3f", "s");
			row("streaming model vs cat (wall)", r.wall / t_cat, "%.1f", "x");
		}
		char scale[32];
		snprintf(scale, sizeof scale, "%.0f M events, ", (double)events / 1e6);
		classifying(self, dir, events, scale);
		peer_heaptrack_print(self, events, scale);
	}
	remove_trace(dir);
}

static int stream_only(const char *dir)
{
	char err[512];
	struct vt_model *m = vt_model_load_trace_streaming(dir, err, sizeof err);
	if (!m) {
		fprintf(stderr, "bench_analyzer: %s\n", err);
		return 1;
	}
	vt_model_free(m);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 3 && !strcmp(argv[1], "--stream-only"))
		return stream_only(argv[2]);
	if (argc == 3 && !strcmp(argv[1], "--report-only"))
		return report_only(argv[2]);
	char tmp[] = "/tmp/vt-bench-analyzer-XXXXXX";
	const char *env = getenv("VT_BENCH_ANALYZER_EVENTS");
	uint64_t want = env ? strtoull(env, NULL, 10) : 10000000ull;
	const char *dir = NULL;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--events") && i + 1 < argc)
			want = strtoull(argv[++i], NULL, 10);
		else if (!strcmp(argv[i], "--malloc-pairs") && i + 1 < argc)
			return malloc_pairs(strtoull(argv[++i], NULL, 10));
		else if (argv[i][0] == '-') {
			fprintf(stderr, "usage: bench_analyzer [--events N] [TRACE_DIR]\n"
			                "       bench_analyzer --malloc-pairs N\n");
			return 2;
		} else
			dir = argv[i];
	}
	if (!dir) {
		if (!mkdtemp(tmp)) {
			perror("mkdtemp");
			return 1;
		}
		dir = tmp;
		if (vt_gen_trace(dir, want, 16, NULL) != 0)
			return 1;
	}
	uint64_t file_bytes = 0;
	double t_cat = cat_time(dir, &file_bytes);
	uint64_t floor_records = 0;
	double c_floor = read_floor(dir, &floor_records);
	char err[512];
	struct cpu_time c0 = cpu_now();
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
	struct cpu_time c2 = cpu_now();
	double cpu = c2.all - c0.all;
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	double events = (double)m->totals.events;
	row("events", events, "%.0f", "events");
	row("allocations", (double)m->nallocs, "%.0f", "allocs");
	row("load+replay", t1 - t0, "%.3f", "s");
	row("classify+report", t2 - t1, "%.3f", "s");
	row("throughput (wall)", events / (t2 - t0) / 1e6, "%.2f", "M ev/s");
	row("throughput (CPU)", events / (cpu > 0 ? cpu : 1e-9) / 1e6, "%.2f", "M ev/s");
	row("of that CPU, in the kernel (fresh pages for the model)", c2.sys - c0.sys, "%.3f", "s");
	if (c_floor > 0) {
		row("floor: open + decode every record, nothing modelled (CPU)",
		    (double)floor_records / c_floor / 1e6, "%.2f", "M rec/s");
		row("full analysis vs that floor (CPU)", cpu / c_floor, "%.1f", "x");
	}
	row("peak RSS", (double)ru.ru_maxrss / 1024.0, "%.0f", "MiB");
	if (t_cat > 0) {
		row("cat of the logs", t_cat, "%.3f", "s");
		row("vs cat", (t2 - t0) / t_cat, "%.1f", "x");
	}
	row("file size", (double)file_bytes / (1024.0 * 1024.0), "%.0f", "MiB");
	vt_report_free(&r);
	uint64_t n_events = m->totals.events;
	vt_model_free(m);
	char self[4096];
	ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
	if (len > 0) {
		self[len] = '\0'; /* heaptrack is a script: the path must name this program */
		streaming(self, dir, n_events, c_floor);
		char scale[32];
		snprintf(scale, sizeof scale, "%.0f M events, ", (double)n_events / 1e6);
		classifying(self, dir, n_events, scale);
		peer_heaptrack_print(self, n_events, scale);
		const char *big = getenv("VT_BENCH_STREAM_EVENTS");
		uint64_t n_big = big ? strtoull(big, NULL, 10) : 100000000ull;
		if (n_big > 0)
			streaming_at_scale(self, n_big);
	}
	if (dir == tmp)
		remove_trace(dir);
	return 0;
}
