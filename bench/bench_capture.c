/* vt_stack_capture alone, in process: unwind + hash + per-thread lookup (a
 * dedupe hit, the steady state), at 24 and 128 frames, 150 frames deep; the
 * same captured as the hook wrappers do, from the stack memo; and
 * a first-seen stack (unwind + record + insert) at 128 frames. The shim's
 * capture code and log writer are linked in; the log goes to a temporary
 * directory. Rows: "stacks<TAB>case<TAB>ns<TAB>ns/call". */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "log_writer.h"
#include "stack_capture.h"

#define DEEP 150
#define RUNS 21
#define RUN_NS 20000000.0

static double now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static __attribute__((noinline)) void capture_hit(void)
{
	vt_stack_capture(0);
}

/* As a hook wrapper captures (vt_stack_capture_here): a stack seen before
 * at the same place comes from the thread's memo, not the unwinder. */
static __attribute__((noinline)) void capture_here_hit(void)
{
	vt_stack_capture_here();
	__asm__ volatile("" ::: "memory");
}

static double measure(void (*op)(void))
{
	double best = 1e30;
	long n = 1000;
	for (int run = 0; run < RUNS; run++) {
		double t0 = now_ns();
		for (long i = 0; i < n; i++)
			op();
		double dt = now_ns() - t0;
		if (dt / n < best)
			best = dt / n;
		if (dt < RUN_NS)
			n = (long)(n * (RUN_NS / (dt > 1 ? dt : 1)));
	}
	return best;
}

/* A new stack every call: the innermost frame differs (n distinct call
 * sites are not available, so vary the depth of a short recursion). */
static __attribute__((noinline)) void capture_at(int extra)
{
	if (extra > 0) {
		capture_at(extra - 1);
		__asm__ volatile("" ::: "memory");
		return;
	}
	vt_stack_capture(0);
}

static double measure_new_stacks(void)
{
	/* each recursion depth 0..299 is a different stack, seen once */
	double t0 = now_ns();
	for (int d = 0; d < 300; d++)
		capture_at(d);
	return (now_ns() - t0) / 300;
}

static __attribute__((noinline)) double deep(int level, double (*run)(void))
{
	if (level > 0) {
		double r = deep(level - 1, run);
		__asm__ volatile("" ::: "memory");
		return r;
	}
	return run();
}

static double run_hit(void)
{
	return measure(capture_hit);
}

static double run_here_hit(void)
{
	return measure(capture_here_hit);
}

int main(void)
{
	char dir[] = "/tmp/vt_bench_capture_XXXXXX";
	if (!mkdtemp(dir))
		return 1;
	struct vt_log_config cfg = {.dir = dir, .stack_depth = 128};
	if (vt_log_init(&cfg) != 0)
		return 1;
	static const unsigned depths[] = {24, 128};
	for (size_t i = 0; i < 2; i++) {
		vt_stack_set_depth(depths[i]);
		printf(
		    "stacks\tvt_stack_capture %u frames, seen before (in process)\t%.1f\tns/call\n",
		    depths[i], deep(DEEP, run_hit));
		printf("stacks\tthe same from a wrapper, seen there before: the stack memo, %u "
		       "frames (in process)\t%.1f\tns/call\n",
		       depths[i], deep(DEEP, run_here_hit));
	}
	vt_stack_set_depth(128);
	printf("stacks\tvt_stack_capture 128 frames, new stack (in process)\t%.1f\tns/call\n",
	       deep(DEEP - 100, measure_new_stacks));
	vt_stack_set_depth(0);
	printf("stacks\tvt_stack_capture, depth 0 (in process)\t%.1f\tns/call\n",
	       measure(capture_hit));
	vt_log_finish(0);
	char cmd[256];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	return system(cmd) == 0 ? 0 : 1;
}
