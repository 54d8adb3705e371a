/* Test probe: a shared object a Python test loads with ctypes. It links the
 * shim's Python frame capture (interpose/pyframes*.c) with fake_log.c and
 * exposes what a stack record would hold, so the test compares it with
 * Python's own traceback. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <execinfo.h>
#include <string.h>

#include "pyframes.h"
#include "pyframes_linetable.h"

int vt_fake_pystr(uint32_t id, char *out, size_t outlen, unsigned *copies);

/* words: 2 per frame, as in a stack record, nidx bound against this
 * thread's native stack (glibc backtrace, minus one like the shim). */
unsigned probe_capture(uint64_t *words, unsigned max_frames)
{
	void *raw[256];
	uint64_t ips[256];
	unsigned n = vt_py_capture(words, max_frames);
	int depth = backtrace(raw, 256);
	for (int i = 0; i < depth; i++)
		ips[i] = (uint64_t)(uintptr_t)raw[i] - 1;
	vt_py_bind_native(words, n, ips, (unsigned)depth);
	/* Replace each bound nidx by 1 if that native frame really is the eval
	 * loop (dladdr names it), 2 if not: the test checks them all. */
	for (unsigned i = 0; i < n; i++) {
		unsigned nidx = VT_PY_NIDX(words[2 * i + 1]);
		unsigned verdict = 0xffff;
		if (nidx != VT_PY_NIDX_UNKNOWN) {
			Dl_info info;
			verdict = dladdr((void *)(uintptr_t)ips[nidx], &info) && info.dli_sname &&
			                  !strcmp(info.dli_sname, "_PyEval_EvalFrameDefault")
			                  ? 1
			                  : 2;
		}
		words[2 * i + 1] = (words[2 * i + 1] & ~(uint64_t)0xffff) | verdict;
	}
	return n;
}

int probe_string(uint32_t id, char *out, size_t outlen, unsigned *copies)
{
	return vt_fake_pystr(id, out, outlen, copies);
}

int probe_location_line(const uint8_t *table, size_t len, int firstlineno, int addr)
{
	return vt_py_location_line(table, len, firstlineno, addr);
}
