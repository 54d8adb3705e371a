/* Analyzer throughput: load a trace into the model, classify it and build
 * the report, single-threaded; prints events per second and peak memory.
 *
 *   bench_analyzer TRACE_DIR
 *
 * Pair with gen_trace (>= 10 million events). Not a pass/fail test. */
#include <inttypes.h>
#include <stdio.h>
#include <sys/resource.h>
#include <time.h>

#include "model.h"
#include "report.h"

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: bench_analyzer TRACE_DIR\n");
		return 2;
	}
	char err[512];
	double t0 = now();
	struct vt_model *m = vt_model_load_trace(argv[1], err, sizeof err);
	if (!m) {
		fprintf(stderr, "bench_analyzer: %s\n", err);
		return 1;
	}
	double t1 = now();
	struct vt_report r;
	struct vt_report_options opt = {.top = 10, .title = argv[1]};
	if (vt_report_build(&r, m, &opt, err, sizeof err) != 0) {
		fprintf(stderr, "bench_analyzer: %s\n", err);
		return 1;
	}
	double t2 = now();
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	uint64_t events = m->totals.events;
	printf("%-28s %12s\n", "analyzer benchmark", argv[1]);
	printf("%-28s %12" PRIu64 "\n", "events", events);
	printf("%-28s %12" PRIu32 "\n", "allocations", m->nallocs);
	printf("%-28s %12.3f\n", "load+replay s", t1 - t0);
	printf("%-28s %12.3f\n", "classify+report s", t2 - t1);
	printf("%-28s %12.2f\n", "events/s (millions)", (double)events / (t2 - t0) / 1e6);
	printf("%-28s %12.1f\n", "peak RSS MiB", (double)ru.ru_maxrss / 1024.0);
	printf("%-28s %12.1f\n", "bytes RSS per event", (double)ru.ru_maxrss * 1024.0 / (double)(events ? events : 1));
	vt_report_free(&r);
	vt_model_free(m);
	return 0;
}
