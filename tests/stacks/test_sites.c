/* Sites: the innermost frame outside driver, runtime, shim and allocator
 * internals; inline entries count; rules from the environment and a file;
 * bad rules refused; unnamed frames still give a site. Names come from a
 * hand-written sidecar, so no binary is needed. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "sidecar_read.h"
#include "sites.h"
#include "stack_store.h"
#include "symbolize.h"
#include "vramtrace/format.h"

static const char sidecar_text[] =
	"vtsym\t1\n"
	"M\t1\t0101010101010101\t/usr/lib/libcuda.so.1\n"
	"A\t1\t100\t1\n"
	"F\tcuMemAlloc_v2\t\t0\t0\n"
	"M\t2\t0202020202020202\t/opt/tf/libtensorflow_framework.so.2\n"
	"A\t2\t200\t1\n"
	"F\ttensorflow::BFCAllocator::AllocateRaw(unsigned long, unsigned long)\tbfc_allocator.cc\t311\t0\n"
	"A\t2\t300\t2\n"
	"F\ttensorflow::GPUBFCAllocator::Helper()\tgpu_bfc_allocator.h\t20\t1\n"
	"F\ttensorflow::EagerConst::Compute()\t/src/tensorflow/core/kernels/const_op.cc\t88\t0\n"
	"M\t3\t0303030303030303\t/home/me/train\n"
	"A\t3\t400\t1\n"
	"F\tload_dataset\t/home/me/train.c\t42\t0\n"
	"A\t3\t410\t1\n"
	"F\tload_dataset\t/home/me/train.c\t43\t0\n"
	"A\t3\t500\t1\n"
	"F\tload_model\t/home/me/train.c\t60\t0\n"
	"E\t6\n";

static char dir[] = "/tmp/vt_sites_XXXXXX";
static uint64_t rec_buf[512];

static void add_module(struct vt_stack_store *st, uint8_t bid, uint64_t base, const char *path)
{
	char err[128];
	memset(rec_buf, 0, sizeof rec_buf);
	struct vt_module_rec *m = (struct vt_module_rec *)rec_buf;
	m->base = base;
	m->lo = base;
	m->hi = base + 0x100000;
	m->build_id_len = 8;
	memset(m->build_id, bid, 8);
	m->path_len = (uint16_t)strlen(path);
	memcpy(m->path, path, m->path_len);
	struct vt_record_view r = {VT_REC_MODULE, VT_ALIGN8((uint32_t)(sizeof *m + m->path_len)),
				   rec_buf, 1, 0};
	assert_int_equal(vt_stack_store_add(st, 0, &r, err, sizeof err), 0);
}

static const struct vt_stack *add_stack(struct vt_stack_store *st, uint32_t id,
					const uint64_t *frames, unsigned depth)
{
	char err[128];
	memset(rec_buf, 0, sizeof rec_buf);
	struct vt_stack_rec *s = (struct vt_stack_rec *)rec_buf;
	s->stack_id = id;
	s->depth = (uint16_t)depth;
	memcpy(s->frames, frames, depth * 8);
	struct vt_record_view r = {VT_REC_STACK, (uint32_t)(sizeof *s + depth * 8), rec_buf, 1, 0};
	assert_int_equal(vt_stack_store_add(st, 0, &r, err, sizeof err), 0);
	return vt_stack_store_stack(st, vt_stack_store_canonical(st, 0, id));
}

#define CUDA 0x7f0000000000ull
#define TF 0x7f1000000000ull
#define JOB 0x555500000000ull

static struct vt_stack_store *st;
static struct vt_symbolizer *sym;

static int setup(void **state)
{
	(void)state;
	assert_non_null(mkdtemp(dir));
	char path[256];
	snprintf(path, sizeof path, "%s/%s", dir, VT_SIDECAR_NAME);
	FILE *f = fopen(path, "w");
	fputs(sidecar_text, f);
	fclose(f);
	st = vt_stack_store_new();
	add_module(st, 1, CUDA, "/usr/lib/libcuda.so.1");
	add_module(st, 2, TF, "/opt/tf/libtensorflow_framework.so.2");
	add_module(st, 3, JOB, "/home/me/train");
	sym = vt_symbolizer_open(dir, VT_SYM_NO_FILES);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	vt_symbolizer_close(sym);
	vt_stack_store_free(st);
	char path[256];
	snprintf(path, sizeof path, "%s/%s", dir, VT_SIDECAR_NAME);
	unlink(path);
	rmdir(dir);
	return 0;
}

static void skips_driver_and_allocator(void **state)
{
	(void)state;
	char err[128], site[256];
	unsetenv("VRAMTRACE_SITE_SKIP");
	unsetenv("VRAMTRACE_SITE_SKIP_FILE");
	struct vt_site_rules *r = vt_site_rules_from_env(err, sizeof err);
	assert_non_null(r);
	/* driver -> BFC allocator -> user code */
	uint64_t f1[3] = {CUDA + 0x100, TF + 0x200, JOB + 0x400};
	const struct vt_stack *s = add_stack(st, 1, f1, 3);
	assert_int_equal(vt_site_of_stack(r, sym, st, s, site, sizeof site), 2);
	assert_string_equal(site, "load_dataset (train.c:42)");
	/* driver -> (inlined allocator helper in) EagerConst: the inline entry
	 * that is not an allocator is the site */
	uint64_t f2[3] = {CUDA + 0x100, TF + 0x300, JOB + 0x400};
	s = add_stack(st, 2, f2, 3);
	assert_int_equal(vt_site_of_stack(r, sym, st, s, site, sizeof site), 1);
	assert_string_equal(site, "tensorflow::EagerConst::Compute() (const_op.cc:88)");
	/* nothing but skipped frames: the innermost outside skipped modules */
	uint64_t f3[2] = {CUDA + 0x100, TF + 0x200};
	s = add_stack(st, 3, f3, 2);
	assert_int_equal(vt_site_of_stack(r, sym, st, s, site, sizeof site), 1);
	assert_non_null(strstr(site, "BFCAllocator::AllocateRaw"));
	/* an unnamed frame of the job is still a site, and says where */
	uint64_t f4[2] = {CUDA + 0x100, JOB + 0x999};
	s = add_stack(st, 4, f4, 2);
	assert_int_equal(vt_site_of_stack(r, sym, st, s, site, sizeof site), 1);
	assert_string_equal(site, "0x555500000999 (train+0x999)");
	assert_int_equal(vt_site_of_stack(r, sym, st, NULL, site, sizeof site), -1);
	vt_site_rules_free(r);
}

