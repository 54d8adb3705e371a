#!/usr/bin/env python3
"""Keras MLP fed by tf.data.Dataset.from_tensor_slices on a numpy array: the
motivating case. From TensorFlow 2.6 on, from_tensor_slices converts the
whole array with convert_to_tensor and the eager constant is copied to the
default GPU (_EagerConst): one host-to-device copy the size of the dataset.

Truth: the dataset arrays' sizes (TensorFlow does not expose device
addresses), the weights and optimizer variables with their sizes, the batch
and prefetch depth. --allow-cpu runs it on the CPU (the check on machines
with TensorFlow and no GPU)."""
import os

import vt_job as J

PREFETCH = 2


def gpu_probe(tf):
    def probe():
        gpus = tf.config.list_physical_devices("GPU")
        if gpus:
            return True, gpus[0].name
        cuda = tf.sysconfig.get_build_info().get("cuda_version", "none")
        return False, (f"tf.config.list_physical_devices('GPU') is empty "
                       f"(TensorFlow {tf.__version__}, built for CUDA {cuda})")
    return probe


def entries(variables):
    return [J.tensor(v.path if hasattr(v, "path") else v.name,
                     int(v.numpy().nbytes), shape=v.shape, dtype=v.dtype) for v in variables]


def main():
    args = J.parse_args(J.common_args(__doc__.splitlines()[0]))
    # Before the import: quiet C++ logs, bit-reproducible kernels.
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    os.environ.setdefault("TF_DETERMINISTIC_OPS", "1")
    np = J.import_framework("numpy", "numpy")
    tf = J.import_framework("tensorflow", "tensorflow", "TensorFlow")
    gpu = J.require_gpu("TensorFlow", gpu_probe(tf), args.allow_cpu)
    keras = tf.keras
    keras.utils.set_random_seed(J.SEED)
    tf.config.experimental.enable_op_determinism()

    x, y = J.dataset(args, np)
    data = tf.data.Dataset.from_tensor_slices((x, y)).batch(args.batch).prefetch(PREFETCH)
    model = keras.Sequential([keras.Input((args.features,)),
                              keras.layers.Dense(args.hidden, activation="relu"),
                              keras.layers.Dense(args.classes)])
    model.compile(optimizer=keras.optimizers.Adam(1e-3),
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    history = model.fit(data, epochs=args.epochs, shuffle=False, verbose=0)
    checksum = float(sum(np.abs(w.astype(np.float64)).sum() for w in model.get_weights()))

    J.emit_truth(
        framework="tensorflow", version=tf.__version__, keras=keras.__version__,
        cuda_build=tf.sysconfig.get_build_info().get("cuda_version", "none"),
        device="gpu" if gpu else "cpu",
        dataset=[J.tensor("x", x.nbytes, shape=x.shape, dtype=x.dtype),
                 J.tensor("y", y.nbytes, shape=y.shape, dtype=y.dtype)],
        dataset_on_device=gpu,  # _EagerConst puts it on the default GPU (TF >= 2.6)
        params=entries(model.trainable_weights), grads=[],
        optimizer_state=entries(model.optimizer.variables),
        batches={"count": args.samples // args.batch * args.epochs,
                 "bytes": args.batch * (x.shape[1] * x.itemsize + y.itemsize),
                 "prefetch": PREFETCH, "uploaded_each_step": False})
    J.emit_result(losses=J.exact(history.history["loss"]), checksum=J.exact([checksum])[0])


if __name__ == "__main__":
    J.run(main)
