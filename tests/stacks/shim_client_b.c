/* Second file of the shim e2e client: two of its three allocation sites. */
#include "shim_client.h"

void upload_dataset(void)
{
	CUdeviceptr p;
	check(cuMemAlloc(&p, 64u << 20), "dataset"); /* SHIM_SITE_DATASET */
}

void alloc_batch(void)
{
	CUdeviceptr p;
	check(cuMemAlloc(&p, 1u << 20), "batch"); /* SHIM_SITE_BATCH */
	check(cuMemFree(p), "free batch");
}
