/* What recording costs, next to its floor and a peer, in the same run.
 *
 *   bench_record                 run every case (children), print TSV rows
 *   bench_record pairs KIND N    child: N allocate+free pairs, KIND cuda|malloc,
 *                                or cuda-unwound (each pair unwinds by hand)
 *   bench_record floor           child: unw_backtrace where the pairs allocate
 *   bench_record threads T N     child: T threads x N cuda pairs; prints
 *                                "ns_per_call lock_calls_per_call"
 *
 * Every pair allocates at a known stack depth: the bench recurses so that
 * the allocating function's stack (the frames the shim keeps) is STACK_FRAMES
 * deep; the shim's own record of that stack is read back from the trace and
 * its depth printed, so the claim is checked, not assumed.
 *
 * Steady state, start-up excluded: a case is timed as a whole process at two
 * run lengths (N_SHORT, N_LONG pairs) and its cost is the slope between them
 * (the same method for vramtrace and heaptrack). Each length is timed RUNS
 * times and the fastest kept: the machine is shared, other load only ever
 * adds time. Both wall time and CPU time of the child and its children
 * (heaptrack_interpret runs beside the job) are reported.
 *
 * Rows: "record<TAB>case<TAB>value<TAB>unit"; "n/a (why)" when a case
 * cannot run (no heaptrack, no simulated driver).
 *
 * The shim, the drivers and the lock counter are the build's; the
 * environment names others (VT_BENCH_SHIM, VT_BENCH_SIMDRIVER_DIR,
 * VT_BENCH_NULLDRIVER_DIR, VT_BENCH_LOCKCOUNT): a machine that cannot build
 * runs the carried binaries (samples/gpu/bench.sh).
 */
#define _GNU_SOURCE
#define UNW_LOCAL_ONLY
#include <dlfcn.h>
#include <fcntl.h>
#include <libunwind.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "event_clock.h"
#include "log_reader.h"
#include "trace_dir.h"
#include "recording_cost.h"

#define STACK_FRAMES 24
/* frames outside the recursion: run_work, child_pairs, child, main,
 * __libc_start_call_main, __libc_start_main (libunwind stops before _start) */
#define FIXED_FRAMES 6
#define N_SHORT 500000L
#define N_LONG 1500000L
#define RUNS 5
#define THREAD_PAIRS 200000L

typedef int (*alloc_fn)(unsigned long long *, size_t);
typedef int (*free_fn)(unsigned long long);

static alloc_fn mem_alloc;
static free_fn mem_free;
static const char *self_path;
static const char *trace_root;

static double now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

/* ---- the work, at a known depth ----------------------------------------- */

static __attribute__((noinline)) void one_cuda_pair(void)
{
	unsigned long long p = 0;
	if (mem_alloc(&p, 256) == 0)
		mem_free(p);
	__asm__ volatile("" ::: "memory");
}

static __attribute__((noinline)) void one_malloc_pair(void)
{
	void *p = malloc(256);
	__asm__ volatile("" : : "r"(p) : "memory");
	free(p);
	__asm__ volatile("" ::: "memory");
}

static int unwound_frames;

static __attribute__((noinline)) void one_unwind(void)
{
	void *ips[64];
	/* the first frame is one_unwind itself: where the shim's wrapper is */
	unwound_frames = unw_backtrace(ips, 64);
	__asm__ volatile("" ::: "memory");
}

/* A pair with the unwinding the shim does, done by hand and nothing else:
 * the same frames, unwound where the shim's wrapper unwinds (before the
 * allocation, after the last pair's free). Its slope over the plain pairs
 * is the floor in context: the unwinder after the driver's work has left
 * the caches, not in a hot loop of its own. */
static __attribute__((noinline)) void one_cuda_pair_unwound(void)
{
	unsigned long long p = 0;
	one_unwind();
	if (mem_alloc(&p, 256) == 0)
		mem_free(p);
	__asm__ volatile("" ::: "memory");
}

