/* Shared helpers of the simulated driver's tests. */
#ifndef VTSIM_TEST_UTIL_H
#define VTSIM_TEST_UTIL_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <cuda.h>

#include "vtsim.h"

#define CU_OK(call) assert_int_equal((call), CUDA_SUCCESS)

/* Fresh driver, initialised, device `dev`'s primary context current. */
static inline CUcontext fresh_driver_on(int dev)
{
	CUcontext ctx;
	vtsim_reset();
	CU_OK(cuInit(0));
	CU_OK(cuDevicePrimaryCtxRetain(&ctx, dev));
	CU_OK(cuCtxSetCurrent(ctx));
	return ctx;
}

static inline int setup_fresh(void **state)
{
	*state = fresh_driver_on(0);
	return 0;
}

static inline int teardown_reset(void **state)
{
	(void)state;
	vtsim_reset();
	return 0;
}

#endif
