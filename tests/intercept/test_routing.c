/* The routing table against the simulated driver (run with the shim
 * preloaded): for EVERY exported variant of the driver,
 *  - dlsym(libcuda, symbol) yields our wrapper of exactly that symbol (or the
 *    driver's own function when we do not wrap it);
 *  - cuGetProcAddress / cuGetProcAddress_v2 through the shim, for its base
 *    name at every version and with every stream flag, yields the wrapper of
 *    the variant the real resolver picked: the same ABI, never a neighbour's.
 * The real resolver is the driver's own function (from the introspection
 * table, so not routed); "our wrapper of symbol S" is the shim's export S. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>
#include <cuda.h>
#include <cudaTypedefs.h>

#include "vtsim.h"

static const char *const wrapped[] = {
#define VT_API(id, sym, cls) #sym,
#include "vramtrace/api.def"
	"cuGetProcAddress", "cuGetProcAddress_v2",
};

static void *shim, *driver;

static int is_wrapped(const char *symbol)
{
	for (size_t i = 0; i < sizeof wrapped / sizeof wrapped[0]; i++)
		if (!strcmp(wrapped[i], symbol))
			return 1;
	return 0;
}

/* What a caller must get for the driver's function `fn`. */
static void *expected_for(void *fn)
{
	vtsim_variant v;
	for (int i = 0; vtsim_variant_at(i, &v) == 0; i++)
		if (v.fn == fn)
			return is_wrapped(v.symbol) ? dlsym(shim, v.symbol) : fn;
	return fn; /* not an exported variant: must pass untouched */
}

static int setup(void **state)
{
	(void)state;
	/* the preloaded shim, found through its one own export */
	Dl_info info;
	void *mark = dlsym(RTLD_DEFAULT, "vramtrace_mark");
	shim = mark && dladdr(mark, &info) ? dlopen(info.dli_fname, RTLD_LAZY | RTLD_NOLOAD) : NULL;
	driver = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);
	if (!shim || !driver)
		fprintf(stderr, "run with libvramtrace.so preloaded and the simulated libcuda.so.1 linked\n");
	return !shim || !driver;
}

static void test_every_symbol_by_name(void **state)
{
	(void)state;
	vtsim_variant v;
	int n = 0, ours = 0;
	for (int i = 0; vtsim_variant_at(i, &v) == 0; i++) {
		if (v.hidden) {
			assert_null(dlsym(driver, v.symbol));
			continue;
		}
		void *got = dlsym(driver, v.symbol);
		void *want = is_wrapped(v.symbol) ? dlsym(shim, v.symbol) : v.fn;
		if (got != want)
			fprintf(stderr, "dlsym(%s): got %p want %p\n", v.symbol, got, want);
		assert_ptr_equal(got, want);
		ours += got != v.fn;
		n++;
	}
	printf("by name: %d symbols, %d routed to wrappers\n", n, ours);
	assert_true(ours >= (int)(sizeof wrapped / sizeof wrapped[0]) - 16); /* old ABIs may be hidden */
}

static int add_unique(int *out, int n, int value)
{
	for (int i = 0; i < n; i++)
		if (out[i] == value)
			return n;
	out[n] = value;
	return n + 1;
}

/* Every version any row was introduced at, one below it, and 13000. */
static int versions(int *out, int max)
{
	int n = 0;
	vtsim_variant v;
	for (int i = 0; vtsim_variant_at(i, &v) == 0 && n + 2 < max; i++) {
		n = add_unique(out, n, v.version);
		n = add_unique(out, n, v.version - 10);
	}
	return add_unique(out, n, 13000);
}

/* Is row i the first row of its base name? */
static int first_of_base(int i, const char *base)
{
	vtsim_variant v;
	for (int j = 0; j < i && vtsim_variant_at(j, &v) == 0; j++)
		if (!strcmp(v.base, base))
			return 0;
	return 1;
}

static void test_every_base_version_flag(void **state)
{
	(void)state;
	vtsim_variant v, gp, gp2;
	assert_int_equal(vtsim_variant_at(vtsim_variant_index("cuGetProcAddress"), &gp), 0);
	assert_int_equal(vtsim_variant_at(vtsim_variant_index("cuGetProcAddress_v2"), &gp2), 0);
	PFN_cuGetProcAddress_v11030 real4 = (PFN_cuGetProcAddress_v11030)gp.fn;
	PFN_cuGetProcAddress_v12000 real5 = (PFN_cuGetProcAddress_v12000)gp2.fn;
	PFN_cuGetProcAddress_v11030 shim4 = (PFN_cuGetProcAddress_v11030)dlsym(shim, "cuGetProcAddress");
	PFN_cuGetProcAddress_v12000 shim5 = (PFN_cuGetProcAddress_v12000)dlsym(shim, "cuGetProcAddress_v2");
	assert_non_null(shim4);
	assert_non_null(shim5);
	static const cuuint64_t flags[] = {CU_GET_PROC_ADDRESS_DEFAULT, CU_GET_PROC_ADDRESS_LEGACY_STREAM,
					   CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM};
	int vers[512], nv = versions(vers, 512), checked = 0, routed = 0;
	for (int i = 0; vtsim_variant_at(i, &v) == 0; i++) {
		if (!first_of_base(i, v.base))
			continue;
		for (int k = 0; k < nv; k++) {
			for (int f = 0; f < 3; f++) {
				void *want = NULL, *got = NULL, *want4 = NULL, *got4 = NULL;
				CUdriverProcAddressQueryResult st_want, st_got;
				CUresult rw = real5(v.base, &want, vers[k], flags[f], &st_want);
				CUresult rg = shim5(v.base, &got, vers[k], flags[f], &st_got);
				assert_int_equal(rw, rg);
				assert_int_equal(st_want, st_got);
				if (rw == CUDA_SUCCESS && expected_for(want) != got)
					fprintf(stderr, "%s v%d flags %llu: got %p want %p\n", v.base, vers[k],
						(unsigned long long)flags[f], got, expected_for(want));
				if (rw == CUDA_SUCCESS)
					assert_ptr_equal(got, expected_for(want));
				assert_int_equal(real4(v.base, &want4, vers[k], flags[f]),
						 shim4(v.base, &got4, vers[k], flags[f]));
				if (want4)
					assert_ptr_equal(got4, expected_for(want4));
				checked++;
				routed += rw == CUDA_SUCCESS && got != want;
			}
		}
	}
	printf("by base/version/flag: %d requests, %d routed to wrappers\n", checked, routed);
	assert_true(routed > 0);
}

/* cuGetProcAddress asked for itself: our wrapper of the ABI of that version. */
static void test_get_proc_address_itself(void **state)
{
	(void)state;
	PFN_cuGetProcAddress_v12000 shim5 = (PFN_cuGetProcAddress_v12000)dlsym(shim, "cuGetProcAddress_v2");
	void *fn = NULL;
	assert_int_equal(shim5("cuGetProcAddress", &fn, 12000, 0, NULL), CUDA_SUCCESS);
	assert_ptr_equal(fn, dlsym(shim, "cuGetProcAddress_v2"));
	assert_int_equal(shim5("cuGetProcAddress", &fn, 11030, 0, NULL), CUDA_SUCCESS);
	assert_ptr_equal(fn, dlsym(shim, "cuGetProcAddress"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_every_symbol_by_name),
		cmocka_unit_test(test_every_base_version_flag),
		cmocka_unit_test(test_get_proc_address_itself),
	};
	return cmocka_run_group_tests(tests, setup, NULL);
}
