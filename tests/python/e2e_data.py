# Second file of the end-to-end job: the functions that talk to the driver.
# Lines marked "# SITE:<name>" are what the test expects as Python sites.
import ctypes
import os

CUdeviceptr = ctypes.c_uint64


def open_driver():
    cuda = ctypes.CDLL(os.environ.get("VT_TEST_LIBCUDA", "libcuda.so.1"))
    check(cuda.cuInit(0))
    dev = ctypes.c_int()
    check(cuda.cuDeviceGet(ctypes.byref(dev), 0))
    ctx = ctypes.c_void_p()
    check(cuda.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev))
    check(cuda.cuCtxSetCurrent(ctx))
    return cuda


def check(result):
    if result != 0:
        raise RuntimeError(f"CUDA error {result}")


def alloc(cuda, nbytes):
    ptr = CUdeviceptr()
    check(cuda.cuMemAlloc_v2(ctypes.byref(ptr), ctypes.c_size_t(nbytes)))  # SITE:alloc
    return ptr


def upload(cuda, host):
    ptr = alloc(cuda, len(host))
    check(cuda.cuMemcpyHtoD_v2(ptr, host, ctypes.c_size_t(len(host))))  # SITE:copy
    return ptr


def release(cuda, ptr):
    check(cuda.cuMemFree_v2(ptr))