/* Phases of one loop (warm-up, measured), with `between` called after
 * each: every op is called from the same instruction, so every phase has
 * the same stack. */
struct work {
	void (*op)(void);
	int phases;
	long n[2];
	void (*between)(int phase);
};

static __attribute__((noinline)) void run_work(const struct work *w)
{
	for (int p = 0; p < w->phases; p++) {
		for (long i = 0; i < w->n[p]; i++)
			w->op();
		if (w->between)
			w->between(p);
	}
}

/* Recurse `level` frames, then run: the op's caller chain is then
 * level + FIXED_FRAMES deep (run_work stands in for the last level). */
static __attribute__((noinline)) void run_at_depth(int level, const struct work *w)
{
	if (level > 1) {
		run_at_depth(level - 1, w);
		__asm__ volatile("" ::: "memory"); /* not a tail call */
		return;
	}
	run_work(w);
}

static void run_phases(const struct work *w)
{
	run_at_depth(STACK_FRAMES - FIXED_FRAMES, w);
}

static void run_deep(void (*op)(void), long n)
{
	struct work w = {op, 1, {n, 0}, NULL};
	run_phases(&w);
}

/* ---- children ----------------------------------------------------------- */

static int setup_driver(void)
{
	void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
	if (!h)
		return -1;
	int (*init)(unsigned) = (int (*)(unsigned))dlsym(h, "cuInit");
	int (*dev_get)(int *, int) = (int (*)(int *, int))dlsym(h, "cuDeviceGet");
	int (*retain)(void **, int) = (int (*)(void **, int))dlsym(h, "cuDevicePrimaryCtxRetain");
	int (*set_current)(void *) = (int (*)(void *))dlsym(h, "cuCtxSetCurrent");
	/* the application's view: the shim's wrapper when it is preloaded */
	mem_alloc = (alloc_fn)dlsym(RTLD_DEFAULT, "cuMemAlloc_v2");
	mem_free = (free_fn)dlsym(RTLD_DEFAULT, "cuMemFree_v2");
	int dev;
	void *ctx;
	if (!init || !dev_get || !retain || !set_current || !mem_alloc || !mem_free || init(0) ||
	    dev_get(&dev, 0) || retain(&ctx, dev) || set_current(ctx))
		return -1;
	return 0;
}

static int child_pairs(const char *kind, long n)
{
	void (*op)(void) = one_malloc_pair;
	if (!strcmp(kind, "cuda") || !strcmp(kind, "cuda-unwound")) {
		if (setup_driver())
			return 3;
		op = strcmp(kind, "cuda") ? one_cuda_pair_unwound : one_cuda_pair;
	}
	run_deep(op, n);
	return 0;
}

/* Best ns per unwind, in process (21 short runs: the floor is small). */
static int child_floor(void)
{
	double best = 1e30;
	long n = 20000;
	for (int run = 0; run < 21; run++) {
		double t0 = now_ns();
		run_deep(one_unwind, n);
		double dt = (now_ns() - t0) / n;
		if (dt < best)
			best = dt;
	}
	printf("%.1f %d\n", best, unwound_frames);
	return 0;
}

/* ---- threads: per-call cost and lock calls ------------------------------ */

static void *cu_ctx;
static unsigned long (*lock_calls)(void); /* bench_lockcount.so, when preloaded */

static pthread_barrier_t warmed, go, done;
static long pairs_per_thread;

static void thread_between(int phase)
{
	if (phase == 0) {
		pthread_barrier_wait(&warmed);
		pthread_barrier_wait(&go);
	} else {
		pthread_barrier_wait(&done);
	}
}

/* Warm up (this thread's stack recorded once, its chunk claimed, the
 * unwinder's per-thread cache filled), then run the measured pairs. */
static void *thread_main(void *arg)
{
	(void)arg;
	int (*set_current)(void *) = (int (*)(void *))dlsym(RTLD_DEFAULT, "cuCtxSetCurrent");
	if (set_current)
		set_current(cu_ctx);
	struct work w = {one_cuda_pair, 2, {1000, pairs_per_thread}, thread_between};
	run_phases(&w);
	return NULL;
}

