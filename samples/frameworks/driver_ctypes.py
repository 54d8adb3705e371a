#!/usr/bin/env python3
"""The CUDA driver API straight from Python (ctypes), no framework: exact
ground truth for the kit, against the real driver on a GPU machine and the
simulated one (tests/simdriver) everywhere else.

It finds the driver the two ways frameworks do:
  dlsym       ctypes.CDLL("libcuda.so.1").cuMemAlloc_v2 (TensorFlow and XLA
              dlopen libcuda and dlsym each symbol)
  get_proc_v2  cuGetProcAddress_v2("cuMemAlloc", 3020, 0) (what libcudart does)
and through each it allocates, uploads and frees known sizes: a "dataset"
uploaded whole (and read back: the bytes must survive), then "batches"
uploaded one at a time into one buffer."""
import ctypes
import os
import zlib

import vt_job as J

CUDA_SUCCESS = 0
DATASET_BYTES = 4 << 20   # 4 MiB, one cuMemcpyHtoD (dlsym path)
BATCH_BYTES = 64 << 10    # 64 KiB, BATCHES uploads (get_proc path)
BATCHES = 8
SCRATCH = (1 << 20, 3 << 20)  # two more allocations through getproc, never copied into

PFN_ALLOC = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(ctypes.c_uint64), ctypes.c_size_t)
PFN_FREE = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_uint64)
PFN_HTOD = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_uint64, ctypes.c_void_p, ctypes.c_size_t)


class Driver:
    """libcuda through ctypes; every failing call ends the job with its name."""

    def __init__(self, name):
        try:
            self.lib = ctypes.CDLL(name)
        except OSError as error:
            raise J.JobExit(J.EXIT_NO_GPU, f"no CUDA device: cannot load the driver {name}: {error}")
        self.lib.cuGetProcAddress_v2.argtypes = [ctypes.c_char_p, ctypes.POINTER(ctypes.c_void_p),
                                                 ctypes.c_int, ctypes.c_uint64, ctypes.c_void_p]

    def call(self, symbol, *args):
        result = getattr(self.lib, symbol)(*args)  # resolved by dlsym on the handle
        if result != CUDA_SUCCESS:
            raise J.JobExit(J.EXIT_FAILED, f"{symbol} returned CUresult {result}")

    def proc(self, symbol, version, prototype):
        pfn = ctypes.c_void_p()
        status = ctypes.c_int(0)
        result = self.lib.cuGetProcAddress_v2(symbol.encode(), ctypes.byref(pfn), version, 0,
                                              ctypes.byref(status))
        if result != CUDA_SUCCESS or not pfn.value:
            raise J.JobExit(J.EXIT_FAILED, f"cuGetProcAddress_v2({symbol}, {version}) returned "
                                           f"CUresult {result}, status {status.value}")
        return prototype(pfn.value)


def checked(symbol, result):
    if result != CUDA_SUCCESS:
        raise J.JobExit(J.EXIT_FAILED, f"{symbol} returned CUresult {result}")


def open_device(driver):
    driver.call("cuInit", 0)
    count = ctypes.c_int(0)
    driver.call("cuDeviceGetCount", ctypes.byref(count))
    if count.value < 1:
        raise J.JobExit(J.EXIT_NO_GPU, "no CUDA device: the driver says cuDeviceGetCount = 0")
    device, context = ctypes.c_int(0), ctypes.c_void_p()
    driver.call("cuDeviceGet", ctypes.byref(device), 0)
    driver.call("cuDevicePrimaryCtxRetain", ctypes.byref(context), device)
    driver.call("cuCtxSetCurrent", context)
    version = ctypes.c_int(0)
    driver.call("cuDriverGetVersion", ctypes.byref(version))
    return count.value, version.value


