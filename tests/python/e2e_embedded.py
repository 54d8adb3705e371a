# Run inside e2e_embed (a C program that loaded libpython late).
import ctypes


def embedded_upload():
    cuda = ctypes.CDLL(None)  # the driver is already in the process
    ptr = ctypes.c_uint64()
    assert cuda.cuMemAlloc_v2(ctypes.byref(ptr), ctypes.c_size_t(12345)) == 0  # SITE:embedded
    assert cuda.cuMemFree_v2(ptr) == 0


embedded_upload()