static int child_threads(int nthreads, long n)
{
	if (setup_driver())
		return 3;
	int (*get_current)(void **) = (int (*)(void **))dlsym(RTLD_DEFAULT, "cuCtxGetCurrent");
	if (!get_current || get_current(&cu_ctx))
		return 3;
	lock_calls = (unsigned long (*)(void))dlsym(RTLD_DEFAULT, "vt_bench_lock_calls");
	pthread_t tids[16];
	if (nthreads < 1 || nthreads > 16)
		return 2;
	pairs_per_thread = n;
	pthread_barrier_init(&warmed, NULL, (unsigned)nthreads + 1);
	pthread_barrier_init(&go, NULL, (unsigned)nthreads + 1);
	pthread_barrier_init(&done, NULL, (unsigned)nthreads + 1);
	for (int i = 0; i < nthreads; i++)
		pthread_create(&tids[i], NULL, thread_main, NULL);
	pthread_barrier_wait(&warmed);
	unsigned long locks0 = lock_calls ? lock_calls() : 0;
	double t0 = now_ns();
	pthread_barrier_wait(&go);
	pthread_barrier_wait(&done); /* counted before thread exit handlers run */
	double dt = now_ns() - t0;
	unsigned long locks = lock_calls ? lock_calls() - locks0 : 0;
	for (int i = 0; i < nthreads; i++)
		pthread_join(tids[i], NULL);
	double calls = 2.0 * nthreads * n;
	printf("%.1f %.4f\n", dt / calls, locks / calls);
	return 0;
}

static int child(int argc, char **argv)
{
	if (!strcmp(argv[1], "pairs") && argc > 3)
		return child_pairs(argv[2], atol(argv[3]));
	if (!strcmp(argv[1], "floor"))
		return child_floor();
	if (!strcmp(argv[1], "threads") && argc > 3)
		return child_threads(atoi(argv[2]), atol(argv[3]));
	fprintf(stderr,
	        "usage: bench_record [pairs cuda|cuda-unwound|malloc N | floor | threads T N]\n");
	return 2;
}

/* ---- the parent: spawning and timing ----------------------------------- */

enum tracer {
	NONE,
	SHIM,
	SHIM_NOSTACKS,
	SHIM_FREESTACKS,
	SHIM_NOMEMO,
	HEAPTRACK,
	SHIM_LOCKCOUNT,
	LOCKCOUNT
};

struct outcome {
	int ok;
	double wall_ns, cpu_ns;
	char out[256];
};

static double tv_ns(struct timeval tv)
{
	return tv.tv_sec * 1e9 + tv.tv_usec * 1e3;
}

static void remove_tree(const char *dir)
{
	char cmd[600];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		fprintf(stderr, "bench_record: could not remove %s\n", dir);
}

/* What the children load: the build's, or the environment's (see top). */
static const char *shim_path = VT_BENCH_SHIM, *sim_dir = VT_BENCH_SIMDRIVER_DIR,
                  *null_dir = VT_BENCH_NULLDRIVER_DIR, *lockcount_path = VT_BENCH_LOCKCOUNT;
static char lockcount_and_shim[2048];

static void paths_from_env(void)
{
	const char *names[] = {"VT_BENCH_SHIM", "VT_BENCH_SIMDRIVER_DIR", "VT_BENCH_NULLDRIVER_DIR",
	                       "VT_BENCH_LOCKCOUNT"};
	const char **paths[] = {&shim_path, &sim_dir, &null_dir, &lockcount_path};
	for (int i = 0; i < 4; i++) {
		const char *v = getenv(names[i]);
		if (v && *v)
			*paths[i] = v;
	}
	snprintf(lockcount_and_shim, sizeof lockcount_and_shim, "%s:%s", lockcount_path, shim_path);
}

