/* Simulated driver: cuGetProcAddress and dlsym over EVERY exported variant,
 * at several versions and both stream flags, and the missing-entry emulation.
 * ctest runs this program three times: plain, with VT_SIM_MISSING, and with
 * VT_SIM_DRIVER_VERSION=12080; the expectations follow the environment. */
#include "test_util.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void *lib;

static int open_lib(void **state)
{
	(void)state;
	lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
	return lib ? 0 : -1;
}

static int close_lib(void **state)
{
	(void)state;
	dlclose(lib);
	return 0;
}

static int env_lists(const char *var, const char *word)
{
	const char *v = getenv(var);
	if (!v)
		return 0;
	size_t n = strlen(word);
	for (const char *p = strstr(v, word); p; p = strstr(p + 1, word))
		if ((p == v || p[-1] == ',') && (p[n] == 0 || p[n] == ','))
			return 1;
	return 0;
}

static int driver_version(void)
{
	const char *v = getenv("VT_SIM_DRIVER_VERSION");
	return v && *v ? atoi(v) : 13000;
}

static int expect_hidden(const vtsim_variant *v)
{
	char plain[128];
	snprintf(plain, sizeof plain, "%s", v->symbol);
	char *pt = strstr(plain, "_pt");
	if (pt)
		*pt = 0; /* naming "X_v2" hides "X_v2_ptsz" too */
	return v->version > driver_version() || env_lists("VT_SIM_MISSING", v->base) ||
	       env_lists("VT_SIM_MISSING", v->symbol) || env_lists("VT_SIM_MISSING", plain);
}

static void *resolve(const char *base, int version, cuuint64_t flags, CUresult *r,
		     CUdriverProcAddressQueryResult *status)
{
	void *fn = (void *)1;
	*r = cuGetProcAddress(base, &fn, version, flags, status);
	return fn;
}

/* The newest visible row of `base` at `version` of the wanted stream kind,
 * computed from the introspection table as the oracle. */
static const void *newest(const char *base, int version, int per_thread, int *row_version)
{
	const void *best = NULL;
	*row_version = -1;
	for (int i = 0; i < vtsim_variant_count(); i++) {
		vtsim_variant v;
		assert_int_equal(vtsim_variant_at(i, &v), 0);
		if (strcmp(v.base, base) || v.hidden || v.version > version || v.per_thread != per_thread)
			continue;
		if (v.version > *row_version) {
			*row_version = v.version;
			best = v.fn;
		}
	}
	return best;
}

static void test_table_matches_dlsym(void **state)
{
	(void)state;
	int n = vtsim_variant_count();
	assert_true(n > 100);
	for (int i = 0; i < n; i++) {
		vtsim_variant v;
		assert_int_equal(vtsim_variant_at(i, &v), 0);
		assert_int_equal(vtsim_variant_index(v.symbol), i);
		assert_non_null(v.fn);
		assert_int_equal(v.hidden, expect_hidden(&v));
		void *sym = dlsym(lib, v.symbol);
		if (v.hidden)
			assert_null(sym);
		else
			assert_ptr_equal(sym, v.fn);
		assert_true(strncmp(v.symbol, v.base, strlen(v.base)) == 0);
		assert_int_equal(v.per_thread, strstr(v.symbol, "_pt") != NULL);
	}
	assert_int_equal(vtsim_variant_at(n, &(vtsim_variant){0}), -1);
	assert_int_equal(vtsim_variant_index("cuNoSuchThing"), -1);
}

/* Every entry point the shim wraps (include/vramtrace/api.def) is a row of
 * the driver's table, found by dlsym unless hidden on purpose. */
static void test_every_api_def_symbol_is_exported(void **state)
{
	(void)state;
	static const char *const wrapped[] = {
#define VT_API(id, symbol, class) #symbol,
#include "vramtrace/api.def"
	};
	for (size_t i = 0; i < sizeof wrapped / sizeof wrapped[0]; i++) {
		vtsim_variant v;
		int row = vtsim_variant_index(wrapped[i]);
		if (row < 0)
			fail_msg("api.def symbol %s is not exported by the simulated driver", wrapped[i]);
		vtsim_variant_at(row, &v);
		if (v.hidden)
			assert_null(dlsym(lib, wrapped[i]));
		else
			assert_ptr_equal(dlsym(lib, wrapped[i]), v.fn);
	}
}

/* Every row, resolved at its own version with its own flag, at the version
 * before, and far in the future, with both flags. */
