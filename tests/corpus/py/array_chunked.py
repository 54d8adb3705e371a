#!/usr/bin/env python3
"""Array processing with no training (a CuPy-style feature pipeline, no
framework names): one device array for the whole 48 MiB table, filled from
the host in six 8 MiB slices (arr[i:j].set(host[i:j]): six uploads at
offsets), then five passes of reductions and normalization with temporary
buffers. The whole dataset is on the device (one allocation, uploaded in
pieces); no optimizer (0 steps). No markers."""
import vtc

job = vtc.Job("array_chunked", "getproc", __doc__)
TABLE, CHUNK, TMP = 48 * vtc.MIB, 8 * vtc.MIB, 6 * vtc.MIB
PASSES = 5


def main():
    job.start(markers_default=False)
    job.open_devices(1)
    table = job.mem_alloc(0, TABLE, "dataset")
    for off in range(0, TABLE, CHUNK):
        job.htod(0, table + off, CHUNK)
    for _ in range(PASSES):
        t1 = job.mem_alloc(0, TMP, "activations")
        t2 = job.mem_alloc(0, 4 * vtc.KIB, "activations")
        job.dtoh(0, t2, 4 * vtc.KIB)
        job.mem_free(0, t2)
        job.mem_free(0, t1)
    job.mem_free(0, table)
    job.line("finding whole_dataset_upload 0 %d" % TABLE)
    job.line("no_finding prefetch_depth")
    job.line("steps 0 0")
    job.finish()


main()