/* the libcuda.so.1 the children load: the simulated driver, or for one row
 * a driver that does nothing (null_driver.c) */
static const char *driver_dir = VT_BENCH_SIMDRIVER_DIR;

static void set_env(enum tracer tr, const char *dir)
{
	setenv("LD_LIBRARY_PATH", driver_dir, 1);
	setenv("VRAMTRACE_DIR", dir, 1);
	unsetenv("VRAMTRACE_STACK_DEPTH");
	unsetenv("VRAMTRACE_FREE_STACKS");
	unsetenv("VRAMTRACE_STACK_MEMO");
	switch (tr) { /* the shim's settings */
	case SHIM_NOMEMO:
		setenv("VRAMTRACE_STACK_MEMO", "0", 1);
		break;
	case SHIM_FREESTACKS:
		setenv("VRAMTRACE_FREE_STACKS", "1", 1);
		break;
	case SHIM_NOSTACKS:
		setenv("VRAMTRACE_STACK_DEPTH", "0", 1);
		break;
	default:
		break;
	}
	switch (tr) { /* what is preloaded */
	case SHIM:
	case SHIM_NOSTACKS:
	case SHIM_FREESTACKS:
	case SHIM_NOMEMO:
		setenv("LD_PRELOAD", shim_path, 1);
		break;
	case SHIM_LOCKCOUNT:
		setenv("LD_PRELOAD", lockcount_and_shim, 1);
		break;
	case LOCKCOUNT:
		setenv("LD_PRELOAD", lockcount_path, 1);
		break;
	default:
		unsetenv("LD_PRELOAD");
	}
}

/* Run self with args under the tracer; time the whole process. The trace
 * (or heaptrack's file) goes to a fresh directory, removed afterwards unless
 * keep_dir is given. */
static struct outcome spawn(enum tracer tr, char *const args[], char *keep_dir)
{
	struct outcome o = {0};
	char dir[512];
	snprintf(dir, sizeof dir, "%s/run_XXXXXX", trace_root);
	if (!mkdtemp(dir))
		return o;
	int fds[2];
	if (pipe(fds))
		return o;
	struct rusage ru0, ru1;
	getrusage(RUSAGE_CHILDREN, &ru0);
	double t0 = now_ns();
	pid_t pid = fork();
	if (pid == 0) {
		dup2(fds[1], 1);
		close(fds[0]);
		int null = open("/dev/null", O_WRONLY);
		if (null >= 0)
			dup2(null, 2);
		set_env(tr, dir);
		char *argv[12];
		int k = 0;
		char out[600];
		if (tr == HEAPTRACK) {
			snprintf(out, sizeof out, "%s/ht", dir);
			argv[k++] = "heaptrack";
			argv[k++] = "-o";
			argv[k++] = out;
		}
		argv[k++] = (char *)self_path;
		for (int i = 0; args[i] && k < 11; i++)
			argv[k++] = args[i];
		argv[k] = NULL;
		execvp(argv[0], argv);
		_exit(127);
	}
	close(fds[1]);
	ssize_t got = 0, r;
	while ((r = read(fds[0], o.out + got, sizeof o.out - 1 - got)) > 0)
		got += r;
	o.out[got > 0 ? got : 0] = '\0';
	close(fds[0]);
	int status = 0;
	waitpid(pid, &status, 0);
	o.wall_ns = now_ns() - t0;
	getrusage(RUSAGE_CHILDREN, &ru1);
	o.cpu_ns =
	    tv_ns(ru1.ru_utime) + tv_ns(ru1.ru_stime) - tv_ns(ru0.ru_utime) - tv_ns(ru0.ru_stime);
	o.ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
	if (keep_dir && o.ok)
		strcpy(keep_dir, dir);
	else
		remove_tree(dir);
	return o;
}

static void row(const char *name, double value, const char *unit)
{
	printf("record\t%s\t%.1f\t%s\n", name, value, unit);
	fflush(stdout);
}

