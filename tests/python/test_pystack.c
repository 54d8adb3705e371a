/* Analyzer side of Python frames: interned strings across logs, decoding,
 * merging into native stacks, and sites. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "pystack.h"

#define W0(file, func) ((uint64_t)(file) << 32 | (uint32_t)(func))
#define W1(line, ord, nidx) ((uint64_t)(line) << 32 | (uint64_t)(ord) << 16 | (nidx))
#define UNK VT_PYSTACK_NIDX_UNKNOWN

static void add_str(struct vt_pystrs *ps, uint32_t log, uint32_t id, const char *text)
{
	_Alignas(8) unsigned char buf[256] = {0};
	struct vt_pystr_rec *r = (void *)buf;
	r->id = id;
	r->len = (uint32_t)strlen(text);
	memcpy(r->text, text, r->len);
	struct vt_record_view v = {VT_REC_PYSTR, VT_ALIGN8(16 + r->len), buf, 1, 0};
	char err[128];
	assert_int_equal(vt_pystrs_add(ps, log, &v, err, sizeof err), 0);
}

static void test_strings_across_logs(void **state)
{
	(void)state;
	struct vt_pystrs *ps = vt_pystrs_new();
	add_str(ps, 0, 1, "/job/train.py");
	add_str(ps, 0, 2, "main");
	add_str(ps, 1, 1, "/job/data.py"); /* same id, other process, other text */
	add_str(ps, 1, 2, "/job/train.py");
	add_str(ps, 0, 3, "/job/train.py"); /* a racing thread's duplicate */
	assert_int_equal(vt_pystrs_count(ps), 3);
	uint32_t train = vt_pystrs_global(ps, 0, 1);
	assert_int_equal(vt_pystrs_global(ps, 1, 2), train);
	assert_int_equal(vt_pystrs_global(ps, 0, 3), train);
	assert_true(vt_pystrs_global(ps, 1, 1) != train);
	assert_string_equal(vt_pystrs_text(ps, vt_pystrs_global(ps, 1, 1)), "/job/data.py");
	assert_int_equal(vt_pystrs_global(ps, 2, 1), 0);
	assert_string_equal(vt_pystrs_text(ps, 0), "?");

	/* A malformed record is refused with a reason. */
	_Alignas(8) unsigned char bad[24] = {0};
	struct vt_pystr_rec *r = (void *)bad;
	r->id = 9;
	r->len = 100; /* runs past the record */
	struct vt_record_view v = {VT_REC_PYSTR, sizeof bad, bad, 1, 4096};
	char err[128] = "";
	assert_int_equal(vt_pystrs_add(ps, 0, &v, err, sizeof err), -1);
	assert_non_null(strstr(err, "4096"));
	vt_pystrs_free(ps);
}

static void test_globalize_decode(void **state)
{
	(void)state;
	struct vt_pystrs *ps = vt_pystrs_new();
	add_str(ps, 5, 10, "/job/train.py");
	add_str(ps, 5, 11, "upload");
	uint64_t words[4] = {W0(10, 11), W1(42, 0, 7), W0(10, 99), W1(3, 1, UNK)};
	vt_pystack_globalize(ps, 5, words, 2, words);
	struct vt_pyframe f[2];
	assert_int_equal(vt_pystack_decode(ps, words, 2, f), 2);
	assert_string_equal(f[0].file, "/job/train.py");
	assert_string_equal(f[0].func, "upload");
	assert_int_equal(f[0].line, 42);
	assert_int_equal(f[0].native_index, 7);
	assert_string_equal(f[1].func, "?"); /* id 99 never written */
	assert_int_equal(f[1].eval_ord, 1);
	assert_int_equal(f[1].native_index, UNK);
	char buf[128];
	vt_pystack_format(&f[0], buf, sizeof buf);
	assert_string_equal(buf, "upload (/job/train.py:42)");
	vt_pystrs_free(ps);
}

static struct vt_pyframe frame(uint16_t ord, uint16_t nidx)
{
	return (struct vt_pyframe){"/job/a.py", "f", 1, 2, 10, ord, nidx};
}

/* Renders a merge as a string: "N3" native frame 3, "P1" Python frame 1. */
static void render(const struct vt_merged_frame *m, unsigned n, char *out)
{
	out[0] = 0;
	for (unsigned i = 0; i < n; i++)
		sprintf(out + strlen(out), "%s%c%u", i ? " " : "", m[i].python ? 'P' : 'N',
			m[i].index);
}

