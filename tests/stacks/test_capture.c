/* Stack capture, dedupe and module records, against an in-memory log
 * (fake_log.c): frames name the right callers, return addresses minus one,
 * one record per unique stack per thread, depth limits, depth 0 = no
 * unwinding at all, 16 threads intact, fork, dlopen/dlclose records. */
#define _GNU_SOURCE
#define UNW_LOCAL_ONLY
#include <dlfcn.h>
#include <libunwind.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "capture_sites.h"
#include "fake_log.h"
#include "modules.h"
#include "stack_capture.h"
#include "vramtrace/format.h"

/* ---- a counting unw_backtrace: this program's definition wins over
 * libunwind's for the capture code linked into it ------------------------- */

static _Atomic unsigned long unwinder_calls;

int unw_backtrace(void **buf, int size)
{
	static int (*real)(void **, int);
	if (!real)
		real = (int (*)(void **, int))dlsym(RTLD_NEXT, "unw_backtrace");
	unwinder_calls++;
	return real(buf, size);
}

/* ---- helpers ------------------------------------------------------------ */

static const char *symbol_at(uint64_t addr)
{
	Dl_info info;
	if (!dladdr((void *)(uintptr_t)addr, &info) || !info.dli_sname)
		return "?";
	return info.dli_sname;
}

/* addr lies in fn's code (static functions have no dynamic symbol for
 * dladdr: test functions are small, 2 KiB is a safe bound at -O0) */
static int in_function(uint64_t addr, const void *fn)
{
	return addr > (uintptr_t)fn && addr < (uintptr_t)fn + 2048;
}

/* One fixed call site for tests that compare ids across calls. */
static __attribute__((noinline)) uint32_t alpha_from_one_place(void)
{
	uint32_t id = site_alpha();
	return id;
}

static size_t stack_records_with_id(uint32_t id)
{
	size_t n = 0;
	for (size_t i = 0; i < fake_log_count(); i++) {
		const struct fake_rec *r = fake_log_get(i);
		n += r->type == VT_REC_STACK && ((const struct vt_stack_rec *)r->data)->stack_id == id;
	}
	return n;
}

static int setup(void **state)
{
	(void)state;
	vt_stack_set_depth(128);
	fake_log_set_enabled(1);
	return 0;
}

/* ---- tests -------------------------------------------------------------- */

static void frames_name_the_callers(void **state)
{
	(void)state;
	uint32_t a = site_alpha();
	uint32_t b = site_beta();
	assert_int_not_equal(a, 0);
	assert_int_not_equal(b, 0);
	assert_int_not_equal(a, b);
	const struct vt_stack_rec *ra = fake_log_stack(a), *rb = fake_log_stack(b);
	assert_non_null(ra);
	assert_non_null(rb);
	/* the hook (skip 1) is gone: frame 0 is the site, frame 1 this test */
	assert_string_equal(symbol_at(ra->frames[0]), "site_alpha");
	assert_string_equal(symbol_at(rb->frames[0]), "site_beta");
	assert_true(in_function(ra->frames[1], (const void *)frames_name_the_callers));
	assert_int_equal(ra->py_depth, 0);
	assert_true(ra->depth >= 3); /* site, test, cmocka, ..., main */
}

static void return_addresses_minus_one(void **state)
{
	(void)state;
	void *ra = NULL;
	uint32_t id = test_hook(&ra); /* frame 0 = the call in this function */
	const struct vt_stack_rec *r = fake_log_stack(id);
	assert_non_null(r);
	assert_int_equal(r->frames[0], (uint64_t)(uintptr_t)ra - 1);

	uint32_t keep = test_hook_keep(&ra); /* skip 0: the hook's frame stays */
	r = fake_log_stack(keep);
	assert_non_null(r);
	assert_string_equal(symbol_at(r->frames[0]), "test_hook_keep");
	assert_int_equal(r->frames[1], (uint64_t)(uintptr_t)ra - 1);
}

static void one_record_per_unique_stack(void **state)
{
	(void)state;
	uint32_t first = 0;
	for (int i = 0; i < 1000; i++) {
		uint32_t id = alpha_from_one_place(); /* one call site */
		if (i == 0)
			first = id;
		assert_int_equal(id, first);
	}
	assert_int_equal(stack_records_with_id(first), 1);
}

static void depth_limits_frames(void **state)
{
	(void)state;
	vt_stack_set_depth(24);
	const struct vt_stack_rec *r = fake_log_stack(site_recurse(60));
	assert_non_null(r);
	assert_int_equal(r->depth, 24);
	assert_string_equal(symbol_at(r->frames[0]), "site_deep");
	for (int i = 1; i < 24; i++)
		assert_string_equal(symbol_at(r->frames[i]), "site_recurse");

	vt_stack_set_depth(128);
	r = fake_log_stack(site_recurse(60));
	assert_non_null(r);
	assert_true(r->depth > 62);
	assert_int_equal(vt_stack_depth(), 128);
	vt_stack_set_depth(100000);
	assert_int_equal(vt_stack_depth(), VT_MAX_FRAMES);
	vt_stack_set_depth(128);
}