static void test_every_row_resolves(void **state)
{
	(void)state;
	for (int i = 0; i < vtsim_variant_count(); i++) {
		vtsim_variant v;
		CUresult r;
		CUdriverProcAddressQueryResult st;
		int rv;
		vtsim_variant_at(i, &v);
		cuuint64_t own = v.per_thread ? CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM
					      : CU_GET_PROC_ADDRESS_LEGACY_STREAM;
		void *fn = resolve(v.base, v.version, own, &r, &st);
		if (v.hidden) {
			assert_ptr_not_equal(fn, v.fn);
		} else {
			assert_int_equal(r, CUDA_SUCCESS);
			assert_int_equal(st, CU_GET_PROC_ADDRESS_SUCCESS);
			assert_ptr_equal(fn, v.fn);
		}
		fn = resolve(v.base, v.version - 1, own, &r, &st);
		assert_ptr_not_equal(fn, v.fn);
		if (r != CUDA_SUCCESS) {
			assert_int_equal(r, CUDA_ERROR_NOT_FOUND);
			assert_null(fn);
			assert_true(st == CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT ||
				    st == CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND);
		}
		for (int future = 0; future < 2; future++) {
			int version = future ? 99999 : 13000;
			const void *want_legacy = newest(v.base, version, 0, &rv);
			int legacy_v = rv;
			const void *want_pt = newest(v.base, version, 1, &rv);
			fn = resolve(v.base, version, CU_GET_PROC_ADDRESS_LEGACY_STREAM, &r, &st);
			assert_ptr_equal(fn, want_legacy);
			fn = resolve(v.base, version, CU_GET_PROC_ADDRESS_DEFAULT, &r, &st);
			assert_ptr_equal(fn, want_legacy);
			fn = resolve(v.base, version, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, &r, &st);
			assert_ptr_equal(fn, want_pt && rv >= legacy_v ? want_pt : want_legacy);
		}
	}
}


static void *expect(const char *symbol)
{
	vtsim_variant v;
	assert_int_equal(vtsim_variant_at(vtsim_variant_index(symbol), &v), 0);
	return v.hidden ? NULL : v.fn;
}

/* The resolutions the real driver is known to give (docs/design/interception.md). */
static void test_known_resolutions(void **state)
{
	(void)state;
	CUresult r;
	CUdriverProcAddressQueryResult st;
	const cuuint64_t PT = CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, LEG = CU_GET_PROC_ADDRESS_LEGACY_STREAM;
	assert_ptr_equal(resolve("cuMemAlloc", 3020, 0, &r, &st), expect("cuMemAlloc_v2"));
	assert_ptr_equal(resolve("cuMemAlloc", 2000, 0, &r, &st), expect("cuMemAlloc"));
	assert_ptr_equal(resolve("cuMemAlloc", 12000, PT, &r, &st), expect("cuMemAlloc_v2"));
	assert_ptr_equal(resolve("cuMemcpyHtoD", 7000, PT, &r, &st), expect("cuMemcpyHtoD_v2_ptds"));
	assert_ptr_equal(resolve("cuMemcpyHtoD", 7000, LEG, &r, &st), expect("cuMemcpyHtoD_v2"));
	assert_ptr_equal(resolve("cuMemcpyHtoD", 3020, PT, &r, &st), expect("cuMemcpyHtoD_v2"));
	assert_ptr_equal(resolve("cuMemcpyHtoDAsync", 7000, PT, &r, &st), expect("cuMemcpyHtoDAsync_v2_ptsz"));
	assert_ptr_equal(resolve("cuMemcpyBatchAsync", 12080, LEG, &r, &st), expect("cuMemcpyBatchAsync"));
	assert_ptr_equal(resolve("cuMemcpyBatchAsync", 12080, PT, &r, &st), expect("cuMemcpyBatchAsync_ptsz"));
	assert_ptr_equal(resolve("cuGetProcAddress", 11030, 0, &r, &st), expect("cuGetProcAddress"));
	assert_ptr_equal(resolve("cuGetProcAddress", 12000, 0, &r, &st), expect("cuGetProcAddress_v2"));
	if (driver_version() >= 13000 && !env_lists("VT_SIM_MISSING", "cuMemcpyBatchAsync_v2")) {
		assert_ptr_equal(resolve("cuMemcpyBatchAsync", 13000, LEG, &r, &st), expect("cuMemcpyBatchAsync_v2"));
		assert_ptr_equal(resolve("cuMemcpyBatchAsync", 13000, PT, &r, &st),
				 expect("cuMemcpyBatchAsync_v2_ptsz"));
	} else { /* an older driver: the 12.8 ABI is the newest it has */
		assert_ptr_equal(resolve("cuMemcpyBatchAsync", 13000, LEG, &r, &st), expect("cuMemcpyBatchAsync"));
		assert_ptr_equal(resolve("cuMemcpyBatchAsync", 13000, PT, &r, &st), expect("cuMemcpyBatchAsync_ptsz"));
		assert_null(dlsym(lib, "cuMemcpyBatchAsync_v2"));
		assert_null(dlsym(lib, "cuMemcpyBatchAsync_v2_ptsz"));
	}
	if (env_lists("VT_SIM_MISSING", "cuMemAllocAsync")) {
		assert_null(resolve("cuMemAllocAsync", 13000, PT, &r, &st));
		assert_int_equal(r, CUDA_ERROR_NOT_FOUND);
		assert_int_equal(st, CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND);
		assert_null(dlsym(lib, "cuMemAllocAsync"));
		assert_null(dlsym(lib, "cuMemAllocAsync_ptsz"));
	} else {
		assert_null(resolve("cuMemAllocAsync", 11010, 0, &r, &st));
		assert_int_equal(r, CUDA_ERROR_NOT_FOUND);
		assert_int_equal(st, CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT);
		assert_non_null(dlsym(lib, "cuMemAllocAsync_ptsz"));
	}
	int version = 0;
	CU_OK(cuDriverGetVersion(&version));
	assert_int_equal(version, driver_version());
}

