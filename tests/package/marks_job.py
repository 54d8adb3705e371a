"""A traced job's marks from the Python API, on the CUDA driver API
(ctypes): "step 0".."step 2" from mark_step, "step 3" as bytes, "step 4" from
Steps, a user mark, and one allocation per step. Prints "marks_job: traced
True|False"."""
import ctypes
import sys

import vramtrace


def main():
    cuda = ctypes.CDLL("libcuda.so.1")
    cuda.cuMemAlloc_v2.argtypes = [ctypes.POINTER(ctypes.c_uint64), ctypes.c_size_t]
    cuda.cuMemFree_v2.argtypes = [ctypes.c_uint64]
    device, context = ctypes.c_int(), ctypes.c_void_p()
    for what, result in (("cuInit", lambda: cuda.cuInit(0)),
                         ("cuDeviceGet", lambda: cuda.cuDeviceGet(ctypes.byref(device), 0)),
                         ("cuDevicePrimaryCtxRetain",
                          lambda: cuda.cuDevicePrimaryCtxRetain(ctypes.byref(context), device)),
                         ("cuCtxSetCurrent", lambda: cuda.cuCtxSetCurrent(context))):
        if result() != 0:
            sys.exit(f"marks_job: {what} failed")

    def step_work():
        ptr = ctypes.c_uint64()
        assert cuda.cuMemAlloc_v2(ctypes.byref(ptr), 1 << 20) == 0
        assert cuda.cuMemFree_v2(ptr) == 0

    for n in range(3):
        vramtrace.mark_step(n)
        step_work()
    vramtrace.mark(b"step 3")
    step_work()
    with vramtrace.Steps(start=4):
        step_work()
    vramtrace.mark("checkpoint saved")
    print(f"marks_job: traced {vramtrace.active()}")


if __name__ == "__main__":
    main()
