/* Process-lifecycle job, one scenario per run:
 *   fork N          3 threads allocate without pause; the main thread (with
 *                   a current context) forks N children meanwhile; each child
 *                   calls vramtrace_mark 10 times and exits
 *   spawn N         posix_spawn, vfork+exec and fork+exec of `child N`
 *   child N         N allocations of 4096 * (1 + i) bytes, each freed
 *   exec-chain N    one allocation of (N + 1) MiB, then exec `exec-chain N-1`
 *   dlopen-cycle N  N times: dlopen a library that dlopens the driver,
 *                   allocates and frees through dlsym, dlcloses it; dlclose
 *   signal-alloc MS for MS ms a thread calls vramtrace_mark in a loop while a
 *                   timer signal aimed at it allocates and frees 777 * 256
 *                   bytes in the handler; 2 other threads allocate
 *   signal-at-open  the same handler, every 300 us, aimed at the thread
 *                   whose first mark creates the log (lifecycle.sh slows
 *                   the creation down): the job must finish
 *   dlsym-signal MS 3 threads allocate; a timer signal's handler (any
 *                   thread) calls dlsym(driver, "cuMemAlloc_v2"): it must
 *                   always return the same pointer as outside a handler
 *   dl-state N      the main thread, then a new thread after N allocations
 *                   of 16 MiB * (1 + i): a dlsym of the driver touches no heap
 *                   and dlerror() is empty (the shim's own failed lookups
 *                   leave nothing behind); needs libvt_rel_heap_calls.so
 *                   preloaded
 * stdout: the counts the job knows (the tests compare them to the trace). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "rel_cuda.h"

extern char **environ;

static struct rel_api g_api;
static atomic_int g_stop;
static atomic_ulong g_rounds;

static void die(const char *what)
{
	fprintf(stderr, "lifecycle: %s\n", what);
	exit(3);
}

static void setup(void)
{
	if (rel_api_fill(REL_LINKED, &g_api) || rel_use_device(&g_api))
		die("no device");
}

static void alloc_free(size_t bytes)
{
	CUdeviceptr d;
	if (g_api.alloc(&d, bytes) || g_api.free(d))
		die("alloc/free failed");
}

/* ---- threads that allocate until told to stop ----------------------------- */

static void *allocator(void *arg)
{
	(void)arg;
	if (rel_use_device(&g_api))
		die("context");
	while (!atomic_load(&g_stop)) {
		alloc_free(256 * 3);
		atomic_fetch_add(&g_rounds, 1);
	}
	return NULL;
}

static void start_allocators(pthread_t *t, int n)
{
	for (int i = 0; i < n; i++)
		pthread_create(&t[i], NULL, allocator, NULL);
}

static void stop_allocators(pthread_t *t, int n)
{
	atomic_store(&g_stop, 1);
	for (int i = 0; i < n; i++)
		pthread_join(t[i], NULL);
}

static void (*find_mark(void))(const char *)
{
	return (void (*)(const char *))dlsym(RTLD_DEFAULT, "vramtrace_mark");
}

static int wait_ok(pid_t pid)
{
	int st;
	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR)
			return 0;
	return WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

/* ---- scenarios ------------------------------------------------------------------- */

static int s_fork(int n)
{
	pthread_t t[3];
	void (*mark)(const char *) = find_mark();
	start_allocators(t, 3);
	int ok = 0;
	for (int i = 0; i < n; i++) {
		struct timespec pause = {0, 2000000};
		nanosleep(&pause, NULL);
		pid_t pid = fork();
		if (pid == 0) {
			for (int k = 0; k < 10 && mark; k++)
				mark("forked child");
			exit(0);
		}
		ok += pid > 0 && wait_ok(pid);
	}
	stop_allocators(t, 3);
	printf("fork: %d of %d children ok; parent rounds %lu\n", ok, n, atomic_load(&g_rounds));
	return ok == n ? 0 : 1;
}

static int s_child(int n)
{
	for (int i = 0; i < n; i++)
		alloc_free(4096u * (unsigned)(1 + i));
	printf("child %d: %d allocations\n", (int)getpid(), n);
	return 0;
}

static int s_spawn(const char *self, int n)
{
	char num[16];
	snprintf(num, sizeof num, "%d", n);
	char *argv[] = {(char *)self, "child", num, NULL};
	alloc_free(256); /* the driver is loaded and used before the children */
	pid_t pids[3];
	if (posix_spawn(&pids[0], self, NULL, NULL, argv, environ))
		die("posix_spawn");
	pids[1] = vfork();
	if (pids[1] == 0) {
		execv(self, argv);
		_exit(127);
	}
	pids[2] = fork();
	if (pids[2] == 0) {
		execv(self, argv);
		_exit(127);
	}
	fflush(stdout);
	int ok = 0;
	for (int i = 0; i < 3; i++)
		ok += wait_ok(pids[i]);
	printf("spawn: %d of 3 children ok\n", ok);
	return ok == 3 ? 0 : 1;
}