static void test_lookup_errors(void **state)
{
	(void)state;
	CUresult r;
	CUdriverProcAddressQueryResult st;
	void *fn = (void *)1;
	assert_null(resolve("cuNoSuchFunction", 13000, 0, &r, &st));
	assert_int_equal(r, CUDA_ERROR_NOT_FOUND);
	assert_int_equal(st, CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND);
	assert_null(resolve("cuMemAlloc_v2", 13000, 0, &r, &st)); /* base names only */
	assert_int_equal(r, CUDA_ERROR_NOT_FOUND);
	assert_null(resolve("cuMemAlloc", 1000, 0, &r, &st));
	assert_int_equal(st, CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT);
	assert_int_equal(cuGetProcAddress(NULL, &fn, 13000, 0, &st), CUDA_ERROR_INVALID_VALUE);
	assert_int_equal(cuGetProcAddress("cuInit", NULL, 13000, 0, &st), CUDA_ERROR_INVALID_VALUE);
	assert_int_equal(cuGetProcAddress("cuInit", &fn, 13000, 4, &st), CUDA_ERROR_INVALID_VALUE);
	/* the 4-argument ABI, as old runtimes call it */
	typedef CUresult (*gpa4)(const char *, void **, int, cuuint64_t);
	gpa4 old = (gpa4)dlsym(lib, "cuGetProcAddress");
	assert_non_null(old);
	CU_OK(old("cuInit", &fn, 2000, 0));
	assert_ptr_equal(fn, expect("cuInit"));
	assert_int_equal(old("cuNoSuchFunction", &fn, 13000, 0), CUDA_ERROR_NOT_FOUND);
}

/* Hiding follows the environment at every lookup, in process. */
static void test_missing_follows_environment(void **state)
{
	(void)state;
	CUresult r;
	CUdriverProcAddressQueryResult st;
	char *saved = getenv("VT_SIM_MISSING") ? strdup(getenv("VT_SIM_MISSING")) : NULL;
	assert_non_null(dlsym(lib, "cuMemFree_v2"));
	setenv("VT_SIM_MISSING", "cuMemFree,cuMemcpyHtoD_v2_ptds", 1);
	assert_null(dlsym(lib, "cuMemFree_v2"));
	assert_null(dlsym(lib, "cuMemFree"));
	assert_null(resolve("cuMemFree", 13000, 0, &r, &st));
	assert_int_equal(st, CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND);
	assert_null(dlsym(lib, "cuMemcpyHtoD_v2_ptds"));
	/* with its per-thread variant hidden, the flag falls back to legacy */
	assert_ptr_equal(resolve("cuMemcpyHtoD", 13000, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, &r, &st),
			 dlsym(lib, "cuMemcpyHtoD_v2"));
	vtsim_variant v;
	vtsim_variant_at(vtsim_variant_index("cuMemFree_v2"), &v);
	assert_int_equal(v.hidden, 1);
	if (saved) {
		setenv("VT_SIM_MISSING", saved, 1);
		free(saved);
	} else {
		unsetenv("VT_SIM_MISSING");
	}
	assert_non_null(dlsym(lib, "cuMemFree_v2"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_table_matches_dlsym),
		cmocka_unit_test(test_every_api_def_symbol_is_exported),
		cmocka_unit_test(test_every_row_resolves),
		cmocka_unit_test(test_known_resolutions),
		cmocka_unit_test(test_lookup_errors),
		cmocka_unit_test(test_missing_follows_environment),
	};
	return cmocka_run_group_tests(tests, open_lib, close_lib);
}
