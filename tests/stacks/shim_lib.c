/* A library that allocates device memory, dlopen'ed after start and
 * dlclose'd before exit by shim_client: its frames must still be named. */
#include <cuda.h>

void shim_lib_alloc(void);

void shim_lib_alloc(void)
{
	CUdeviceptr p;
	cuMemAlloc(&p, 2u << 20); /* SHIM_SITE_LIB */
}
