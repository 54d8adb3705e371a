/* The (name, version, flags) fallback of the cuGetProcAddress wrappers,
 * unit-tested against the simulated driver's own resolver: for every wrapped
 * base name, at every version any variant was introduced at (and just
 * before), with every stream flag, the shim's ladder picks exactly the
 * variant the driver picks. Links the shim's objects directly (no preload):
 * vt_route_by_request, vt_routes and vt_route_wrappers are internal. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "hooks.h" /* before cuda.h, whose renaming macros it must not see */
#include "hook_wrappers.h"
#include "routing.h"
#include "shim_state.h"

#include <cuda.h>
#include <cudaTypedefs.h>

#include "vtsim.h"

static const char *symbol_of(void *fn)
{
	vtsim_variant v;
	for (int i = 0; vtsim_variant_at(i, &v) == 0; i++)
		if (v.fn == fn)
			return v.symbol;
	return NULL;
}

static void test_ladder_matches_driver(void **state)
{
	(void)state;
	vtsim_variant gp, v;
	assert_int_equal(vtsim_variant_at(vtsim_variant_index("cuGetProcAddress_v2"), &gp), 0);
	PFN_cuGetProcAddress_v12000 resolve = (PFN_cuGetProcAddress_v12000)gp.fn;
	static const cuuint64_t flags[] = {CU_GET_PROC_ADDRESS_DEFAULT, CU_GET_PROC_ADDRESS_LEGACY_STREAM,
					   CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM};
	int checked = 0;
	for (int r = 0; r < VT_ROUTE_COUNT; r++) {
		for (int i = 0; vtsim_variant_at(i, &v) == 0; i++) {
			int versions[] = {v.version, v.version - 10, 13000};
			for (int k = 0; k < 3; k++) {
				for (int f = 0; f < 3; f++) {
					void *fn = NULL;
					if (strcmp(v.base, vt_routes[r].base))
						continue;
					CUresult res = resolve(v.base, &fn, versions[k], flags[f], NULL);
					int mine = vt_route_by_request(v.base, versions[k], flags[f]);
					if (res != CUDA_SUCCESS) {
						assert_int_equal(mine, -1);
						continue;
					}
					const char *want = symbol_of(fn);
					assert_non_null(want);
					if (mine < 0 || strcmp(vt_routes[mine].name, want))
						fprintf(stderr, "%s v%d f%llu: driver %s, ladder %s\n", v.base,
							versions[k], (unsigned long long)flags[f], want,
							mine < 0 ? "none" : vt_routes[mine].name);
					assert_true(mine >= 0);
					assert_string_equal(vt_routes[mine].name, want);
					checked++;
				}
			}
		}
	}
	printf("ladder: %d requests agree with the driver\n", checked);
	assert_true(checked > VT_ROUTE_COUNT);
}

/* The same pointer-first routing the wrappers use falls back to the ladder
 * only for a pointer that is no export: an unknown pointer routes nowhere. */
static void test_pointer_routing(void **state)
{
	(void)state;
	int i = vt_route_by_symbol("cuMemAlloc_v2");
	assert_true(i >= 0);
	assert_int_equal(vt_route_by_pointer(vt_hook_real(i), vt_route_wrappers, NULL, 0, 0), i);
	assert_int_equal(vt_route_by_pointer(vt_route_wrappers[i], vt_route_wrappers, NULL, 0, 0), i);
	static int not_a_function;
	assert_int_equal(vt_route_by_pointer(&not_a_function, vt_route_wrappers, NULL, 0, 0), -1);
	assert_int_equal(vt_route_by_symbol("cuInit"), -1);
	assert_int_equal(vt_route_by_request("cuNoSuchFunction", 13000, 0), -1);
}

/* Who may record: the job always; nobody during the shim's own work; during
 * a real driver call nobody, whatever called: the driver calling its own
 * exports, a layer between job and driver, or an entry point whose nested
 * call returns straight into the wrapper are all part of the outer call. */
static void test_guard_levels(void **state)
{
	(void)state;
	void *driver_fn = vt_hook_real(vt_route_by_symbol("cuMemAlloc_v2"));
	const void *job = (const void *)test_guard_levels;
	assert_true(vt_is_driver_address(driver_fn));
	assert_false(vt_is_driver_address(job));
	assert_true(vt_hook_may_record(job));
	vt_guard = VT_GUARD_DRIVER;
	assert_false(vt_hook_may_record(job));
	assert_false(vt_hook_may_record(driver_fn));
	assert_false(vt_hook_may_record(vt_route_wrappers[0]));
	vt_guard = VT_GUARD_SHIM;
	assert_false(vt_hook_may_record(job));
	vt_guard = VT_GUARD_NONE;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ladder_matches_driver),
		cmocka_unit_test(test_pointer_routing),
		cmocka_unit_test(test_guard_levels),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