static void depth_zero_never_unwinds(void **state)
{
	(void)state;
	vt_stack_set_depth(0);
	unsigned long before = unwinder_calls;
	uint64_t mine = vt_stack_unwind_calls();
	size_t recs = fake_log_count();
	for (int i = 0; i < 1000; i++)
		assert_int_equal(site_beta(), 0);
	assert_int_equal(unwinder_calls, before);
	assert_int_equal(vt_stack_unwind_calls(), mine);
	assert_int_equal(fake_log_count(), recs);
	vt_stack_set_depth(128);
	assert_int_not_equal(site_beta(), 0);
	assert_int_equal(vt_stack_unwind_calls(), mine + 1);
#if !defined(__SANITIZE_THREAD__) /* TSan builds unwind with unw_step */
	assert_int_equal(unwinder_calls, before + 1);
#endif
}

static void unwritten_stack_is_not_remembered(void **state)
{
	(void)state;
	fake_log_set_enabled(0);
	assert_int_equal(site_recurse(3), 0); /* log off: no id */
	fake_log_set_enabled(1);
	uint32_t id = site_recurse(3);
	assert_int_not_equal(id, 0);
	assert_int_equal(stack_records_with_id(id), 1);
}

static void modules_precede_first_stack(void **state)
{
	(void)state;
	size_t first_stack = SIZE_MAX, first_module = SIZE_MAX;
	int main_has_build_id = 0;
	for (size_t i = 0; i < fake_log_count(); i++) {
		const struct fake_rec *r = fake_log_get(i);
		if (r->type == VT_REC_STACK && first_stack == SIZE_MAX)
			first_stack = i;
		if (r->type != VT_REC_MODULE)
			continue;
		if (first_module == SIZE_MAX)
			first_module = i;
		const struct vt_module_rec *m = r->data;
		if (m->path_len && memmem(m->path, m->path_len, "test_capture", 12))
			main_has_build_id = m->build_id_len >= 8 && m->lo < m->hi;
	}
	assert_true(first_module < first_stack);
	assert_true(main_has_build_id);
}

static const struct vt_module_rec *last_module_named(const char *name, uint8_t event)
{
	const struct vt_module_rec *found = NULL;
	for (size_t i = 0; i < fake_log_count(); i++) {
		const struct fake_rec *r = fake_log_get(i);
		const struct vt_module_rec *m = r->data;
		if (r->type == VT_REC_MODULE && m->event == event &&
		    memmem(m->path, m->path_len, name, strlen(name)))
			found = m;
	}
	return found;
}

uint32_t capture_from_lib(void);
uint32_t capture_from_lib(void)
{
	return test_hook(0);
}

static void dlopen_and_dlclose_are_recorded(void **state)
{
	(void)state;
	site_alpha(); /* initial module list */
	uint32_t gen0 = vt_modules_generation();
	void *h = dlopen(VT_DL_LIB_PATH, RTLD_NOW);
	assert_non_null(h);
	const struct vt_module_rec *load = last_module_named("libvt_stacks_dl.so", VT_MODULE_LOAD);
	assert_non_null(load);
	assert_true(load->generation > gen0);
	assert_true(load->build_id_len >= 8);

	uint32_t (*site)(uint32_t (*)(void)) = (uint32_t (*)(uint32_t (*)(void)))dlsym(h, "dl_lib_site");
	assert_non_null(site);
	const struct vt_stack_rec *r = fake_log_stack(site(capture_from_lib));
	assert_non_null(r);
	assert_string_equal(symbol_at(r->frames[0]), "capture_from_lib");
	assert_true(r->frames[1] >= load->lo && r->frames[1] < load->hi);

	uint64_t base = load->base;
	assert_int_equal(dlclose(h), 0);
	const struct vt_module_rec *gone = last_module_named("libvt_stacks_dl.so", VT_MODULE_UNLOAD);
	assert_non_null(gone);
	assert_int_equal(gone->base, base);
	assert_true(gone->generation > load->generation);

	/* a failed dlopen leaves the loader's message and records nothing new */
	size_t n = fake_log_count_type(VT_REC_MODULE);
	assert_null(dlopen("libvt_no_such_library.so", RTLD_NOW));
	const char *err = dlerror();
	assert_non_null(err);
	assert_non_null(strstr(err, "libvt_no_such_library.so"));
	assert_int_equal(fake_log_count_type(VT_REC_MODULE), n);
}

/* 16 threads at once: every record is intact (its frames are exactly the
 * ones the thread sees itself) and each thread writes a stack once. */
#define NTHREADS 16
struct thread_result {
	uint32_t ids[NTHREADS];
	int ok;
	pid_t tid;
};

