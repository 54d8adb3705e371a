/* Log size on the simulated trainer: bytes per event, stacks deduplicated.
 *
 * Runs samples/trainer (vt-trainer) under the shim on the simulated driver at
 * a few step counts and reads the trace back with the analyzer's reader.
 * Per event it reports
 *   - all records: events + stacks + modules + every other record, divided
 *     by the number of events (what the log costs per event);
 *   - written: the same plus the file header and chunk headers (the log's
 *     used bytes; the unused tail of each thread's last chunk is not counted
 *     — it is reserved with posix_fallocate but holds nothing).
 * Rows: "logsize<TAB>case<TAB>value<TAB>unit".
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "log_reader.h"
#include "trace_dir.h"

struct tally {
	unsigned long events, stacks, other;
	unsigned long event_bytes, stack_bytes, mark_bytes, other_bytes;
	unsigned long header_bytes;
	const struct vt_log *log; /* being read: stored sizes (compact frees) */
};

static int count_record(const struct vt_record_view *rec, void *ctx)
{
	struct tally *t = ctx;
	uint32_t stored = vt_log_stored_size(t->log, rec);
	if (rec->type >= VT_REC_ALLOC && rec->type <= VT_REC_POOL_TRIM) {
		t->events++;
		t->event_bytes += stored;
	} else if (rec->type == VT_REC_STACK) {
		t->stacks++;
		t->stack_bytes += stored;
	} else if (rec->type == VT_REC_MARK) {
		t->mark_bytes += stored;
	} else {
		t->other++;
		t->other_bytes += stored;
	}
	return 0;
}

static int run_trainer(const char *dir, const char *steps)
{
	pid_t pid = fork();
	if (pid == 0) {
		int null = open("/dev/null", O_WRONLY);
		if (null >= 0) {
			dup2(null, 1);
			dup2(null, 2);
		}
		setenv("LD_LIBRARY_PATH", VT_BENCH_SIMDRIVER_DIR, 1);
		setenv("LD_PRELOAD", VT_BENCH_SHIM, 1);
		setenv("VRAMTRACE_DIR", dir, 1);
		execl(VT_BENCH_TRAINER, VT_BENCH_TRAINER, "--steps", steps, "--lookup", "getproc", (char *)NULL);
		_exit(127);
	}
	int status;
	waitpid(pid, &status, 0);
	return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -1;
}

static void one_case(const char *steps)
{
	char dir[] = "/tmp/vt_bench_logsize_XXXXXX";
	if (!mkdtemp(dir))
		return;
	struct tally t = {0};
	struct vt_trace tr;
	char err[256] = "";
	if (run_trainer(dir, steps) == 0 && vt_trace_open(dir, &tr, err, sizeof err) == 0) {
		for (size_t i = 0; i < tr.nlogs; i++) {
			const struct vt_file_header *h = vt_log_header(tr.logs[i]);
			t.header_bytes += VT_HEADER_SIZE + h->chunks_claimed * sizeof(struct vt_chunk_header);
			t.log = tr.logs[i];
			vt_log_for_each(tr.logs[i], count_record, &t);
		}
		vt_trace_close(&tr);
	}
	char cmd[128];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		fprintf(stderr, "bench_logsize: could not remove %s\n", dir);
	if (!t.events) {
		printf("logsize\ttrainer, %s steps\tn/a (trainer run failed%s%s)\t\n", steps, *err ? ": " : "", err);
		return;
	}
	unsigned long records = t.event_bytes + t.stack_bytes + t.mark_bytes + t.other_bytes;
	printf("logsize\ttrainer, %s steps: events / unique stacks\t%lu / %lu\tcount\n", steps, t.events, t.stacks);
	printf("logsize\ttrainer, %s steps: event record\t%.1f\tB/event\n", steps,
	       (double)t.event_bytes / t.events);
	printf("logsize\ttrainer, %s steps: all records (stacks, modules... included)\t%.1f\tB/event\n", steps,
	       (double)records / t.events);
	printf("logsize\ttrainer, %s steps: of which stacks / step marks / other metadata\t%.1f / %.1f / %.1f\tB/event\n",
	       steps, (double)t.stack_bytes / t.events, (double)t.mark_bytes / t.events,
	       (double)t.other_bytes / t.events);
	printf("logsize\ttrainer, %s steps: written (+ file and chunk headers)\t%.1f\tB/event\n", steps,
	       (double)(records + t.header_bytes) / t.events);
	fflush(stdout);
}

int main(void)
{
	static const char *const steps[] = {"10", "100", "1000"};
	for (size_t i = 0; i < sizeof steps / sizeof steps[0]; i++)
		one_case(steps[i]);
	return 0;
}