static void row_na(const char *name, const char *why)
{
	printf("record\t%s\tn/a (%s)\t\n", name, why);
	fflush(stdout);
}

struct slope {
	int ok;
	double wall, cpu; /* ns per pair */
};

/* The slopes of n tracers over the same pairs: fastest of RUNS at each
 * length, slope between them. The tracers take turns within each round
 * (none, then each tracer, at both lengths, then the next round) instead of
 * one tracer's RUNS after another's: this shared machine drifts by tens of
 * percent within minutes, and a baseline timed minutes before the shim's
 * runs put that drift into the difference, which is smaller than it. */
#define MAX_TRACERS 8
struct pair_case {
	enum tracer tr;
	const char *kind; /* of pairs: cuda, cuda-unwound, malloc */
};

static void pair_slopes(const struct pair_case *cases, int n, struct slope *out)
{
	const long lens[2] = {N_SHORT, N_LONG};
	double wall[MAX_TRACERS][2], cpu[MAX_TRACERS][2];
	if (n > MAX_TRACERS)
		n = MAX_TRACERS; /* the callers pass at most 6 */
	for (int t = 0; t < n; t++) {
		out[t] = (struct slope){.ok = 1};
		for (int l = 0; l < 2; l++)
			wall[t][l] = cpu[t][l] = 1e30;
	}
	for (int run = 0; run < RUNS; run++) {
		for (int t = 0; t < n; t++) {
			for (int l = 0; l < 2 && out[t].ok; l++) {
				char len[32];
				snprintf(len, sizeof len, "%ld", lens[l]);
				char *args[] = {"pairs", (char *)cases[t].kind, len, NULL};
				struct outcome o = spawn(cases[t].tr, args, NULL);
				out[t].ok = o.ok;
				if (o.wall_ns < wall[t][l])
					wall[t][l] = o.wall_ns;
				if (o.cpu_ns < cpu[t][l])
					cpu[t][l] = o.cpu_ns;
			}
		}
	}
	for (int t = 0; t < n; t++) {
		out[t].wall = (wall[t][1] - wall[t][0]) / (N_LONG - N_SHORT);
		out[t].cpu = (cpu[t][1] - cpu[t][0]) / (N_LONG - N_SHORT);
	}
}

static struct slope pair_slope(enum tracer tr, const char *kind)
{
	struct slope s;
	struct pair_case c = {tr, kind};
	pair_slopes(&c, 1, &s);
	return s;
}

/* ---- reading back what the shim recorded -------------------------------- */

struct depth_scan {
	unsigned max_depth;
	unsigned long events, stacks;
};

static int scan_record(const struct vt_record_view *rec, void *ctx)
{
	struct depth_scan *d = ctx;
	if (rec->type == VT_REC_STACK) {
		const struct vt_stack_rec *s = rec->data;
		if (s->depth > d->max_depth)
			d->max_depth = s->depth;
		d->stacks++;
	} else if (rec->type >= VT_REC_ALLOC && rec->type <= VT_REC_POOL_TRIM) {
		d->events++;
	}
	return 0;
}

static struct depth_scan scan_trace(const char *dir)
{
	struct depth_scan d = {0};
	struct vt_trace t;
	char err[256];
	if (vt_trace_open(dir, &t, err, sizeof err) != 0)
		return d;
	vt_trace_for_each(&t, scan_record, &d);
	vt_trace_close(&t);
	return d;
}

/* The shim's own measure of its time in a traced run (the header's self_*
 * fields, interpose/self_cost.c): ns per recorded call, 0 if none. */