def pattern(nbytes, seed):
    """Deterministic host bytes (the job's "data")."""
    block = bytes((i * 131 + seed) & 0xff for i in range(4096))
    return (block * (nbytes // len(block) + 1))[:nbytes]


def main():
    J.parse_args(J.common_args(__doc__.splitlines()[0]))
    driver = Driver(os.environ.get("VT_JOB_LIBCUDA", "libcuda.so.1"))
    devices, driver_version = open_device(driver)

    # dlsym path: the whole dataset, one allocation, one upload.
    dataset_ptr = ctypes.c_uint64(0)
    driver.call("cuMemAlloc_v2", ctypes.byref(dataset_ptr), ctypes.c_size_t(DATASET_BYTES))
    data = pattern(DATASET_BYTES, 7)
    driver.call("cuMemcpyHtoD_v2", dataset_ptr, data, ctypes.c_size_t(DATASET_BYTES))
    # Read it back: the bytes on the device are the job's, shim or not.
    readback = ctypes.create_string_buffer(DATASET_BYTES)
    driver.call("cuMemcpyDtoH_v2", readback, dataset_ptr, ctypes.c_size_t(DATASET_BYTES))
    if readback.raw != data:
        raise J.JobExit(J.EXIT_FAILED, "the dataset read back from the device differs from what was uploaded")

    # get_proc path, as libcudart asks: base names and the version each ABI began.
    alloc = driver.proc("cuMemAlloc", 3020, PFN_ALLOC)
    htod = driver.proc("cuMemcpyHtoD", 3020, PFN_HTOD)
    free = driver.proc("cuMemFree", 3020, PFN_FREE)
    batch_ptr = ctypes.c_uint64(0)
    checked("cuMemAlloc (getproc)", alloc(ctypes.byref(batch_ptr), BATCH_BYTES))
    # The batches are made on the host first, so the uploads come one right
    # after the other, as a loader's would: built inside the loop, Python's
    # byte shuffling spread eight uploads over a quarter of this short run,
    # and the analyzer reads a buffer refilled through a run without steps
    # as a streamed ring (the dataset beside it then reads as "weights or
    # dataset?"): the check's verdict followed the machine's load.
    batches = [pattern(BATCH_BYTES, step) for step in range(BATCHES)]
    crc = zlib.crc32(data)
    for batch in batches:
        crc = zlib.crc32(batch, crc)
    for batch in batches:
        checked("cuMemcpyHtoD (getproc)", htod(batch_ptr.value, batch, BATCH_BYTES))
    scratch = []
    for nbytes in SCRATCH:
        ptr = ctypes.c_uint64(0)
        checked("cuMemAlloc (getproc)", alloc(ctypes.byref(ptr), nbytes))
        scratch.append(J.tensor(f"scratch{len(scratch)}", nbytes, ptr=ptr.value))

    for item in scratch:
        checked("cuMemFree (getproc)", free(item["ptr"]))
    checked("cuMemFree (getproc)", free(batch_ptr.value))
    driver.call("cuMemFree_v2", dataset_ptr)

    J.emit_truth(
        framework="driver", version=str(driver_version), devices=devices,
        dataset=[J.tensor("dataset", DATASET_BYTES, ptr=dataset_ptr.value)], dataset_on_device=True,
        params=[], grads=[], optimizer_state=[],
        batches={"count": BATCHES, "bytes": BATCH_BYTES, "uploaded_each_step": True,
                 "ptr": batch_ptr.value},
        scratch=scratch,
        expect={"allocs": 2 + len(SCRATCH), "frees": 2 + len(SCRATCH),
                "alloc_bytes": DATASET_BYTES + BATCH_BYTES + sum(SCRATCH),
                "htod_copies": 1 + BATCHES, "htod_bytes": DATASET_BYTES + BATCHES * BATCH_BYTES,
                "lookups": {"dlsym": ["cuMemAlloc_v2", "cuMemcpyHtoD_v2", "cuMemFree_v2"],
                            "get_proc_v2": ["cuMemAlloc", "cuMemcpyHtoD", "cuMemFree"]}})
    J.emit_result(crc32=crc, readback_crc32=zlib.crc32(readback.raw),
                  uploaded=DATASET_BYTES + BATCHES * BATCH_BYTES)


if __name__ == "__main__":
    J.run(main)
