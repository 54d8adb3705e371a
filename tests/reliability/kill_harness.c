/* Kill anywhere: run a multi-threaded job RUNS times and
 * SIGKILL it at a seeded random moment; after each kill, every event the job
 * had acknowledged (kill_protocol.h) must be in its trace exactly once,
 * nothing may be invented (at most the one event per thread in flight past
 * its last ack), and the reader must report no damaged record.
 *
 *   kill_harness MODE RUNS THREADS PER_THREAD WORKDIR -- CMD ARGS...
 *     MODE writer: events are the log writer's counter events (addr = 1<<32 |
 *                  thread, bytes = k); the job is CMD itself
 *     MODE shim:   events are ALLOC records of size VT_JOB_SIZE(t, k); the
 *                  job is whatever process sent its pid (CMD may be
 *                  `vramtrace run -o {DIR} -- client`)
 *   "{DIR}" in ARGS becomes the run's trace directory (also VRAMTRACE_DIR).
 *   VT_KILL_SEED (default 9) seeds the moments; each is printed, so a failing
 *   run is reproduced with the same seed.
 *
 * Run 0 is not killed: it proves a complete run is complete, and (with two
 * more) measures how long the job takes, D. Runs 1..RUNS wait a uniformly random time in
 * [0, D) after the job said it started, then kill it. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdarg.h>
#include <sys/stat.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "kill_protocol.h"
#include "log_reader.h"
#include "trace_dir.h"
#include "record_text.h"

#define ACK_FD 100
#define MAX_THREADS 64
/* a run that takes longer failed (VT_KILL_TIMEOUT_S overrides: sanitizer builds) */
static uint64_t g_run_timeout_ns = 60ull * 1000000000ull;

struct cfg {
	int shim;
	unsigned runs, threads, per_thread;
	const char *work;
	int allow_truncation; /* VT_KILL_ALLOW_TRUNCATION=1: a size-capped run */
	char **cmd;
	int ncmd;
};

struct outcome {
	int killed;            /* the job died of our SIGKILL */
	int no_log;            /* no readable log (killed before it existed) */
	uint64_t acked, found; /* events */
	uint64_t elapsed_ns;   /* job start .. its last ack */
	uint64_t dropped;      /* acked but not in a truncated log (counted there) */
};

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static char *subst_dir(const char *arg, const char *dir)
{
	const char *at = strstr(arg, "{DIR}");
	char *out;
	if (!at)
		return strdup(arg);
	if (asprintf(&out, "%.*s%s%s", (int)(at - arg), arg, dir, at + 5) < 0)
		abort();
	return out;
}

static void exec_job(const struct cfg *c, const char *dir, int wfd)
{
	if (dup2(wfd, ACK_FD) < 0)
		_exit(126);
	int null = open("/dev/null", O_WRONLY); /* the job's results: not checked here */
	if (null >= 0)
		dup2(null, STDOUT_FILENO);
	char num[32];
	snprintf(num, sizeof num, "%d", ACK_FD);
	setenv("VT_ACK_FD", num, 1);
	snprintf(num, sizeof num, "%u", c->threads);
	setenv("VT_JOB_THREADS", num, 1);
	snprintf(num, sizeof num, "%u", c->per_thread);
	setenv("VT_JOB_PER_THREAD", num, 1);
	setenv("VRAMTRACE_DIR", dir, 1);
	char **argv = calloc((size_t)c->ncmd + 1, sizeof *argv);
	for (int i = 0; i < c->ncmd; i++)
		argv[i] = subst_dir(c->cmd[i], dir);
	execvp(argv[0], argv);
	perror(argv[0]);
	_exit(127);
}

/* Read acks until every writer closed the pipe; kill the job delay_ns after
 * it announced itself (delay < 0: never). */
static int watch(int rfd, int64_t delay_ns, uint64_t acked[], pid_t *job, int *sent_kill,
                 uint64_t *elapsed)
{
	uint64_t start = 0, began = now_ns(), last_ack = 0, msg;
	for (;;) {
		int timeout = -1;
		if (start && *job && delay_ns >= 0 && !*sent_kill) {
			uint64_t due = start + (uint64_t)delay_ns, t = now_ns();
			if (t >= due) {
				kill(*job, SIGKILL);
				*sent_kill = 1;
				continue;
			}
			timeout = (int)((due - t) / 1000000);
		}
		if (now_ns() - began > g_run_timeout_ns) {
			fprintf(stderr, "run timed out\n");
			return -1;
		}
		struct pollfd p = {.fd = rfd, .events = POLLIN};
		int n = poll(&p, 1, timeout < 0 || timeout > 1000 ? 1000 : timeout);
		if (n < 0 && errno != EINTR)
			return -1;
		if (n <= 0)
			continue;
		ssize_t got = read(rfd, &msg, sizeof msg);
		if (got == 0)
			break;
		if (got < 0 && errno == EINTR)
			continue;
		if (got != (ssize_t)sizeof msg)
			return -1;
		if (VT_ACK_THREAD(msg) == VT_ACK_PID_TAG) {
			*job = (pid_t)(uint32_t)msg;
			start = now_ns();
		} else if (VT_ACK_THREAD(msg) < MAX_THREADS) {
			uint64_t k = VT_ACK_COUNT(msg);
			last_ack = now_ns();
			if (k > acked[VT_ACK_THREAD(msg)])
				acked[VT_ACK_THREAD(msg)] = k;
		}
	}
	/* the job's own run time: to its last ack (a launcher writing the
	 * sidecar afterwards still holds the pipe) */
	*elapsed = start && last_ack > start ? last_ack - start : 0;
	return 0;
}