/* The frames as libunwind's step-by-step walk sees them: an independent
 * path from the capture's unw_backtrace (and one TSan tolerates). */
static __attribute__((noinline)) int reference_walk(void **ips, int max)
{
	unw_context_t uc;
	unw_cursor_t cur;
	int n = 0;
	unw_getcontext(&uc);
	unw_init_local(&cur, &uc);
	while (n < max) {
		unw_word_t ip;
		if (unw_get_reg(&cur, UNW_REG_IP, &ip) < 0)
			break;
		ips[n++] = (void *)(uintptr_t)ip;
		if (unw_step(&cur) <= 0)
			break;
	}
	return n;
}

static __attribute__((noinline)) int check_thread_stack(uint32_t id)
{
	void *ips[256];
	void *me = __builtin_extract_return_addr(__builtin_return_address(0));
	int n = reference_walk(ips, 256);
	const struct vt_stack_rec *r = fake_log_stack(id);
	if (!r)
		return 0;
	int x = 0;
	while (x < n && ips[x] != me)
		x++;
	/* r->frames[0] is the call in thread_body; frames[1..] its callers,
	 * which must be this thread's own frames from `me` outwards */
	if (x == n || (int)r->depth != n - x)
		return 0;
	for (int k = 1; k < r->depth; k++)
		if (r->frames[k] != (uint64_t)(uintptr_t)ips[x + k] - 1)
			return 0;
	return 1;
}

static __attribute__((noinline)) uint32_t thread_body(struct thread_result *res)
{
	uint32_t id = 0;
	res->ok = 1;
	for (int i = 0; i < 200; i++) {
		uint32_t got = test_hook(0);
		if (i == 0)
			id = got;
		res->ok &= got == id && got != 0;
	}
	res->ok &= check_thread_stack(id);
	return id;
}

static void *thread_main(void *p)
{
	struct thread_result *res = p;
	res->tid = gettid();
	res->ids[0] = thread_body(res);
	return NULL;
}

static void sixteen_threads_intact(void **state)
{
	(void)state;
	pthread_t th[NTHREADS];
	struct thread_result res[NTHREADS];
	memset(res, 0, sizeof res);
	for (int i = 0; i < NTHREADS; i++)
		assert_int_equal(pthread_create(&th[i], NULL, thread_main, &res[i]), 0);
	for (int i = 0; i < NTHREADS; i++)
		pthread_join(th[i], NULL);
	for (int i = 0; i < NTHREADS; i++) {
		assert_true(res[i].ok);
		/* the same stack in 16 threads: 16 ids, one record each, written
		 * by the thread itself (per-thread tables; the reader folds) */
		assert_int_equal(stack_records_with_id(res[i].ids[0]), 1);
		for (size_t k = 0; k < fake_log_count(); k++) {
			const struct fake_rec *r = fake_log_get(k);
			if (r->type == VT_REC_STACK &&
			    ((const struct vt_stack_rec *)r->data)->stack_id == res[i].ids[0])
				assert_int_equal(r->tid, res[i].tid);
		}
		for (int j = 0; j < i; j++)
			assert_int_not_equal(res[i].ids[0], res[j].ids[0]);
	}
}

static void fork_child_writes_stacks_again(void **state)
{
	(void)state;
	uint32_t parent_id = 0;
	size_t mods = 0;
	pid_t pid = 1;
	for (int round = 0; round < 2; round++) { /* one call site, twice */
		uint32_t id = alpha_from_one_place();
		if (round == 0) {
			parent_id = id;
			pid = fork();
			mods = fake_log_count_type(VT_REC_MODULE);
		} else if (pid == 0) {
			/* the child's log holds none of the parent's records: the
			 * same stack is written again, and the modules with it */
			int ok = id != 0 && id != parent_id && stack_records_with_id(id) == 1 &&
				 stack_records_with_id(parent_id) == 1 &&
				 fake_log_count_type(VT_REC_MODULE) > mods;
			_exit(ok ? 0 : 1);
		} else {
			assert_int_equal(id, parent_id);
		}
	}
	int status = 0;
	waitpid(pid, &status, 0);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(frames_name_the_callers, setup),
		cmocka_unit_test_setup(modules_precede_first_stack, setup),
		cmocka_unit_test_setup(return_addresses_minus_one, setup),
		cmocka_unit_test_setup(one_record_per_unique_stack, setup),
		cmocka_unit_test_setup(depth_limits_frames, setup),
		cmocka_unit_test_setup(depth_zero_never_unwinds, setup),
		cmocka_unit_test_setup(unwritten_stack_is_not_remembered, setup),
		cmocka_unit_test_setup(dlopen_and_dlclose_are_recorded, setup),
		cmocka_unit_test_setup(sixteen_threads_intact, setup),
		cmocka_unit_test_setup(fork_child_writes_stacks_again, setup),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
