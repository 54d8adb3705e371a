/* Helper for full_fs.sh.
 *   log_fill_helper write DIR N   4 threads write N counter events in all
 *                                 (config from VRAMTRACE_* with dir DIR);
 *                                 prints "acked T K" per thread, then "done".
 *   log_fill_helper verify DIR ACKS
 *                                 the one log in DIR is marked truncated,
 *                                 counts drops, and holds every acked event
 *                                 exactly once; exit 0 or 1 with the reason. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log_test_util.h"
#include "log_writer.h"
#include "trace_dir.h"

#define THREADS 4u

static uint64_t g_per_thread;
static uint64_t g_acked[THREADS];
static pthread_barrier_t g_start; /* all threads race for the last chunks */

static void *writer(void *arg)
{
	uint32_t idx = (uint32_t)(uintptr_t)arg;
	int failed = 0;
	pthread_barrier_wait(&g_start);
	for (uint64_t k = 0; k < g_per_thread; k++) {
		if (lt_write_counter_event(1, idx, k) == 0) {
			if (failed) {
				fprintf(stderr, "thread %u: write %llu succeeded after a failure\n",
				        idx, (unsigned long long)k);
				exit(3);
			}
			g_acked[idx] = k + 1;
		} else {
			failed = 1;
		}
	}
	vt_log_thread_exit(); /* as the shim does when a thread that recorded exits */
	return NULL;
}

static int do_write(const char *dir, uint64_t n)
{
	struct vt_log_config cfg;
	vt_log_config_from_env(&cfg);
	cfg.dir = dir;
	if (vt_log_init(&cfg) < 0)
		return 2;
	g_per_thread = n / THREADS;
	pthread_t t[THREADS];
	pthread_barrier_init(&g_start, NULL, THREADS);
	for (uintptr_t i = 0; i < THREADS; i++)
		pthread_create(&t[i], NULL, writer, (void *)i);
	for (unsigned i = 0; i < THREADS; i++)
		pthread_join(t[i], NULL);
	vt_log_finish(0);
	for (unsigned i = 0; i < THREADS; i++)
		printf("acked %u %llu\n", i, (unsigned long long)g_acked[i]);
	printf("per_thread %llu\ndone\n", (unsigned long long)g_per_thread);
	pthread_barrier_destroy(&g_start);
	return 0;
}

static int fail(const char *why)
{
	fprintf(stderr, "log_fill_helper verify: %s\n", why);
	return 1;
}

static int do_verify(const char *dir, const char *acks_path)
{
	FILE *f = fopen(acks_path, "r");
	if (!f)
		return fail("no acks file");
	uint64_t acked[THREADS] = {0}, per_thread = 0;
	char line[128];
	int done = 0;
	while (fgets(line, sizeof line, f)) {
		unsigned t;
		unsigned long long k;
		if (sscanf(line, "acked %u %llu", &t, &k) == 2 && t < THREADS)
			acked[t] = k;
		else if (sscanf(line, "per_thread %llu", &k) == 1)
			per_thread = k;
		else if (!strcmp(line, "done\n"))
			done = 1;
	}
	fclose(f);
	if (!done)
		return fail("the writer did not run to completion");
	struct vt_trace trace;
	char err[512];
	if (vt_trace_open(dir, &trace, err, sizeof err) < 0 || trace.nlogs != 1)
		return fail("expected exactly one log");
	struct vt_log *log = trace.logs[0];
	const struct vt_file_header *h = vt_log_header(log);
	if (!(h->flags & VT_FLAG_TRUNCATED))
		return fail("log not marked truncated");
	if (h->events_dropped == 0)
		return fail("no dropped events counted");
	if (vt_log_warnings(log))
		return fail("reader warned about damage");
	struct lt_recs recs;
	lt_collect(log, &recs);
	struct lt_tally tally = {.threads = THREADS, .per_thread = per_thread};
	lt_tally_events(&recs, 1, &tally);
	if (tally.bad || tally.foreign)
		return fail("records that were never written");
	uint64_t total = 0;
	for (unsigned t = 0; t < THREADS; t++) {
		for (uint64_t k = 0; k < per_thread; k++) {
			uint32_t want = k < acked[t];
			if (tally.seen[t * per_thread + k] != want)
				return fail(
				    want ? "an acknowledged record is missing"
				         : "a record the writer reported as dropped is present");
		}
		total += acked[t];
	}
	printf("log %s: truncated, %llu records intact, %llu dropped, %llu chunks claimed\n",
	       vt_log_path(log), (unsigned long long)total, (unsigned long long)h->events_dropped,
	       (unsigned long long)h->chunks_claimed);
	lt_tally_free(&tally);
	lt_recs_free(&recs);
	vt_trace_close(&trace);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 4 && !strcmp(argv[1], "write"))
		return do_write(argv[2], strtoull(argv[3], NULL, 10));
	if (argc == 4 && !strcmp(argv[1], "verify"))
		return do_verify(argv[2], argv[3]);
	fprintf(stderr, "usage: log_fill_helper write DIR N | verify DIR ACKS\n");
	return 2;
}