/* ---- checking the trace ----------------------------------------------------- */

struct tally {
	const struct cfg *c;
	uint8_t *seen;      /* threads * per_thread */
	uint64_t invented;  /* events that match no (thread, k) */
	uint64_t dups;
	/* shim jobs: each round also copies 8 * (t + 1) bytes and frees */
	uint64_t copies[MAX_THREADS];
	uint64_t frees, wrong_api;
};

/* The variant thread t's copy must be recorded as (job_stress.c: path t % 3,
 * the cuGetProcAddress path asks for the per-thread default stream). */
static const char *expected_htod(uint64_t t)
{
	return t % 3 == 2 ? "cuMemcpyHtoD_v2_ptds" : "cuMemcpyHtoD_v2";
}

static void tally_shim_extra(struct tally *t, uint32_t type, const struct vt_event *ev)
{
	if (ev->result != 0)
		return;
	if (type == VT_REC_FREE) {
		t->frees++;
	} else if (type == VT_REC_COPY && ev->kind == VT_COPY_HTOD && ev->bytes % 8 == 0 &&
	           ev->bytes / 8 - 1 < t->c->threads) {
		uint64_t th = ev->bytes / 8 - 1;
		const char *api = vt_api_name(ev->api);
		t->copies[th]++;
		if (!api || strcmp(api, expected_htod(th)))
			t->wrong_api++;
	}
}

static int tally_record(const struct vt_record_view *v, void *ctx)
{
	struct tally *t = ctx;
	if (v->type != VT_REC_ALLOC && v->type != VT_REC_FREE && v->type != VT_REC_COPY)
		return 0;
	struct vt_event ev;
	memcpy(&ev, v->data, sizeof ev);
	if (t->c->shim && v->type != VT_REC_ALLOC) {
		tally_shim_extra(t, v->type, &ev);
		return 0;
	}
	if (v->type != VT_REC_ALLOC)
		return 0;
	uint64_t thread, k;
	if (t->c->shim) {
		if (ev.result != 0 || ev.bytes % 256 || ev.bytes == 0)
			return 0; /* not one of the job's events (the runtime's, a failure) */
		uint64_t id = ev.bytes / 256 - 1;
		const char *api = vt_api_name(ev.api);
		if (!api || strcmp(api, "cuMemAlloc_v2"))
			t->wrong_api++;
		thread = id / t->c->per_thread;
		k = id % t->c->per_thread;
	} else {
		if (ev.addr >> 32 != 1) {
			t->invented++;
			return 0;
		}
		thread = (uint32_t)ev.addr;
		k = ev.bytes;
	}
	if (thread >= t->c->threads || k >= t->c->per_thread) {
		t->invented++;
		return 0;
	}
	uint8_t *s = &t->seen[thread * t->c->per_thread + k];
	if (*s)
		t->dups++;
	*s = 1;
	return 0;
}