static double self_measured_ns(enum tracer tr)
{
	char dir[512];
	char *args[] = {"pairs", "cuda", "500000", NULL};
	struct outcome o = spawn(tr, args, dir);
	if (!o.ok)
		return 0;
	struct vt_trace t;
	char err[256];
	double ns = 0;
	if (vt_trace_open(dir, &t, err, sizeof err) == 0) {
		struct vt_self_cost c;
		struct vt_self_cost_summary sc;
		if (t.nlogs) { /* as the report reads it (recording_cost.h) */
			vt_self_cost_from_header(vt_log_header(t.logs[0]), &c);
			if (vt_self_cost_summarize(&c, 0, &sc) == 0 && sc.have_rate)
				ns = sc.mean_ns;
		}
		vt_trace_close(&t);
	}
	remove_tree(dir);
	return ns;
}

/* ---- the cases ------------------------------------------------------------ */

static int have_heaptrack(void)
{
	return system("command -v heaptrack >/dev/null 2>&1") == 0;
}

static double floor_ns;
static double base_wall, base_cpu; /* the no-shim cuda pair slope */

static void bench_floor_and_depth(void)
{
	char *args[] = {"floor", NULL};
	struct outcome o = spawn(NONE, args, NULL);
	int frames = 0;
	if (!o.ok || sscanf(o.out, "%lf %d", &floor_ns, &frames) != 2) {
		row_na("unw_backtrace at the allocation's depth (floor)", "child failed");
		return;
	}
	char name[128];
	/* one_unwind stands where one_cuda_pair is: the same frames */
	snprintf(name, sizeof name, "floor: unw_backtrace of the same %d frames, in process",
	         frames);
	row(name, floor_ns, "ns");

	char dir[512];
	char *pargs[] = {"pairs", "cuda", "1000", NULL};
	o = spawn(SHIM, pargs, dir);
	if (!o.ok) {
		row_na("frames in the recorded allocation stack", "shim run failed");
		return;
	}
	struct depth_scan d = scan_trace(dir);
	remove_tree(dir);
	row("frames in the recorded allocation stack", d.max_depth, "frames");
}

static void row_pair(const char *name, double wall, double cpu, const char *unit)
{
	printf("record\t%s (wall / cpu)\t%.0f / %.0f\t%s\n", name, wall, cpu, unit);
	fflush(stdout);
}

