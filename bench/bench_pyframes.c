/* Cost of Python frames per event.
 *
 * Built twice from this file:
 *  - bench_pyframes (program, no arguments: paths are compiled in): a
 *    process WITHOUT CPython. Times vt_py_capture() there (what every event
 *    of a C/C++ job pays), then runs bench_pyframes.py under this machine's
 *    python3 with frames on and with VRAMTRACE_PYTHON=0 (and the perf
 *    trampoline comparison under every 3.12+ found), then
 *    bench_pyframes_job.py (a traced job on the simulated driver);
 *  - vt_bench_pyframes (module): loaded by bench_pyframes.py with ctypes; its
 *    timing loops run inside the interpreter, on a thread with Python frames.
 * Both link the shim's capture code and tests/python/fake_log.c (records go
 * to memory, not disk: this measures capture, not the writer).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <execinfo.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "pyframes.h"
#include "pyframes_linetable.h"

static double now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

/* ns per vt_py_capture() of the calling thread's stack; frames in *frames. */
double vt_bench_capture_ns(unsigned iters, unsigned max_frames, unsigned *frames)
{
	static uint64_t words[2 * 1024];
	if (max_frames > 1024)
		max_frames = 1024;
	unsigned n = vt_py_capture(words, max_frames); /* warm the caches */
	double t0 = now_ns();
	for (unsigned i = 0; i < iters; i++)
		n = vt_py_capture(words, max_frames);
	double t1 = now_ns();
	*frames = n;
	return (t1 - t0) / iters;
}

/* One capture, cold or warm as the caller arranged, in ns. */
double vt_bench_capture_once_ns(unsigned max_frames)
{
	static uint64_t words[2 * 1024];
	double t0 = now_ns();
	vt_py_capture(words, max_frames > 1024 ? 1024 : max_frames);
	return now_ns() - t0;
}

/* Line lookup for every offset in addrs: our location-table decoder on the
 * code object's co_linetable bytes vs the interpreter's PyCode_Addr2Line on
 * the code object. ns per lookup in *own and *api; -1 when a result differs. */
int vt_bench_lines(void *code, const uint8_t *table, size_t len, int first, const int *addrs,
		   unsigned naddrs, unsigned rounds, double *own, double *api)
{
	int (*addr2line)(void *, int) = (int (*)(void *, int))dlsym(RTLD_DEFAULT, "PyCode_Addr2Line");
	if (!addr2line)
		return -1;
	volatile int sink = 0;
	double t0 = now_ns();
	for (unsigned r = 0; r < rounds; r++)
		for (unsigned i = 0; i < naddrs; i++)
			sink += vt_py_location_line(table, len, first, addrs[i]);
	double t1 = now_ns();
	for (unsigned r = 0; r < rounds; r++)
		for (unsigned i = 0; i < naddrs; i++)
			sink += addr2line(code, addrs[i]);
	double t2 = now_ns();
	*own = (t1 - t0) / ((double)rounds * naddrs);
	*api = (t2 - t1) / ((double)rounds * naddrs);
	for (unsigned i = 0; i < naddrs; i++)
		if (vt_py_location_line(table, len, first, addrs[i]) != addr2line(code, addrs[i]))
			return -1;
	return sink == 12345 ? 1 : 0;
}

/* Native frames a DWARF unwinder (glibc backtrace, like libunwind) finds
 * from here, and how many are the eval loop: with perf trampolines (3.12)
 * they show whether the native stack still reaches the Python frames. */
void vt_bench_native_walk(unsigned *depth, unsigned *eval_frames)
{
	void *ips[512];
	int n = backtrace(ips, 512);
	*depth = (unsigned)n;
	*eval_frames = 0;
	for (int i = 0; i < n; i++) {
		Dl_info info;
		if (dladdr((char *)ips[i] - 1, &info) && info.dli_sname &&
		    !strcmp(info.dli_sname, "_PyEval_EvalFrameDefault"))
			++*eval_frames;
	}
}

#ifdef VT_BENCH_MAIN
/* Rows go to stdout as "pyframes<TAB>case<TAB>value<TAB>unit" (bench/run_all.sh
 * protocol); the Python halves print theirs the same way. */
static void run(char *const argv[], const char *python_env)
{
	fflush(stdout);
	pid_t pid = fork();
	if (pid == 0) {
		if (python_env)
			setenv("VRAMTRACE_PYTHON", python_env, 1);
		else
			unsetenv("VRAMTRACE_PYTHON");
		execv(argv[0], argv);
		_exit(127);
	}
	int status = 0;
	waitpid(pid, &status, 0);
	if (!WIFEXITED(status) || WEXITSTATUS(status))
		printf("pyframes\t%s %s\tn/a (failed)\t\n", argv[0], argv[1]);
}

int main(void)
{
	unsigned frames;
	double off = vt_bench_capture_ns(10000000, 256, &frames);
	printf("pyframes\tcapture in a C process (no CPython)\t%.2f\tns/event\n", off);
	/* This machine's python3 in full; the others' perf trampolines only. */
	char *pythons[] = {VT_BENCH_PYTHONS, NULL};
	for (int i = 0; pythons[i]; i++) {
		char *on[] = {pythons[i], VT_BENCH_PY_SCRIPT, VT_BENCH_PY_MODULE, "on",
			      i ? "trampolines-only" : "full", NULL};
		char *off_[] = {pythons[i], VT_BENCH_PY_SCRIPT, VT_BENCH_PY_MODULE, "off", "full", NULL};
		run(on, NULL);
		if (i == 0)
			run(off_, "0");
	}
#ifdef VT_BENCH_VRAMTRACE
	char *job[] = {pythons[0], VT_BENCH_JOB_SCRIPT, VT_BENCH_VRAMTRACE, VT_BENCH_SIMDRIVER_DIR,
		       pythons[0], NULL};
	run(job, NULL);
#endif
	return 0;
}
#endif
