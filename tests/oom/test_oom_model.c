/* The OOM post-mortem on in-memory records (numbers known exactly), and the
 * diff's name matching. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "accounting.h"
#include "diff.h"
#include "model.h"
#include "model_history.h"
#include "oom.h"

#define API_ALLOC 2 /* cuMemAlloc_v2 (api.def) */
#define API_FREE 11

struct feeder {
	struct vt_model *m;
	uint32_t proc;
	uint64_t seq;
};

static void begin(struct feeder *f, struct vt_model *m, int pid, uint32_t state)
{
	struct vt_file_header h;
	memset(&h, 0, sizeof h);
	memcpy(h.magic, VT_MAGIC, VT_MAGIC_LEN);
	h.pid = pid;
	h.clock_base_ns = 1000;
	h.state = VT_STATE_WORD(state, 0);
	strcpy(h.exe, "/usr/bin/job");
	h.exe_len = (uint32_t)strlen(h.exe);
	f->m = m;
	f->proc = vt_model_begin_process(m, &h, 1000);
	f->seq = 0;
}

static void event(struct feeder *f, uint32_t type, uint64_t t, uint64_t addr, uint64_t bytes,
                  int32_t result)
{
	struct vt_event ev;
	memset(&ev, 0, sizeof ev);
	ev.hdr = VT_HDR(type, sizeof ev);
	ev.seq = ++f->seq;
	ev.t_ns = t;
	ev.addr = addr;
	ev.bytes = bytes;
	ev.api = type == VT_REC_FREE ? API_FREE : API_ALLOC;
	ev.device = 0;
	ev.result = result;
	vt_model_feed(f->m, f->proc, type, &ev, sizeof ev);
}

static uint64_t meminfo(struct feeder *f, uint64_t t, uint8_t reason, uint64_t free_b,
                        uint64_t total)
{
	struct vt_meminfo_rec r;
	memset(&r, 0, sizeof r);
	r.hdr = VT_HDR(VT_REC_MEMINFO, sizeof r);
	r.device = 0;
	r.reason = reason;
	r.seq = ++f->seq;
	r.t_ns = t;
	r.free_bytes = free_b;
	r.total_bytes = total;
	vt_model_feed(f->m, f->proc, VT_REC_MEMINFO, &r, sizeof r);
	return r.seq;
}

/* NVML's view beside the reading reading_seq: this process self bytes,
 * `others` other processes holding others_bytes, the first nlisted of
 * `listed` named. */
static void nvml(struct feeder *f, uint64_t reading_seq, uint64_t self, uint32_t others,
                 uint64_t others_bytes, const struct vt_nvml_proc *listed, uint16_t nlisted)
{
	union {
		struct vt_nvml_rec r;
		char buf[sizeof(struct vt_nvml_rec) + 16 * sizeof(struct vt_nvml_proc)];
	} u;
	memset(&u, 0, sizeof u);
	uint32_t size = (uint32_t)(sizeof u.r + nlisted * sizeof u.r.procs[0]);
	u.r.hdr = VT_HDR(VT_REC_NVML, size);
	u.r.reason = VT_MEMINFO_PEAK;
	u.r.nlisted = nlisted;
	u.r.seq = ++f->seq;
	u.r.reading_seq = reading_seq;
	u.r.self_bytes = self;
	u.r.others = others;
	u.r.others_bytes = others_bytes;
	memcpy(u.r.procs, listed, nlisted * sizeof u.r.procs[0]);
	vt_model_feed(f->m, f->proc, VT_REC_NVML, &u, size);
}

static void mark(struct feeder *f, uint64_t t, uint16_t kind, const char *text, uint64_t value)
{
	union {
		struct vt_mark_rec r;
		char buf[512];
	} u;
	memset(&u, 0, sizeof u);
	size_t n = strlen(text);
	uint32_t size = VT_ALIGN8((uint32_t)(sizeof u.r + n));
	u.r.hdr = VT_HDR(VT_REC_MARK, size);
	u.r.kind = kind;
	u.r.text_len = (uint16_t)n;
	u.r.seq = ++f->seq;
	u.r.t_ns = t;
	u.r.value = value;
	memcpy(u.r.text, text, n);
	vt_model_feed(f->m, f->proc, VT_REC_MARK, &u, size);
}

/* A job on a 1000-byte device: A 600 and C 200 live when 300 more are
 * asked; the driver says 150 free, so 850 used, 50 of them untracked. */