static void rules_from_environment_and_file(void **state)
{
	(void)state;
	char err[256], site[256];
	uint64_t f1[3] = {CUDA + 0x100, TF + 0x200, JOB + 0x400};
	const struct vt_stack *s = add_stack(st, 10, f1, 3);

	setenv("VRAMTRACE_SITE_SKIP", "=module:libnothing*", 1); /* defaults dropped */
	struct vt_site_rules *r = vt_site_rules_from_env(err, sizeof err);
	assert_non_null(r);
	assert_int_equal(vt_site_rules_count(r), 1);
	vt_site_of_stack(r, sym, st, s, site, sizeof site);
	assert_string_equal(site, "cuMemAlloc_v2 (libcuda.so.1)");
	vt_site_rules_free(r);

	setenv("VRAMTRACE_SITE_SKIP", " function:load_*, file:nothing.c", 1); /* added */
	r = vt_site_rules_from_env(err, sizeof err);
	assert_non_null(r);
	/* every frame skipped now: innermost outside skipped modules */
	assert_int_equal(vt_site_of_stack(r, sym, st, s, site, sizeof site), 1);
	vt_site_rules_free(r);

	char path[256];
	snprintf(path, sizeof path, "%s/rules", dir);
	FILE *f = fopen(path, "w");
	fputs("# my allocator\nfile:train.c   # by file\n\n", f);
	fclose(f);
	setenv("VRAMTRACE_SITE_SKIP", "=module:libcuda*", 1);
	setenv("VRAMTRACE_SITE_SKIP_FILE", path, 1);
	r = vt_site_rules_from_env(err, sizeof err);
	assert_non_null(r);
	assert_int_equal(vt_site_rules_count(r), 2);
	assert_int_equal(vt_site_of_stack(r, sym, st, s, site, sizeof site), 1);
	vt_site_rules_free(r);

	f = fopen(path, "w");
	fputs("frame:oops\n", f);
	fclose(f);
	assert_null(vt_site_rules_from_env(err, sizeof err));
	assert_non_null(strstr(err, "rules:1"));
	unlink(path);
	unsetenv("VRAMTRACE_SITE_SKIP_FILE");

	setenv("VRAMTRACE_SITE_SKIP", "module:", 1);
	assert_null(vt_site_rules_from_env(err, sizeof err));
	assert_non_null(strstr(err, "empty"));
	unsetenv("VRAMTRACE_SITE_SKIP");
	setenv("VRAMTRACE_SITE_SKIP_FILE", "/nonexistent/rules", 1);
	assert_null(vt_site_rules_from_env(err, sizeof err));
	unsetenv("VRAMTRACE_SITE_SKIP_FILE");
}

/* One call path: the same functions frame for frame, whatever line each
 * calls from; an unnamed frame matches only its own address. */
