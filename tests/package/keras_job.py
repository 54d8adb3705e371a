"""A small Keras fit whose step markers come from vramtrace.keras.StepMarker
alone: EPOCHS x BATCHES training batches, so as many "step N" markers in the
trace. Real TensorFlow on the CPU; under `vramtrace --simulated-driver run`
TensorFlow (its CUDA build) loads the simulated libcuda.so.1 too.
Prints "keras_job: N steps" (N = the batches fit ran)."""
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

import vramtrace  # noqa: E402

EPOCHS, BATCHES, BATCH = 2, 5, 16


def main():
    tf.keras.utils.set_random_seed(0)
    x = np.random.default_rng(0).standard_normal((BATCHES * BATCH, 8)).astype("float32")
    y = (x.sum(axis=1) > 0).astype("int32")
    model = tf.keras.Sequential([tf.keras.Input((8,)),
                                 tf.keras.layers.Dense(16, activation="relu"),
                                 tf.keras.layers.Dense(2)])
    model.compile(optimizer="adam",
                  loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    marker = vramtrace.keras.StepMarker()
    model.fit(x, y, batch_size=BATCH, epochs=EPOCHS, shuffle=False, verbose=0, callbacks=[marker])
    print(f"keras_job: {marker.steps.next} steps, traced: {vramtrace.active()}")


if __name__ == "__main__":
    main()
