#!/usr/bin/env python3
"""tf.data.Dataset.from_tensor_slices((x, y)).cache().batch(B) fed to
Keras fit for several epochs. from_tensor_slices normalizes its input
(tensorflow/python/data/util/structure.py normalize_element ->
convert_to_tensor): in eager mode with a GPU the two constants are placed on
the GPU (_EagerConst), a whole copy of x and y that the dataset keeps alive
for every epoch; .cache() keeps the elements in host memory, so each step
still copies its batch to the device (one batch at a time). TensorFlow's
stream-ordered allocator (cuda_malloc_async). No markers."""
import vtc

job = vtc.Job("tfdata_cache", "dlsym", __doc__)
X_BYTES, Y_BYTES = 32 * vtc.MIB, 128 * vtc.KIB
BATCH, ACT = 516 * vtc.KIB, 2 * vtc.MIB
UNITS = (2 * vtc.MIB, 2 * vtc.MIB, 64 * vtc.KIB)
EPOCHS, STEPS_PER_EPOCH = 3, 4


def convert_to_tensor(nbytes):
    p = job.mem_alloc_async(0, nbytes, "dataset")
    job.htod(0, p, nbytes)
    return p


def normalize_element(element):
    return [convert_to_tensor(n) for n in element]


def from_tensor_slices(element):
    return normalize_element(element)


def add_weight(nbytes):
    p = job.mem_alloc_async(0, nbytes, "weights")
    job.zero(0, p, nbytes)
    return p


def add_slot(nbytes):
    p = job.mem_alloc_async(0, nbytes, "optimizer")
    job.zero(0, p, nbytes)
    return p


def train_step(weights, slots, s):
    xb = job.mem_alloc_async(0, BATCH, "prefetch")  # the cached element, copied in
    job.htod(0, xb, BATCH)
    acts = [job.mem_alloc_async(0, ACT, "activations") for _ in weights]
    grads = []
    for n, a in zip(reversed(UNITS), reversed(acts)):
        grads.append(job.mem_alloc_async(0, n, "gradients"))
        job.mem_free_async(0, a)
    if not slots:
        for n in UNITS:
            slots += [add_slot(n), add_slot(n)]
    for g in grads:
        job.mem_free_async(0, g)
    job.mem_free_async(0, xb)


def main():
    job.start(markers_default=False)
    job.open_devices(1)
    dataset = from_tensor_slices((X_BYTES, Y_BYTES))
    weights = [add_weight(n) for n in UNITS]
    slots = []
    s = 0
    for _ in range(EPOCHS):
        for _ in range(STEPS_PER_EPOCH):
            job.step(s)
            train_step(weights, slots, s)
            s += 1
    assert dataset
    job.line("finding whole_dataset_upload 0 %d" % X_BYTES)
    job.line("finding whole_dataset_upload 0 %d" % Y_BYTES)
    job.line("finding prefetch_depth 0 1 %d" % BATCH)
    job.line("steps 0 %d" % s)
    job.finish()


main()