static int s_exec_chain(const char *self, int n)
{
	alloc_free((size_t)(n + 1) << 20);
	printf("exec-chain: image %d\n", n);
	fflush(stdout);
	if (n == 0)
		return 0;
	char num[16];
	snprintf(num, sizeof num, "%d", n - 1);
	char *argv[] = {(char *)self, "exec-chain", num, NULL};
	execv(self, argv);
	die("execv");
	return 1;
}

static int s_dlopen_cycle(const char *lib, int n)
{
	int ok = 0;
	for (int i = 0; i < n; i++) {
		void *h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
		int (*round_fn)(void) = h ? (int (*)(void))dlsym(h, "rel_dl_round") : NULL;
		ok += round_fn && round_fn() == 0;
		if (h)
			dlclose(h);
	}
	printf("dlopen-cycle: %d of %d rounds ok\n", ok, n);
	return ok == n ? 0 : 1;
}

/* signal-alloc: the handler allocates on a thread that is busy writing marks.
 * That thread has no current context outside the handler (the handler pushes
 * and pops one), so vramtrace_mark never calls into the driver there: the
 * handler cannot interrupt a driver call (the simulated driver, like a real
 * one, is not async-signal-safe), only the shim's own work. */
static atomic_ulong g_handler_allocs, g_handler_fail;
static CUcontext g_ctx;

static void alloc_handler(int sig)
{
	(void)sig;
	int saved = errno;
	CUdeviceptr d;
	CUcontext popped;
	if (cuCtxPushCurrent(g_ctx) || g_api.alloc(&d, 777 * 256) || g_api.free(d))
		atomic_fetch_add(&g_handler_fail, 1);
	else
		atomic_fetch_add(&g_handler_allocs, 1);
	cuCtxPopCurrent(&popped);
	errno = saved;
}

/* SIGUSR1 to the calling thread every 300 us until timer_delete. */
static timer_t sigusr1_here_every_300us(void)
{
	struct sigevent sev = {.sigev_notify = SIGEV_THREAD_ID, .sigev_signo = SIGUSR1};
	sev._sigev_un._tid = (pid_t)syscall(SYS_gettid);
	timer_t timer;
	if (timer_create(CLOCK_MONOTONIC, &sev, &timer))
		die("timer_create");
	struct itimerspec every = {{0, 300000}, {0, 300000}};
	timer_settime(timer, 0, &every, NULL);
	return timer;
}

static void *mark_writer(void *arg)
{
	int ms = (int)(intptr_t)arg;
	void (*mark)(const char *) = find_mark();
	timer_t timer = sigusr1_here_every_300us();
	struct timespec start, now;
	clock_gettime(CLOCK_MONOTONIC, &start);
	unsigned long marks = 0;
	do {
		if (mark)
			mark("busy writing marks");
		marks++;
		clock_gettime(CLOCK_MONOTONIC, &now);
	} while ((now.tv_sec - start.tv_sec) * 1000 + (now.tv_nsec - start.tv_nsec) / 1000000 < ms);
	timer_delete(timer);
	return (void *)(uintptr_t)marks;
}

static int s_signal_alloc(int ms)
{
	if (cuCtxGetCurrent(&g_ctx) || !g_ctx)
		die("no context");
	pthread_t t[2], writer;
	start_allocators(t, 2);
	signal(SIGUSR1, alloc_handler);
	pthread_create(&writer, NULL, mark_writer, (void *)(intptr_t)ms);
	void *marks;
	pthread_join(writer, &marks);
	signal(SIGUSR1, SIG_IGN);
	stop_allocators(t, 2);
	printf("signal-alloc: %lu handler allocations, %lu failed, %lu marks\n",
	       atomic_load(&g_handler_allocs), atomic_load(&g_handler_fail),
	       (unsigned long)(uintptr_t)marks);
	return atomic_load(&g_handler_fail) || !atomic_load(&g_handler_allocs);
}

/* signal-at-open: the handler's driver calls arrive while this thread
 * creates the log; they cannot be recorded (no log yet) and must not wait
 * for the creation they interrupted. */
static int s_signal_at_open(void)
{
	if (cuCtxGetCurrent(&g_ctx) || !g_ctx)
		die("no context");
	void (*mark)(const char *) = find_mark();
	if (!mark)
		die("no vramtrace_mark: run under the shim");
	signal(SIGUSR1, alloc_handler);
	/* as in signal-alloc, no current context while the signals land: the
	 * mark then never calls into the driver, so the handler interrupts the
	 * shim's work only, never a driver call (the simulated driver, like a
	 * real one, is not async-signal-safe: a handler's allocation landing in
	 * this thread's cuMemFree waited forever on the driver's own lock) */
	CUcontext popped;
	if (cuCtxPopCurrent(&popped))
		die("cannot drop the context");
	timer_t timer = sigusr1_here_every_300us();
	mark("first record: it creates the log"); /* where a signal once hung the job */
	timer_delete(timer);
	if (cuCtxPushCurrent(g_ctx))
		die("cannot restore the context");
	alloc_free(4096);
	signal(SIGUSR1, SIG_IGN);
	printf("signal-at-open: %lu handler allocations, %lu failed\n",
	       atomic_load(&g_handler_allocs), atomic_load(&g_handler_fail));
	return atomic_load(&g_handler_fail) || !atomic_load(&g_handler_allocs);
}

