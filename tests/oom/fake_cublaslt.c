/* A stand-in for a math library that allocates device memory for itself
 * (cuBLASLt's workspace): built as libcublasLt.so, so an allocation made
 * here has that module on its native stack. */
#include <dlfcn.h>
#include <stddef.h>
#include <stdint.h>

typedef int (*mem_alloc_fn)(uint64_t *dptr, size_t bytes);

/* Allocates a workspace of bytes on the current context; 0 on success. */
__attribute__((noinline)) int cublasLtFakeWorkspace(size_t bytes)
{
	void *cuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
	if (!cuda)
		return -1;
	mem_alloc_fn alloc;
	*(void **)&alloc = dlsym(cuda, "cuMemAlloc_v2");
	uint64_t p = 0;
	return alloc && alloc(&p, bytes) == 0 ? 0 : -1;
}
