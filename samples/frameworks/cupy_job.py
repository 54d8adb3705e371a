#!/usr/bin/env python3
"""CuPy softmax regression, full-batch gradient descent: the whole dataset
goes to the GPU with cupy.asarray once and stays there.

Truth: the dataset and weight arrays with their device pointers
(ndarray.data.ptr) and sizes, and CuPy's memory pool counters (CuPy pools by
default; the pool is what the driver sees)."""
import vt_job as J


def gpu_probe(cupy):
    def probe():
        count = cupy.cuda.runtime.getDeviceCount()  # raises CUDARuntimeError without a device
        if count < 1:
            return False, "cupy.cuda.runtime.getDeviceCount() is 0"
        props = cupy.cuda.runtime.getDeviceProperties(0)
        name = props.get("name", b"")
        return True, name.decode() if isinstance(name, bytes) else str(name)
    return probe


def entry(name, array):
    return J.tensor(name, array.nbytes, ptr=array.data.ptr, shape=array.shape, dtype=array.dtype)


def main():
    args = J.parse_args(J.common_args(__doc__.splitlines()[0]))
    np = J.import_framework("numpy", "numpy")
    cupy = J.import_framework("cupy", "cupy-cuda12x / cupy-cuda13x", "CuPy")
    gpu = J.require_gpu("CuPy", gpu_probe(cupy), allow_cpu=False)  # CuPy has no CPU mode
    assert gpu

    x, y = J.dataset(args, np)
    x_dev = cupy.asarray(x)
    onehot = cupy.asarray(np.eye(args.classes, dtype=np.float32)[y])
    weights = cupy.zeros((args.features, args.classes), dtype=cupy.float32)
    losses = []
    # Same number of updates as the training jobs' steps: full batch each.
    for _ in range(args.epochs * 8):
        logits = x_dev @ weights
        logits -= logits.max(axis=1, keepdims=True)
        probs = cupy.exp(logits)
        probs /= probs.sum(axis=1, keepdims=True)
        losses.append(-(onehot * cupy.log(probs + 1e-12)).sum(axis=1).mean())
        weights -= 0.5 * (x_dev.T @ (probs - onehot)) / args.samples
    losses = [float(v) for v in cupy.asnumpy(cupy.stack(losses)).astype(np.float64)]
    checksum = float(cupy.abs(weights).astype(cupy.float64).sum())

    pool = cupy.get_default_memory_pool()
    J.emit_truth(
        framework="cupy", version=cupy.__version__,
        cuda_runtime=cupy.cuda.runtime.runtimeGetVersion(),
        cuda_driver=cupy.cuda.runtime.driverGetVersion(),
        dataset=[entry("x", x_dev), entry("y_onehot", onehot)], dataset_on_device=True,
        params=[entry("weights", weights)], grads=[], optimizer_state=[],
        batches={"count": 0, "bytes": 0, "uploaded_each_step": False},
        memory={"pool_used": pool.used_bytes(), "pool_total": pool.total_bytes()})
    J.emit_result(losses=J.exact(losses), checksum=J.exact([checksum])[0])


if __name__ == "__main__":
    J.run(main)