static struct vt_model *driver_oom_job(void)
{
	struct vt_model *m = vt_model_new();
	struct feeder f;
	begin(&f, m, 10, VT_STATE_EXITED);
	meminfo(&f, 5, VT_MEMINFO_FIRST_USE, 950, 1000);
	event(&f, VT_REC_ALLOC, 10, 0x1000, 600, 0);
	event(&f, VT_REC_ALLOC, 20, 0x2000, 100, 0);
	event(&f, VT_REC_FREE, 30, 0x2000, 0, 0);
	event(&f, VT_REC_ALLOC, 40, 0x3000, 200, 0);
	event(&f, VT_REC_ALLOC, 45, 0, 7, 1 /* invalid value: not an OOM */);
	event(&f, VT_REC_ALLOC, 50, 0, 300, 2);
	meminfo(&f, 51, VT_MEMINFO_OOM, 150, 1000);
	event(&f, VT_REC_ALLOC, 60, 0, 900, 2);
	meminfo(&f, 61, VT_MEMINFO_OOM, 150, 1000);
	vt_model_end_process(m, f.proc);
	vt_model_finish(m);
	return m;
}

/* 600 bytes of the job's on a 1000-byte device read 900 used, at a mark
 * and at the shim's peak reading with NVML beside it: 3 other processes
 * hold 400 per NVML, more than the 300 left, so they take those 300. */
static void test_accounting_nvml(void **state)
{
	(void)state;
	struct vt_model *m = vt_model_new();
	struct feeder f;
	begin(&f, m, 10, VT_STATE_EXITED);
	meminfo(&f, 5, VT_MEMINFO_FIRST_USE, 950, 1000);
	event(&f, VT_REC_ALLOC, 10, 0x1000, 600, 0);
	meminfo(&f, 20, VT_MEMINFO_MARK, 100, 1000);
	uint64_t peak = meminfo(&f, 21, VT_MEMINFO_PEAK, 100, 1000);
	struct vt_nvml_proc listed[VT_NVML_LISTED + 1] = {
	    {.pid = 7, .used_bytes = 300, .comm = "python"},
	    {.pid = 8, .used_bytes = VT_NVML_UNKNOWN, .comm = "x"},
	};
	nvml(&f, peak, 650, 3, 400, listed, 2);
	nvml(&f, peak, 1, 1, 1, listed, VT_NVML_LISTED + 1); /* too many listed: dropped */
	event(&f, VT_REC_FREE, 30, 0x1000, 0, 0);
	meminfo(&f, 40, VT_MEMINFO_EXIT, 400, 1000);
	vt_model_end_process(m, f.proc);
	vt_model_finish(m);
	assert_int_equal(m->procs[f.proc].nnvml, 1);
	struct vt_accounting acc;
	vt_accounting_build(m, &acc);
	assert_int_equal(acc.npeak, 1);
	const struct vt_device_account *p = &acc.peak[0];
	assert_int_equal(p->reason, VT_MEMINFO_PEAK); /* not the mark: NVML beside it */
	assert_non_null(p->nvml);
	assert_int_equal(p->framework_bytes, 600);
	assert_int_equal(p->other_processes_bytes, 300);
	assert_int_equal(p->unexplained_bytes, 0);
	assert_int_equal(p->nvml->self_bytes, 650);
	assert_int_equal(p->nvml->nlisted, 2);
	assert_string_equal(p->nvml->listed[0].comm, "python");
	assert_int_equal(acc.ndev, 1);
	assert_int_equal(acc.dev[0].reason, VT_MEMINFO_EXIT);
	assert_null(acc.dev[0].nvml);
	assert_int_equal(acc.dev[0].other_processes_bytes, 0);
	assert_int_equal(acc.dev[0].unexplained_bytes, 600);
	vt_model_free(m);
}

static void test_driver_oom(void **state)
{
	(void)state;
	struct vt_model *m = driver_oom_job();
	struct vt_oom_report r;
	char err[256];
	assert_int_equal(vt_oom_build(&r, m, 1, err, sizeof err), 0);
	assert_int_equal(r.source, VT_OOM_DRIVER);
	assert_int_equal(r.driver_count, 2);
	assert_int_equal(r.request_bytes, 300);
	assert_int_equal(r.device, 0);
	assert_true(r.have_meminfo && !r.free_estimated);
	assert_int_equal(r.free_bytes, 150);
	assert_int_equal(r.total_bytes, 1000);
	assert_int_equal(r.tracked_bytes, 800);
	assert_int_equal(r.live_allocs, 2);
	assert_int_equal(r.untracked_bytes, 50);
	assert_int_equal(r.need_to_free, 150);
	assert_int_equal(r.nlargest, 2);
	assert_int_equal(r.largest[0].bytes, 600);
	assert_int_equal(r.largest[1].bytes, 200);
	assert_true(r.clean_exit);
	vt_oom_free(&r);
	/* the second OOM: 900 asked, 750 more needed */
	assert_int_equal(vt_oom_build(&r, m, 2, err, sizeof err), 0);
	assert_int_equal(r.request_bytes, 900);
	assert_int_equal(r.need_to_free, 750);
	vt_oom_free(&r);
	/* past the last one */
	assert_int_equal(vt_oom_build(&r, m, 3, err, sizeof err), -1);
	assert_non_null(strstr(err, "2 driver"));
	vt_oom_free(&r);
	vt_model_free(m);
}

