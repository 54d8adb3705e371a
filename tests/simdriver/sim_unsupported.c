/* Entry points the simulated driver exports (so the shim can wrap and route
 * them) but does not simulate: they return CUDA_ERROR_NOT_SUPPORTED.
 *  - the old 32-bit ABI (CUdeviceptr_v1 = unsigned int): no 64-bit device
 *    address fits in it;
 *  - graph memory nodes and IPC handles. */
#include "sim_internal.h"

#define UNSUPPORTED(name, ...)                                                                         \
	CUresult sim_##name(__VA_ARGS__) { return CUDA_ERROR_NOT_SUPPORTED; }

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-parameter"
UNSUPPORTED(cuMemAlloc, CUdeviceptr_v1 *dptr, unsigned int bytesize)
UNSUPPORTED(cuMemAllocPitch, CUdeviceptr_v1 *dptr, unsigned int *pPitch, unsigned int WidthInBytes,
	    unsigned int Height, unsigned int ElementSizeBytes)
UNSUPPORTED(cuMemFree, CUdeviceptr_v1 dptr)
UNSUPPORTED(cuMemcpyHtoD, CUdeviceptr_v1 dstDevice, const void *srcHost, unsigned int ByteCount)
UNSUPPORTED(cuMemcpyHtoDAsync, CUdeviceptr_v1 dstDevice, const void *srcHost, unsigned int ByteCount,
	    CUstream hStream)
UNSUPPORTED(cuMemcpyDtoH, void *dstHost, CUdeviceptr_v1 srcDevice, unsigned int ByteCount)
UNSUPPORTED(cuMemcpyDtoHAsync, void *dstHost, CUdeviceptr_v1 srcDevice, unsigned int ByteCount,
	    CUstream hStream)
UNSUPPORTED(cuMemcpyDtoD, CUdeviceptr_v1 dstDevice, CUdeviceptr_v1 srcDevice, unsigned int ByteCount)
UNSUPPORTED(cuMemcpyDtoDAsync, CUdeviceptr_v1 dstDevice, CUdeviceptr_v1 srcDevice, unsigned int ByteCount,
	    CUstream hStream)
UNSUPPORTED(cuMemcpy2D, const CUDA_MEMCPY2D_v1 *pCopy)
UNSUPPORTED(cuMemcpy2DUnaligned, const CUDA_MEMCPY2D_v1 *pCopy)
UNSUPPORTED(cuMemcpy2DAsync, const CUDA_MEMCPY2D_v1 *pCopy, CUstream hStream)
UNSUPPORTED(cuMemcpy3D, const CUDA_MEMCPY3D_v1 *pCopy)
UNSUPPORTED(cuMemcpy3DAsync, const CUDA_MEMCPY3D_v1 *pCopy, CUstream hStream)
UNSUPPORTED(cuMemsetD8, CUdeviceptr_v1 dstDevice, unsigned char uc, unsigned int N)
UNSUPPORTED(cuMemsetD16, CUdeviceptr_v1 dstDevice, unsigned short us, unsigned int N)
UNSUPPORTED(cuMemsetD32, CUdeviceptr_v1 dstDevice, unsigned int ui, unsigned int N)
UNSUPPORTED(cuMemsetD2D8, CUdeviceptr_v1 dstDevice, unsigned int dstPitch, unsigned char uc, unsigned int Width,
	    unsigned int Height)
UNSUPPORTED(cuMemsetD2D16, CUdeviceptr_v1 dstDevice, unsigned int dstPitch, unsigned short us, unsigned int Width,
	    unsigned int Height)
UNSUPPORTED(cuMemsetD2D32, CUdeviceptr_v1 dstDevice, unsigned int dstPitch, unsigned int ui, unsigned int Width,
	    unsigned int Height)
UNSUPPORTED(cuMemAllocHost, void **pp, unsigned int bytesize)
UNSUPPORTED(cuGraphAddMemAllocNode, CUgraphNode *phGraphNode, CUgraph hGraph, const CUgraphNode *dependencies,
	    size_t numDependencies, CUDA_MEM_ALLOC_NODE_PARAMS *nodeParams)
UNSUPPORTED(cuGraphAddMemFreeNode, CUgraphNode *phGraphNode, CUgraph hGraph, const CUgraphNode *dependencies,
	    size_t numDependencies, CUdeviceptr dptr)
UNSUPPORTED(cuIpcOpenMemHandle, CUdeviceptr *pdptr, CUipcMemHandle handle, unsigned int Flags)
UNSUPPORTED(cuIpcOpenMemHandle_v2, CUdeviceptr *pdptr, CUipcMemHandle handle, unsigned int Flags)
UNSUPPORTED(cuIpcCloseMemHandle, CUdeviceptr dptr)
#pragma GCC diagnostic pop
