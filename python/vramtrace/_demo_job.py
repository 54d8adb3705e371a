"""The job `vramtrace demo` traces: a tiny "training loop" straight on the
CUDA driver API (ctypes), with step markers from vramtrace.mark_step. Run it
on the simulated driver (vramtrace --simulated-driver) or a real one."""
import ctypes
import sys

import vramtrace

MiB = 1 << 20
STEPS = 8


def check(what, result):
    if result != 0:
        sys.exit(f"demo job: {what} returned CUresult {result}")


def main():
    try:
        cuda = ctypes.CDLL("libcuda.so.1")
    except OSError as error:
        sys.exit(f"demo job: no CUDA driver: {error}")
    alloc, free = cuda.cuMemAlloc_v2, cuda.cuMemFree_v2
    alloc.argtypes = [ctypes.POINTER(ctypes.c_uint64), ctypes.c_size_t]
    free.argtypes = [ctypes.c_uint64]
    check("cuInit", cuda.cuInit(0))
    device, context = ctypes.c_int(), ctypes.c_void_p()
    check("cuDeviceGet", cuda.cuDeviceGet(ctypes.byref(device), 0))
    check("cuDevicePrimaryCtxRetain", cuda.cuDevicePrimaryCtxRetain(ctypes.byref(context), device))
    check("cuCtxSetCurrent", cuda.cuCtxSetCurrent(context))

    def allocate(size):
        ptr = ctypes.c_uint64()
        check("cuMemAlloc_v2", alloc(ctypes.byref(ptr), size))
        return ptr.value

    weights = [allocate(32 * MiB), allocate(32 * MiB)]   # made once, kept
    optimizer = [allocate(64 * MiB)]
    for step in range(STEPS):
        vramtrace.mark_step(step)                       # step N starts
        activations = [allocate(16 * MiB) for _ in range(4)]
        gradients = allocate(64 * MiB)
        for ptr in activations + [gradients]:
            check("cuMemFree_v2", free(ptr))
    vramtrace.mark("training done")
    for ptr in weights + optimizer:
        check("cuMemFree_v2", free(ptr))
    print(f"demo job: {STEPS} steps, traced: {vramtrace.active()}")


if __name__ == "__main__":
    main()
