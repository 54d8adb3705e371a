"""End-to-end job for Python frames: uploads a 'dataset' to the (simulated)
GPU through ctypes from nested functions in two files, on the main thread and
on a second thread; ctypes releases the GIL around every driver call.

usage: e2e_job.py [--hang|--fork]
  --hang: after the uploads, wait to be killed
  --fork: after the uploads, fork; the child uploads from its own function"""
import ctypes
import os
import sys
import threading
import time

import e2e_data

DATASET_BYTES = 8 << 20
BATCH_BYTES = 64 << 10


def load_dataset(cuda):
    host = ctypes.create_string_buffer(DATASET_BYTES)
    return e2e_data.upload(cuda, host)  # SITE:load_dataset


def worker(cuda, out):
    host = ctypes.create_string_buffer(BATCH_BYTES)
    out.append(e2e_data.upload(cuda, host))  # SITE:worker


def forked_upload(cuda):
    pid = os.fork()
    if pid == 0:
        host = ctypes.create_string_buffer(BATCH_BYTES * 2)
        e2e_data.upload(cuda, host)  # SITE:child
        os._exit(0)
    _, status = os.waitpid(pid, 0)
    if status != 0:
        sys.exit(f"forked child failed: {status}")


def main():
    cuda = e2e_data.open_driver()
    dataset = load_dataset(cuda)  # SITE:main
    out = []

    def in_thread():
        e2e_data.check(cuda.cuCtxSetCurrent(ctx_of_main))
        worker(cuda, out)
    ctx_of_main = ctypes.c_void_p()
    e2e_data.check(cuda.cuCtxGetCurrent(ctypes.byref(ctx_of_main)))
    t = threading.Thread(target=in_thread, name="uploader")
    t.start()
    t.join()
    if "--fork" in sys.argv:
        forked_upload(cuda)  # SITE:fork
    if "--hang" in sys.argv:
        print("uploaded", flush=True)
        time.sleep(60)
    e2e_data.release(cuda, out[0])
    e2e_data.release(cuda, dataset)


if __name__ == "__main__":
    main()