static void test_merge(void **state)
{
	(void)state;
	struct vt_merged_frame m[32];
	char got[256];
	/* natives: 0 hook, 1 ctypes, 2 eval(ord 0), 3 call, 4 eval(ord 1), 5 main.
	 * Python 3.11: frames 0,1 share invocation 0; frame 2 is invocation 1. */
	const uint8_t roles[6] = {0, 0, VT_NATIVE_EVAL, VT_NATIVE_INTERPRETER, VT_NATIVE_EVAL, 2};
	struct vt_pyframe py[3] = {frame(0, 2), frame(0, 2), frame(1, 4)};
	render(m, vt_pystack_merge(py, 3, 6, roles, VT_MERGE_FULL, m, 32), got);
	assert_string_equal(got, "N0 N1 P0 P1 N3 P2 N5");
	render(m, vt_pystack_merge(py, 3, 6, roles, VT_MERGE_HIDE_INTERPRETER, m, 32), got);
	assert_string_equal(got, "N0 N1 P0 P1 P2");

	/* nidx unknown (a cold-split eval frame): placed by eval_ord + roles. */
	struct vt_pyframe cold[3] = {frame(0, UNK), frame(0, UNK), frame(1, 4)};
	render(m, vt_pystack_merge(cold, 3, 6, roles, VT_MERGE_FULL, m, 32), got);
	assert_string_equal(got, "N0 N1 P0 P1 N3 P2 N5");

	/* native stack truncated at 3 frames: outer Python frames at the end */
	struct vt_pyframe cut[3] = {frame(0, 2), frame(0, 2), frame(1, UNK)};
	render(m, vt_pystack_merge(cut, 3, 3, roles, VT_MERGE_FULL, m, 32), got);
	assert_string_equal(got, "N0 N1 P0 P1 P2");

	/* no roles, no nidx: everything Python after the native frames */
	struct vt_pyframe none[2] = {frame(0, UNK), frame(1, UNK)};
	render(m, vt_pystack_merge(none, 2, 2, NULL, VT_MERGE_FULL, m, 32), got);
	assert_string_equal(got, "N0 N1 P0 P1");

	/* inconsistent slots never reorder Python frames */
	struct vt_pyframe odd[2] = {frame(0, 4), frame(1, 2)};
	render(m, vt_pystack_merge(odd, 2, 6, roles, VT_MERGE_FULL, m, 32), got);
	assert_string_equal(got, "N0 N1 N2 N3 P0 P1 N5");

	/* output bounded by max */
	assert_int_equal(vt_pystack_merge(py, 3, 6, roles, VT_MERGE_FULL, m, 4), 4);
}

static void test_roles(void **state)
{
	(void)state;
	assert_int_equal(vt_pystack_native_role("/usr/lib/libpython3.11.so.1.0",
						"_PyEval_EvalFrameDefault"), VT_NATIVE_EVAL);
	assert_int_equal(vt_pystack_native_role(NULL, "_PyEval_EvalFrameDefault.cold"),
			 VT_NATIVE_EVAL);
	assert_int_equal(vt_pystack_native_role("/usr/bin/python3.11", "_PyObject_MakeTpCall"),
			 VT_NATIVE_INTERPRETER);
	assert_int_equal(vt_pystack_native_role("/x/libcuda.so.1", "cuMemAlloc_v2"),
			 VT_NATIVE_PLAIN);
}

static void test_sites(void **state)
{
	(void)state;
	struct vt_pyframe py[4] = {
		{"/usr/lib/python3/dist-packages/numpy/core/x.py", "asarray", 1, 2, 5, 0, 0},
		{"/venv/lib/python3.11/site-packages/torch/nn/modules/module.py", "to", 3, 4, 9, 0, 0},
		{"/job/model.py", "upload", 5, 6, 42, 0, 0},
		{"/job/train.py", "main", 7, 8, 7, 0, 0},
	};
	assert_int_equal(vt_pystack_site(py, 4), 2);
	assert_int_equal(vt_pystack_site(py, 2), 0); /* only library: innermost */
	assert_int_equal(vt_pystack_site(py, 0), -1);
	assert_true(vt_pystack_is_library_file("<frozen importlib._bootstrap>"));
	assert_false(vt_pystack_is_library_file("<string>"));
	setenv("VRAMTRACE_PY_LIBRARY_PATHS", "/nothing:/job/model", 1);
	assert_int_equal(vt_pystack_site(py, 4), 3);
	setenv("VRAMTRACE_PY_USER_PATHS", "site-packages/torch/", 1);
	assert_int_equal(vt_pystack_site(py, 4), 1);
	unsetenv("VRAMTRACE_PY_LIBRARY_PATHS");
	unsetenv("VRAMTRACE_PY_USER_PATHS");
}

static void test_site_of_record(void **state)
{
	(void)state;
	struct vt_pystrs *ps = vt_pystrs_new();
	add_str(ps, 3, 1, "/venv/lib/python3.12/site-packages/torch/cuda/memory.py");
	add_str(ps, 3, 2, "malloc");
	add_str(ps, 3, 3, "/job/train.py");
	add_str(ps, 3, 4, "fit");
	const uint64_t words[4] = {W0(1, 2), W1(80, 0, 5), W0(3, 4), W1(12, 0, 5)};
	char site[256] = "untouched";
	assert_int_equal(vt_pystack_site_of_record(ps, 3, words, 0, site, sizeof site), -1);
	assert_string_equal(site, "untouched");
	assert_int_equal(vt_pystack_site_of_record(ps, 3, words, 2, site, sizeof site), 1);
	assert_string_equal(site, "fit (/job/train.py:12)");
	vt_pystrs_free(ps);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_strings_across_logs),
		cmocka_unit_test(test_globalize_decode),
		cmocka_unit_test(test_merge),
		cmocka_unit_test(test_roles),
		cmocka_unit_test(test_sites),
		cmocka_unit_test(test_site_of_record),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