static void bench_pairs(void)
{
	static const struct pair_case cuda_cases[] = {
	    {NONE, "cuda"},         {SHIM_NOSTACKS, "cuda"},
	    {SHIM, "cuda"},         {SHIM_FREESTACKS, "cuda"},
	    {NONE, "cuda-unwound"}, {SHIM_NOMEMO, "cuda"}};
	struct slope cuda[6];
	pair_slopes(cuda_cases, 6, cuda);
	struct slope base = cuda[0], off = cuda[1], on = cuda[2], both = cuda[3], unw = cuda[4],
	             nomemo = cuda[5];
	if (!base.ok) {
		row_na("cuMemAlloc+cuMemFree pair, no shim", "no simulated driver");
		return;
	}
	row_pair("cuMemAlloc+cuMemFree pair, no shim", base.wall, base.cpu, "ns/pair");
	base_wall = base.wall;
	base_cpu = base.cpu;
	if (off.ok)
		row_pair("vramtrace stacks off: extra per call (goal <= 80)",
		         (off.wall - base.wall) / 2, (off.cpu - base.cpu) / 2, "ns/call");
	/* what a user's report says for the same loop: the shim's sampled
	 * measure of its own time, next to the slope the benchmark measured */
	double self_off = off.ok ? self_measured_ns(SHIM_NOSTACKS) : 0;
	if (self_off > 0)
		row("  ... the shim's own measure in the job (report's recording cost)", self_off,
		    "ns/call");
	/* the same stacks-off pairs against a driver that does nothing: the
	 * shim's own cost, without the simulated driver's run-to-run noise */
	static const struct pair_case null_cases[] = {{NONE, "cuda"}, {SHIM_NOSTACKS, "cuda"}};
	struct slope nul[2];
	driver_dir = null_dir;
	pair_slopes(null_cases, 2, nul);
	driver_dir = sim_dir;
	if (nul[0].ok && nul[1].ok)
		row_pair("  ... the same against a do-nothing driver (the shim alone)",
		         (nul[1].wall - nul[0].wall) / 2, (nul[1].cpu - nul[0].cpu) / 2, "ns/call");
	if (on.ok) {
		/* the measure: a pair unwinds once (the allocation) */
		double wall = on.wall - base.wall, cpu = on.cpu - base.cpu;
		row_pair("vramtrace 24-frame stacks: extra per alloc+free pair", wall, cpu,
		         "ns/pair");
		double self_on = self_measured_ns(SHIM);
		if (self_on > 0)
			row("  ... the shim's own measure in the job (report's recording cost)",
			    2 * self_on, "ns/pair");
		if (floor_ns > 0)
			row_pair("  ... minus the floor (goal <= 80)", wall - floor_ns,
			         cpu - floor_ns, "ns/pair");
		if (unw.ok) {
			double uw = unw.wall - base.wall, uc = unw.cpu - base.cpu;
			row_pair("floor in context: the same unwinding by hand between the same "
			         "driver calls, no shim",
			         uw, uc, "ns/pair");
			row_pair("  ... vramtrace 24-frame pair minus that floor", wall - uw,
			         cpu - uc, "ns/pair");
		}
	}
	if (nomemo.ok) {
		/* the stack memo (interpose/stack_memo.h) off: every allocation
		 * unwound, as a call from a place not seen before is */
		double wall = nomemo.wall - base.wall, cpu = nomemo.cpu - base.cpu;
		row_pair("  ... every allocation unwound (VRAMTRACE_STACK_MEMO=0)", wall, cpu,
		         "ns/pair");
		if (floor_ns > 0)
			row_pair("  ... that minus the floor", wall - floor_ns, cpu - floor_ns,
			         "ns/pair");
	}
	if (both.ok)
		row_pair("  ... with --free-stacks (the free unwound too)", both.wall - base.wall,
		         both.cpu - base.cpu, "ns/pair");
	if (!have_heaptrack()) {
		row_na("heaptrack: extra per malloc+free pair",
		       "heaptrack not installed: apt-get install heaptrack");
		return;
	}
	static const struct pair_case malloc_cases[] = {{NONE, "malloc"}, {HEAPTRACK, "malloc"}};
	struct slope m[2];
	pair_slopes(malloc_cases, 2, m);
	struct slope mbase = m[0], ht = m[1];
	if (!mbase.ok || !ht.ok) {
		row_na("heaptrack: extra per malloc+free pair", "heaptrack run failed");
		return;
	}
	row_pair("malloc+free pair, no tracer", mbase.wall, mbase.cpu, "ns/pair");
	/* cpu includes heaptrack_interpret, which runs beside the job */
	row_pair("heaptrack 24-frame stacks: extra per malloc+free pair", ht.wall - mbase.wall,
	         ht.cpu - mbase.cpu, "ns/pair");
}

static int parse_threads(const struct outcome *o, double *ns, double *locks)
{
	return o->ok && sscanf(o->out, "%lf %lf", ns, locks) == 2;
}