static int fail(unsigned run, const char *dir, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static int fail(unsigned run, const char *dir, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fprintf(stderr, "FAIL run %u (trace kept in %s): ", run, dir);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	return -1;
}

static int check_trace(const struct cfg *c, unsigned run, const char *dir, pid_t job,
                       const uint64_t acked[], struct outcome *o)
{
	struct vt_trace tr;
	char err[1024];
	for (unsigned t = 0; t < c->threads; t++)
		o->acked += acked[t];
	if (vt_trace_open(dir, &tr, err, sizeof err) < 0) {
		if (o->acked == 0 && o->killed) {
			o->no_log = 1; /* died before its log existed: nothing acknowledged */
			return 0;
		}
		return fail(run, dir, "trace unreadable (%s) with %llu events acknowledged", err,
		            (unsigned long long)o->acked);
	}
	struct tally t = {.c = c, .seen = calloc((size_t)c->threads * c->per_thread, 1)};
	int rc = 0, job_log = 0, truncated = 0;
	uint64_t dropped = 0, missing = 0;
	for (size_t i = 0; i < tr.nlogs && rc == 0; i++) {
		vt_log_for_each(tr.logs[i], tally_record, &t);
		if (vt_log_warnings(tr.logs[i]))
			rc = fail(run, dir, "%s: %u damaged records", vt_log_path(tr.logs[i]),
			          vt_log_warnings(tr.logs[i]));
		const struct vt_file_header *h = vt_log_header(tr.logs[i]);
		if (h->pid != job)
			continue;
		job_log = 1;
		truncated = (h->flags & VT_FLAG_TRUNCATED) != 0;
		dropped = h->events_dropped;
		uint32_t state = VT_STATE_OF(h->state);
		/* a kill that lands after the job marked its log EXITED (in its
		 * exit path, before the kernel tore it down) finds a complete,
		 * correctly marked log: the events are checked below either way */
		if (o->killed && state != VT_STATE_RUNNING && state != VT_STATE_EXITED)
			rc = fail(run, dir, "killed job's log says state %u", state);
		if (!o->killed && state != VT_STATE_EXITED)
			rc = fail(run, dir, "finished job's log says state %u", state);
	}
	if (rc == 0 && !job_log && o->acked)
		rc = fail(run, dir, "no log of the job (pid %d)", (int)job);
	if (rc == 0 && (t.invented || t.dups))
		rc = fail(run, dir, "%llu invented and %llu duplicated events",
		          (unsigned long long)t.invented, (unsigned long long)t.dups);
	for (unsigned th = 0; th < c->threads && rc == 0; th++) {
		const uint8_t *s = &t.seen[(size_t)th * c->per_thread];
		uint64_t n = 0;
		while (n < c->per_thread && s[n])
			n++;
		for (uint64_t k = n; k < c->per_thread && rc == 0; k++)
			if (s[k])
				rc = fail(run, dir, "thread %u: event %llu present after a gap at %llu", th,
				          (unsigned long long)k, (unsigned long long)n);
		if (rc == 0 && n < acked[th] && truncated && c->allow_truncation) {
			missing += acked[th] - n; /* dropped by the size cap: must be counted */
		} else if (rc == 0 && n < acked[th])
			rc = fail(run, dir, "thread %u: LOST acknowledged events: %llu in the trace, %llu acked",
			          th, (unsigned long long)n, (unsigned long long)acked[th]);
		if (rc == 0 && n > acked[th] + 1)
			rc = fail(run, dir, "thread %u: %llu events in the trace, only %llu acked (+1 in flight)",
			          th, (unsigned long long)n, (unsigned long long)acked[th]);
		o->found += n < acked[th] ? n : acked[th];
		if (rc == 0 && c->shim && !truncated && (t.copies[th] < acked[th] || t.copies[th] > n))
			rc = fail(run, dir, "thread %u: %llu copies recorded, %llu rounds acked, %llu allocs",
			          th, (unsigned long long)t.copies[th], (unsigned long long)acked[th],
			          (unsigned long long)n);
	}
	if (rc == 0 && missing > dropped)
		rc = fail(run, dir, "%llu events missing, only %llu counted as dropped in the header",
		          (unsigned long long)missing, (unsigned long long)dropped);
	o->dropped = missing;
	if (rc == 0 && c->shim && !truncated && (t.frees < o->acked || t.frees > o->acked + c->threads))
		rc = fail(run, dir, "%llu frees recorded for %llu acked rounds", (unsigned long long)t.frees,
		          (unsigned long long)o->acked);
	if (rc == 0 && t.wrong_api)
		rc = fail(run, dir, "%llu events recorded under the wrong entry point",
		          (unsigned long long)t.wrong_api);
	free(t.seen);
	vt_trace_close(&tr);
	return rc;
}

static void remove_tree(const char *dir)
{
	char *cmd;
	if (asprintf(&cmd, "rm -rf '%s'", dir) >= 0) {
		if (system(cmd) != 0)
			fprintf(stderr, "could not remove %s\n", dir);
		free(cmd);
	}
}

static int run_once(const struct cfg *c, unsigned run, int64_t delay_ns, struct outcome *o)
{
	char dir[4096];
	snprintf(dir, sizeof dir, "%s/run-%03u", c->work, run);
	memset(o, 0, sizeof *o);
	int p[2];
	if (pipe2(p, O_CLOEXEC) < 0)
		return -1;
	pid_t child = fork();
	if (child == 0) {
		close(p[0]);
		exec_job(c, dir, p[1]);
	}
	close(p[1]);
	uint64_t acked[MAX_THREADS] = {0};
	pid_t job = c->shim ? 0 : child;
	int sent = 0, status = 0;
	if (watch(p[0], delay_ns, acked, &job, &sent, &o->elapsed_ns) < 0) {
		kill(child, SIGKILL);
		if (job)
			kill(job, SIGKILL);
	}
	close(p[0]);
	while (waitpid(child, &status, 0) < 0 && errno == EINTR)
		;
	/* writer: the job is the child; shim: the launcher exits 128 + signal */
	o->killed = sent && (c->shim ? WIFEXITED(status) && WEXITSTATUS(status) == 128 + SIGKILL
	                             : WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
	int clean = WIFEXITED(status) && WEXITSTATUS(status) == 0;
	if (!o->killed && !clean)
		return fail(run, dir, "job neither finished nor was killed (status 0x%x)", status);
	if (check_trace(c, run, dir, job, acked, o) < 0)
		return -1;
	remove_tree(dir);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc < 8 || strcmp(argv[6], "--")) {
		fprintf(stderr, "usage: kill_harness writer|shim RUNS THREADS PER_THREAD WORKDIR -- CMD...\n");
		return 2;
	}
	struct cfg c = {.shim = !strcmp(argv[1], "shim"), .runs = (unsigned)atoi(argv[2]),
	                .threads = (unsigned)atoi(argv[3]), .per_thread = (unsigned)atoi(argv[4]),
	                .work = argv[5], .cmd = argv + 7, .ncmd = argc - 7};
	if (c.threads == 0 || c.threads > MAX_THREADS || c.per_thread == 0)
		return 2;
	c.allow_truncation = getenv("VT_KILL_ALLOW_TRUNCATION") != NULL;
	if (getenv("VT_KILL_TIMEOUT_S"))
		g_run_timeout_ns = strtoull(getenv("VT_KILL_TIMEOUT_S"), NULL, 10) * 1000000000ull;
	const char *s = getenv("VT_KILL_SEED");
	unsigned seed = s ? (unsigned)strtoul(s, NULL, 10) : 9;
	remove_tree(c.work);
	mkdir(c.work, 0700);
	signal(SIGPIPE, SIG_IGN);

	struct outcome o;
	if (run_once(&c, 0, -1, &o) < 0)
		return 1;
	/* D: the fastest of three complete runs (the first is often slow: cold
	 * caches), so most kills land while the job runs */
	uint64_t fastest = o.elapsed_ns;
	for (unsigned i = 0; i < 2 && c.runs; i++) {
		struct outcome again;
		if (run_once(&c, 0, -1, &again) < 0)
			return 1;
		if (again.elapsed_ns < fastest)
			fastest = again.elapsed_ns;
	}
	if (o.dropped)
		printf("size cap: %llu acknowledged events dropped and counted in the truncated log; "
		       "every recorded one valid, each thread's a gap-free prefix\n",
		       (unsigned long long)o.dropped);
	if (o.acked != (uint64_t)c.threads * c.per_thread)
		return fail(0, c.work, "complete run acknowledged %llu events", (unsigned long long)o.acked) ? 1 : 1;
	uint64_t span = fastest + 1;
	printf("%s job: %u threads x %u events, complete run %.1f ms: %llu of %llu acknowledged "
	       "events in the trace, each exactly once; seed %u\n", argv[1], c.threads, c.per_thread,
	       o.elapsed_ns / 1e6, (unsigned long long)o.found, (unsigned long long)o.acked, seed);
	if (c.runs == 0) {
		remove_tree(c.work);
		return o.found + o.dropped == o.acked ? 0 : 1;
	}

	unsigned killed = 0, no_log = 0, finished = 0;
	uint64_t acked = 0, found = 0;
	for (unsigned run = 1; run <= c.runs; run++) {
		int64_t delay = (int64_t)((((uint64_t)rand_r(&seed) << 31) ^ (uint64_t)rand_r(&seed)) % span);
		if (run_once(&c, run, delay, &o) < 0) {
			fprintf(stderr, "  (kill moment %.3f ms after start; rerun with VT_KILL_SEED)\n", delay / 1e6);
			return 1;
		}
		killed += o.killed;
		no_log += o.no_log;
		finished += !o.killed;
		acked += o.acked;
		found += o.found;
	}
	printf("kill-anywhere (%s): %u runs, %u SIGKILLed (%u before the log existed), "
	       "%u finished first; %llu events acknowledged, %llu of them in the traces, "
	       "%llu lost, 0 damaged records\n",
	       argv[1], c.runs, killed, no_log, finished, (unsigned long long)acked,
	       (unsigned long long)found, (unsigned long long)(acked - found));
	remove_tree(c.work);
	return acked == found ? 0 : 1;
}