/* No driver OOM; the launcher saw PyTorch's message while 700 bytes were
 * live. The job was killed (state running). Free then is estimated from the
 * first-use reading (950 free, nothing tracked): 950 - 700 = 250. */
static void test_framework_oom_and_killed_job(void **state)
{
	(void)state;
	struct vt_model *m = vt_model_new();
	struct feeder job, launcher;
	begin(&job, m, 20, VT_STATE_RUNNING);
	meminfo(&job, 5, VT_MEMINFO_FIRST_USE, 950, 1000);
	event(&job, VT_REC_ALLOC, 10, 0x1000, 500, 0);
	mark(&job, 15, VT_MARK_STEP, "step 7", 7);
	event(&job, VT_REC_ALLOC, 20, 0x2000, 200, 0);
	vt_model_end_process(m, job.proc);
	begin(&launcher, m, 19, VT_STATE_EXITED);
	mark(&launcher, 25, VT_MARK_LAUNCHER, "stderr relay of pid 20", 20);
	mark(&launcher, 30, VT_MARK_FRAMEWORK_OOM,
	     "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1024 bytes. GPU 0 has a "
	     "total capacity of 1000 bytes", 1024);
	vt_model_end_process(m, launcher.proc);
	vt_model_finish(m);

	struct vt_oom_report r;
	char err[256];
	assert_int_equal(vt_oom_build(&r, m, 1, err, sizeof err), 0);
	assert_int_equal(r.source, VT_OOM_FRAMEWORK);
	assert_int_equal(r.framework_count, 1);
	assert_true(r.fw_parsed);
	assert_int_equal(r.fw.framework, VT_OOM_FW_PYTORCH);
	assert_int_equal(r.request_bytes, 1024);
	assert_int_equal(r.device, 0);
	assert_int_equal(r.tracked_bytes, 700);
	assert_true(r.have_meminfo && r.free_estimated);
	assert_int_equal(r.free_bytes, 250);
	assert_int_equal(r.need_to_free, 1024 - 250);
	assert_false(r.clean_exit); /* the job died; the launcher does not count */
	int seen_job = 0;
	for (uint32_t i = 0; i < r.nprocs; i++) {
		const struct vt_oom_proc *o = &r.procs[i];
		if (m->procs[o->proc].pid == 19) {
			assert_true(o->launcher);
		} else {
			seen_job = 1;
			assert_false(o->clean);
			assert_string_equal(o->last_mark, "step 7");
			assert_int_equal(o->live_bytes, 700);
			assert_int_equal(o->live_allocs, 2);
		}
	}
	assert_true(seen_job);
	vt_oom_free(&r);
	vt_model_free(m);
}

static void test_match_names(void **state)
{
	(void)state;
	char *a[] = {"f (x.c:10)", "g (x.c:20)", "g (x.c:20)", "h (y.c:5)", "k (z.c:1)", "k (z.c:2)",
	             "0x55d0c0de1234 (lib.so+0x1234)", "0x55d0c0de9999 (lib.so+0x9999)"};
	char *b[] = {"g (x.c:20)", "f (x.c:12)", "h (y.c:5)", "k (z.c:3)", "k (z.c:4)", "new (n.c:1)",
	             "0x7f00aa001234 (lib.so+0x1234)", "0x55d0c0de9999 (lib.so+0x8888)"};
	int32_t a2b[8], b2a[8];
	vt_diff_match_names(a, 8, b, 8, a2b, b2a);
	assert_int_equal(a2b[0], 1);  /* f: moved two lines, unique: matched */
	assert_true((a2b[1] == 0) != (a2b[2] == 0)); /* one g pairs with the one g */
	assert_true(a2b[1] == -1 || a2b[2] == -1);
	assert_int_equal(a2b[3], 2);  /* h */
	assert_int_equal(a2b[4], -1); /* k: two on each side, lines differ: ambiguous */
	assert_int_equal(a2b[5], -1);
	assert_int_equal(a2b[6], 6);  /* unsymbolized: module+offset, never the address */
	assert_int_equal(a2b[7], -1); /* the same address, another offset: not the same */
	assert_int_equal(b2a[5], -1); /* new */
	assert_int_equal(b2a[1], 0);
}

static void test_grew_over(void **state)
{
	(void)state;
	assert_false(vt_diff_grew_over(100, 110, 10));
	assert_true(vt_diff_grew_over(100, 111, 10));
	assert_false(vt_diff_grew_over(100, 50, 10));
	assert_true(vt_diff_grew_over(0, 1, 1000));
	assert_false(vt_diff_grew_over(0, 0, 0));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_driver_oom),
		cmocka_unit_test(test_accounting_nvml),
		cmocka_unit_test(test_framework_oom_and_killed_job),
		cmocka_unit_test(test_match_names),
		cmocka_unit_test(test_grew_over),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