static void same_functions_from_other_lines(void **state)
{
	(void)state;
	struct vt_sites sites = {.store = st, .sym = sym};
	uint64_t x[2] = {CUDA + 0x100, JOB + 0x400}, y[2] = {CUDA + 0x100, JOB + 0x410};
	uint64_t model[2] = {CUDA + 0x100, JOB + 0x500}, deeper[3] = {CUDA + 0x100, TF + 0x200,
	                                                              JOB + 0x410};
	uint64_t unnamed[2] = {CUDA + 0x100, JOB + 0x998}, unnamed2[2] = {CUDA + 0x100,
	                                                                  JOB + 0x999};
	uint32_t ids[6];
	const uint64_t *frames[6] = {x, y, model, deeper, unnamed, unnamed2};
	const unsigned depth[6] = {2, 2, 2, 3, 2, 2};
	for (uint32_t i = 0; i < 6; i++)
		ids[i] = add_stack(st, 20 + i, frames[i], depth[i])->id;
	assert_true(vt_sites_same_functions(&sites, ids[0], ids[0]));
	assert_true(vt_sites_same_functions(&sites, ids[0], ids[1]));
	assert_false(vt_sites_same_functions(&sites, ids[0], ids[2]));
	assert_false(vt_sites_same_functions(&sites, ids[1], ids[3]));
	assert_false(vt_sites_same_functions(&sites, ids[4], ids[5]));
}

static void default_rules_are_well_formed(void **state)
{
	(void)state;
	struct vt_site_rules *r = vt_site_rules_new();
	assert_int_equal(vt_site_rules_add_defaults(r), 0);
	assert_true(vt_site_rules_count(r) > 10);
	struct vt_symbol cu = {"cuMemAlloc_v2", NULL, 0, 0};
	struct vt_symbol user = {"cuddle_dataset", NULL, 0, 0};
	struct vt_symbol torch = {"c10::cuda::CUDACachingAllocator::Native::malloc(void**, int, unsigned long, CUstream_st*)", NULL, 0, 0};
	assert_true(vt_site_rules_skip(r, "/x/job", &cu));
	assert_false(vt_site_rules_skip(r, "/x/job", &user));
	assert_true(vt_site_rules_skip(r, "/x/libc10_cuda.so", &torch));
	assert_true(vt_site_rules_skip(r, "/usr/lib/x86_64-linux-gnu/libcudart.so.13", NULL));
	assert_true(vt_site_rules_skip(r, "/build/lib/libvramtrace.so", NULL));
	assert_false(vt_site_rules_skip(r, "/x/libmine.so", NULL));
	vt_site_rules_free(r);
}

/* A gradient made on PyTorch's autograd thread (no Python frame), as an H200
 * trace of PyTorch 2.11 has it: the site is the backward op, past the
 * tensor factories and the dispatcher. */
static void pytorch_factories_and_dispatch_are_skipped(void **state)
{
	(void)state;
	struct vt_site_rules *r = vt_site_rules_new();
	assert_int_equal(vt_site_rules_add_defaults(r), 0);
	static const char *const plumbing[] = {
	    "at::detail::empty_generic(c10::ArrayRef<long>, c10::Allocator*, c10::DispatchKeySet, "
	    "c10::ScalarType, std::optional<c10::MemoryFormat>)",
	    "at::detail::empty_cuda(c10::ArrayRef<long>, c10::TensorOptions const&)",
	    "at::(anonymous namespace)::create_out(c10::ArrayRef<long>, c10::ArrayRef<long>, "
	    "c10::TensorOptions const&)",
	    "at::meta::structured_mm::meta(at::Tensor const&, at::Tensor const&)",
	    "at::_ops::mm::redispatch(c10::DispatchKeySet, at::Tensor const&, at::Tensor const&)",
	    "torch::autograd::VariableType::(anonymous namespace)::mm(c10::DispatchKeySet, "
	    "at::Tensor const&, at::Tensor const&)",
	    "at::_ops::mm::call(at::Tensor const&, at::Tensor const&)",
	};
	for (size_t i = 0; i < sizeof plumbing / sizeof plumbing[0]; i++) {
		struct vt_symbol s = {plumbing[i], NULL, 0, 0};
		assert_true(vt_site_rules_skip(r, "/x/libtorch_cpu.so", &s));
	}
	struct vt_symbol op = {"torch::autograd::generated::details::mm_mat2_backward(at::Tensor "
	                       "const&, at::Tensor const&, c10::ArrayRef<c10::SymInt>)",
	                       NULL, 0, 0};
	assert_false(vt_site_rules_skip(r, "/x/libtorch_cpu.so", &op));
	/* cuBLAS's own workspace: the site is the caller of cublasCreate_v2 */
	assert_true(vt_site_rules_skip(r, "/v/nvidia/cublas/lib/libcublas.so.13", NULL));
	assert_true(vt_site_rules_skip(r, "/v/nvidia/cublas/lib/libcublasLt.so.13", NULL));
	assert_true(vt_site_rules_skip(r, "/v/nvidia/cudnn/lib/libcudnn_ops.so.9", NULL));
	vt_site_rules_free(r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(skips_driver_and_allocator),
	    cmocka_unit_test(rules_from_environment_and_file),
	    cmocka_unit_test(same_functions_from_other_lines),
	    cmocka_unit_test(default_rules_are_well_formed),
	    cmocka_unit_test(pytorch_factories_and_dispatch_are_skipped),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
