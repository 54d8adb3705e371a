/* Cost of Python frames per event (issue 8).
 *
 * Built twice from this file:
 *  - bench_pyframes (program): a process WITHOUT CPython. Times
 *    vt_py_capture() there (what every event of a C/C++ job pays), then runs
 *    bench_pyframes.py under each Python given on the command line, with
 *    frames on and with VRAMTRACE_PYTHON=0, and prints one table;
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
static int run_python(const char *python, const char *script, const char *module, int off)
{
	fflush(stdout);
	pid_t pid = fork();
	if (pid == 0) {
		if (off)
			setenv("VRAMTRACE_PYTHON", "0", 1);
		else
			unsetenv("VRAMTRACE_PYTHON");
		execl(python, python, script, module, off ? "off" : "on", (char *)NULL);
		_exit(127);
	}
	int status = 0;
	waitpid(pid, &status, 0);
	return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: bench_pyframes SCRIPT MODULE [PYTHON...]\n");
		return 2;
	}
	unsigned frames;
	double off = vt_bench_capture_ns(10000000, 256, &frames);
	printf("| process | python frames | stack depth | ns per event |\n");
	printf("| --- | --- | --- | --- |\n");
	printf("| C program (no CPython) | %s | - | %.2f |\n", vt_py_describe(), off);
	int rc = 0;
	for (int i = 3; i < argc; i++) {
		rc |= run_python(argv[i], argv[1], argv[2], 0);
		rc |= run_python(argv[i], argv[1], argv[2], 1);
	}
	return rc;
}
#endif
