/* The shim e2e client: real driver calls (the simulated libcuda.so.1) from
 * known functions and lines, under the preloaded shim. */
#ifndef VT_SHIM_CLIENT_H
#define VT_SHIM_CLIENT_H

#include <cuda.h>

void upload_dataset(void);
void alloc_batch(void);
void check(CUresult rc, const char *what);

#endif