/* Best of RUNS in-process timings of T threads, with and without the shim. */
static void bench_threads(void)
{
	static const int counts[] = {1, 2, 4};
	for (size_t i = 0; i < sizeof counts / sizeof counts[0]; i++) {
		char t[8], n[32];
		snprintf(t, sizeof t, "%d", counts[i]);
		snprintf(n, sizeof n, "%ld", THREAD_PAIRS / counts[i]);
		char *args[] = {"threads", t, n, NULL};
		double best[2] = {1e30, 1e30};
		for (int run = 0; run < RUNS; run++) {
			for (int s = 0; s < 2; s++) {
				struct outcome o = spawn(s ? SHIM : NONE, args, NULL);
				double ns, locks;
				if (parse_threads(&o, &ns, &locks) && ns < best[s])
					best[s] = ns;
			}
		}
		char name[128];
		if (best[0] >= 1e30 || best[1] >= 1e30) {
			snprintf(name, sizeof name, "%d threads", counts[i]);
			row_na(name, "child failed");
			continue;
		}
		snprintf(name, sizeof name, "%d thread%s: no shim / vramtrace / extra per call",
		         counts[i], counts[i] > 1 ? "s" : "");
		printf("record\t%s\t%.0f / %.0f / %.0f\tns/call\n", name, best[0], best[1],
		       best[1] - best[0]);
	}
	/* Lock calls (pthread mutex/rwlock/spin, dl_iterate_phdr) made during
	 * the timed loop, per call, by the shim: the difference between the
	 * same run with and without it (the simulated driver has its own). */
	char *args[] = {"threads", "4", "20000", NULL};
	struct outcome a = spawn(LOCKCOUNT, args, NULL), b = spawn(SHIM_LOCKCOUNT, args, NULL);
	double ns, la, lb;
	if (!parse_threads(&a, &ns, &la) || !parse_threads(&b, &ns, &lb)) {
		row_na("lock calls the shim adds per call (4 threads)", "child failed");
		return;
	}
	printf("record\tlock calls the shim adds per call (4 threads)\t%.4f\tcalls\n", lb - la);
}

/* The same 24-frame pairs with the log in /tmp, a disk here (the default
 * trace directory is the job's: usually a disk, whose writeback then runs
 * beside the job). Against the no-shim slope measured before. */
static void bench_log_on_disk(char *root_tmp)
{
	if (strncmp(trace_root, "/dev/shm/", 9) != 0 || base_wall <= 0)
		return; /* the main rows were on disk already, or no baseline */
	trace_root = mkdtemp(root_tmp);
	if (!trace_root)
		return;
	struct slope on = pair_slope(SHIM, "cuda");
	if (on.ok)
		row_pair("vramtrace 24-frame stacks, log on disk (/tmp): extra per pair",
		         on.wall - base_wall, on.cpu - base_cpu, "ns/pair");
	remove_tree(trace_root);
}

/* ns per reading of a clock: the best of three runs of CLOCK_READS */
#define CLOCK_READS 5000000L
static double per_read(uint64_t (*clock)(void))
{
	double best = 0;
	for (int run = 0; run < 3; run++) {
		volatile uint64_t sink = 0;
		double t0 = now_ns();
		for (long i = 0; i < CLOCK_READS; i++)
			sink += clock();
		double ns = (now_ns() - t0) / CLOCK_READS;
		best = run == 0 || ns < best ? ns : best;
	}
	return best;
}

/* Every event reads the clock once: what that costs each way (the shim's
 * clock is event_clock.c; "tsc" once calibrated, else clock_gettime). */
static void bench_clock(void)
{
	double sys = per_read(vt_clock_syscall_ns);
	double mine = per_read(vt_clock_ns);
	row("clock per event: clock_gettime(CLOCK_MONOTONIC)", sys, "ns");
	char name[128];
	snprintf(name, sizeof name, "clock per event: vramtrace's (%s)", vt_clock_source());
	row(name, mine, "ns");
}

int main(int argc, char **argv)
{
	if (argc > 1)
		return child(argc, argv);
	char self[4096];
	ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
	if (n <= 0)
		return 1;
	self[n] = '\0';
	self_path = self;
	paths_from_env();
	driver_dir = sim_dir;
	/* the log is a MAP_SHARED file: keep it in memory (tmpfs) when there is
	 * one, so the disk's writeback is not what is measured */
	char root[] = "/dev/shm/vt_bench_record_XXXXXX";
	char root_tmp[] = "/tmp/vt_bench_record_XXXXXX";
	trace_root = mkdtemp(root);
	if (!trace_root)
		trace_root = mkdtemp(root_tmp);
	if (!trace_root)
		return 1;
	bench_floor_and_depth();
	bench_pairs();
	bench_clock();
	bench_threads();
	remove_tree(trace_root);
	bench_log_on_disk(root_tmp);
	return 0;
}