/* dlsym-signal: lookups from a handler interrupting threads inside the shim */
static void *g_driver, *g_alloc_ptr;
static atomic_ulong g_lookups, g_mismatch;

static void lookup_handler(int sig)
{
	(void)sig;
	int saved = errno;
	void *p = dlsym(g_driver, "cuMemAlloc_v2");
	atomic_fetch_add(&g_lookups, 1);
	if (p != g_alloc_ptr)
		atomic_fetch_add(&g_mismatch, 1);
	errno = saved;
}

static int s_dlsym_signal(int ms)
{
	g_driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
	g_alloc_ptr = g_driver ? dlsym(g_driver, "cuMemAlloc_v2") : NULL;
	if (!g_alloc_ptr)
		die("no driver");
	pthread_t t[3];
	start_allocators(t, 3);
	signal(SIGALRM, lookup_handler);
	struct itimerval every = {{0, 200}, {0, 200}};
	setitimer(ITIMER_REAL, &every, NULL);
	struct timespec pause = {ms / 1000, (long)(ms % 1000) * 1000000};
	while (nanosleep(&pause, &pause) < 0 && errno == EINTR)
		;
	struct itimerval off = {{0, 0}, {0, 0}};
	setitimer(ITIMER_REAL, &off, NULL);
	signal(SIGALRM, SIG_IGN);
	stop_allocators(t, 3);
	printf("dlsym-signal: %lu lookups in handlers, %lu returned another pointer; rounds %lu\n",
	       atomic_load(&g_lookups), atomic_load(&g_mismatch), atomic_load(&g_rounds));
	return atomic_load(&g_mismatch) != 0;
}

/* dl-state: what the shim's own lookups leave in a thread's dl state. A
 * dlsym that succeeds frees what an earlier failure left (glibc's dlerror
 * state is allocated per thread), which a job's lookup from a signal
 * handler that interrupted malloc cannot survive. */
static unsigned long (*g_heap_calls)(void);
static int g_dl_allocs;

/* 1 if this thread's dl state is clean: a lookup touches no heap and
 * dlerror() has nothing to say. */
static int dl_state_clean(const char *who)
{
	unsigned long before = g_heap_calls();
	void *p = dlsym(g_driver, "cuMemAlloc_v2");
	unsigned long heap = g_heap_calls() - before;
	const char *err = dlerror();
	printf("dl-state %s: lookup %s, %lu heap calls, dlerror %s\n", who, p ? "found" : "failed",
	       heap, err ? err : "empty");
	return p && !heap && !err;
}

static void *dl_state_thread(void *ok)
{
	if (rel_use_device(&g_api))
		die("context");
	for (int i = 1; i <= g_dl_allocs; i++)
		alloc_free((size_t)i
		           << 24); /* past 64 MiB: the shim reads used memory, then NVML */
	*(int *)ok = dl_state_clean("new thread");
	return NULL;
}

static int s_dl_state(int allocs)
{
	*(void **)&g_heap_calls = dlsym(RTLD_DEFAULT, "rel_heap_calls");
	g_driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
	if (!g_heap_calls || !g_driver)
		die("dl-state: needs libvt_rel_heap_calls.so preloaded and the driver");
	int main_ok = dl_state_clean("main thread"), thread_ok = 0;
	g_dl_allocs = allocs;
	pthread_t t;
	if (pthread_create(&t, NULL, dl_state_thread, &thread_ok) || pthread_join(t, NULL))
		die("thread");
	return !(main_ok && thread_ok);
}

int main(int argc, char **argv)
{
	if (argc < 3)
		die("usage: vt-rel-lifecycle SCENARIO N [LIB]");
	const char *what = argv[1];
	int n = atoi(argv[2]);
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (!strcmp(what, "dlopen-cycle"))
		return s_dlopen_cycle(argc > 3 ? argv[3] : "libvt_rel_dlcycle.so", n);
	setup();
	if (!strcmp(what, "fork"))
		return s_fork(n);
	if (!strcmp(what, "spawn"))
		return s_spawn("/proc/self/exe", n);
	if (!strcmp(what, "child"))
		return s_child(n);
	if (!strcmp(what, "exec-chain"))
		return s_exec_chain("/proc/self/exe", n);
	if (!strcmp(what, "signal-alloc"))
		return s_signal_alloc(n);
	if (!strcmp(what, "signal-at-open"))
		return s_signal_at_open();
	if (!strcmp(what, "dlsym-signal"))
		return s_dlsym_signal(n);
	if (!strcmp(what, "dl-state"))
		return s_dl_state(n);
	die("unknown scenario");
	return 2;
}
