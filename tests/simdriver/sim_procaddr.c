/* cuGetProcAddress / cuGetProcAddress_v2 over the resolution table, the
 * error strings, and cuGetExportTable (NVIDIA's private tables: none here). */
#include "sim_internal.h"

#include <stdio.h>
#include <stdlib.h>

VTSIM_HIDDEN void *sim_row_pick(const char *base, int version, int want_per_thread, int *known,
			       const char **symbol);

static int tracing(void)
{
	const char *t = getenv("VT_SIM_TRACE");
	return t && *t && *t != '0';
}

static CUresult lookup(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags,
		       CUdriverProcAddressQueryResult *status)
{
	CUdriverProcAddressQueryResult found = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
	CUresult r = CUDA_ERROR_INVALID_VALUE;
	const char *picked = NULL;
	if (symbol && pfn && !(flags & ~(cuuint64_t)(CU_GET_PROC_ADDRESS_LEGACY_STREAM |
						     CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM))) {
		int known;
		/* DEFAULT means legacy here: the driver cannot see how its
		 * caller was compiled. */
		*pfn = sim_row_pick(symbol, cudaVersion, (flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) != 0,
				    &known, &picked);
		if (*pfn) {
			found = CU_GET_PROC_ADDRESS_SUCCESS;
			r = CUDA_SUCCESS;
		} else {
			found = known ? CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT : CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
			r = CUDA_ERROR_NOT_FOUND;
		}
	}
	if (status)
		*status = found;
	if (tracing())
		fprintf(stderr, "vtsim: cuGetProcAddress(\"%s\", %d, %llu) -> %s\n", symbol ? symbol : "(null)",
			cudaVersion, (unsigned long long)flags, picked ? picked : "NOT FOUND");
	return r;
}

/* Both work before cuInit: the CUDA runtime resolves cuInit through them. */
CUresult sim_cuGetProcAddress(const char *symbol, void **pfn, int driverVersion, cuuint64_t flags)
{
	return lookup(symbol, pfn, driverVersion, flags, NULL);
}

CUresult sim_cuGetProcAddress_v2(const char *symbol, void **pfn, int driverVersion, cuuint64_t flags,
				 CUdriverProcAddressQueryResult *symbolFound)
{
	return lookup(symbol, pfn, driverVersion, flags, symbolFound);
}

CUresult sim_cuGetExportTable(const void **ppExportTable, const CUuuid *pExportTableId)
{
	if (ppExportTable)
		*ppExportTable = NULL;
	if (tracing() && pExportTableId) {
		fprintf(stderr, "vtsim: cuGetExportTable(");
		for (int i = 0; i < 16; i++)
			fprintf(stderr, "%02x", (unsigned char)pExportTableId->bytes[i]);
		fprintf(stderr, ") -> NOT SUPPORTED\n");
	}
	return CUDA_ERROR_NOT_SUPPORTED;
}

/* ---- error strings --------------------------------------------------------- */

#define SIM_ERRORS(X)                                                                                  \
	X(CUDA_SUCCESS, "no error")                                                                    \
	X(CUDA_ERROR_INVALID_VALUE, "invalid argument")                                                \
	X(CUDA_ERROR_OUT_OF_MEMORY, "out of memory")                                                   \
	X(CUDA_ERROR_NOT_INITIALIZED, "initialization error")                                          \
	X(CUDA_ERROR_DEINITIALIZED, "driver shutting down")                                            \
	X(CUDA_ERROR_NO_DEVICE, "no CUDA-capable device is detected")                                  \
	X(CUDA_ERROR_INVALID_DEVICE, "invalid device ordinal")                                         \
	X(CUDA_ERROR_INVALID_CONTEXT, "invalid device context")                                        \
	X(CUDA_ERROR_CONTEXT_ALREADY_CURRENT, "context already current")                               \
	X(CUDA_ERROR_INVALID_HANDLE, "invalid resource handle")                                        \
	X(CUDA_ERROR_NOT_FOUND, "named symbol not found")                                              \
	X(CUDA_ERROR_NOT_READY, "device not ready")                                                    \
	X(CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED, "peer access is already enabled")                    \
	X(CUDA_ERROR_NOT_SUPPORTED, "operation not supported")                                         \
	X(CUDA_ERROR_UNKNOWN, "unknown error")

static const struct {
	CUresult code;
	const char *name, *text;
} errors[] = {
#define X(code, text) {code, #code, text},
	SIM_ERRORS(X)
#undef X
};

static CUresult error_lookup(CUresult error, const char **pStr, int want_name)
{
	if (!pStr)
		return CUDA_ERROR_INVALID_VALUE;
	for (size_t i = 0; i < sizeof errors / sizeof errors[0]; i++)
		if (errors[i].code == error) {
			*pStr = want_name ? errors[i].name : errors[i].text;
			return CUDA_SUCCESS;
		}
	*pStr = NULL;
	return CUDA_ERROR_INVALID_VALUE;
}

CUresult sim_cuGetErrorString(CUresult error, const char **pStr) { return error_lookup(error, pStr, 0); }
CUresult sim_cuGetErrorName(CUresult error, const char **pStr) { return error_lookup(error, pStr, 1); }
