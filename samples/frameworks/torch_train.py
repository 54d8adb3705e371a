#!/usr/bin/env python3
"""PyTorch MLP trained with Adam. --feed whole moves the whole dataset to
the GPU with .cuda() once (one big host-to-device copy, the pattern the
analyzer must flag); --feed stream moves one batch per step (its twin: the
same bytes, in batch-sized copies, none long-lived).

Truth: the dataset tensors, parameters, .grad and optimizer.state, each with
data_ptr() and nbytes, plus the caching allocator's own counters."""
import os

import vt_job as J


def cuda_probe(torch):
    def probe():
        if torch.version.cuda is None:
            return False, f"this PyTorch build ({torch.__version__}) has no CUDA (torch.version.cuda is None)"
        if torch.cuda.is_available():
            return True, torch.cuda.get_device_name(0)
        torch.cuda.init()  # raises with PyTorch's own explanation
        return False, "torch.cuda.is_available() is False"
    return probe


def on_device(torch, array, device):
    host = torch.from_numpy(array)
    return host.cuda() if device.type == "cuda" else host


def entries(torch, named_tensors):
    return [J.tensor(name, t.nbytes, ptr=t.data_ptr(), shape=t.shape, dtype=t.dtype)
            for name, t in named_tensors if torch.is_tensor(t)]


def optimizer_state(torch, model, optimizer):
    names = {id(p): n for n, p in model.named_parameters()}
    for param, state in optimizer.state.items():
        for key, value in sorted(state.items()):
            if torch.is_tensor(value):
                yield f"{names[id(param)]}.{key}", value


def main():
    args = J.parse_args(J.common_args(__doc__.splitlines()[0], feeds=("whole", "stream")))
    # cuBLAS is only bit-reproducible with a fixed workspace; must precede CUDA init.
    os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
    np = J.import_framework("numpy", "numpy")
    torch = J.import_framework("torch", "torch", "PyTorch")
    gpu = J.require_gpu("PyTorch", cuda_probe(torch), args.allow_cpu)
    device = torch.device("cuda" if gpu else "cpu")
    torch.manual_seed(J.SEED)
    torch.use_deterministic_algorithms(True)

    x, y = J.dataset(args, np)
    y = y.astype(np.int64)  # cross_entropy wants int64 labels
    model = torch.nn.Sequential(torch.nn.Linear(args.features, args.hidden), torch.nn.ReLU(),
                                torch.nn.Linear(args.hidden, args.classes)).to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    whole = args.feed == "whole"
    if whole:
        x_dev, y_dev = on_device(torch, x, device), on_device(torch, y, device)

    steps = args.samples // args.batch
    epoch_losses = []
    for _ in range(args.epochs):
        total = torch.zeros((), dtype=torch.float64, device=device)
        for step in range(steps):
            lo, hi = step * args.batch, (step + 1) * args.batch
            if whole:
                xb, yb = x_dev[lo:hi], y_dev[lo:hi]
            else:
                xb, yb = on_device(torch, x[lo:hi], device), on_device(torch, y[lo:hi], device)
            loss = torch.nn.functional.cross_entropy(model(xb), yb)
            # set_to_none=False keeps each .grad buffer alive at one address,
            # so the truth can name it.
            optimizer.zero_grad(set_to_none=False)
            loss.backward()
            optimizer.step()
            total += loss.detach().double()
        epoch_losses.append(total.item() / steps)
    checksum = sum(p.detach().double().abs().sum().item() for p in model.parameters())

    dataset = (entries(torch, [("x", x_dev), ("y", y_dev)]) if whole else
               [J.tensor("x", x.nbytes, shape=x.shape, dtype="float32"),
                J.tensor("y", y.nbytes, shape=y.shape, dtype="int64")])
    batch_bytes = args.batch * (x.shape[1] * x.itemsize + y.itemsize)
    cuda = torch.cuda if gpu else None
    J.emit_truth(
        framework="torch", version=torch.__version__, cuda=torch.version.cuda,
        device=cuda.get_device_name(0) if gpu else "cpu", feed=args.feed,
        allocator={"PYTORCH_NO_CUDA_MEMORY_CACHING": os.environ.get("PYTORCH_NO_CUDA_MEMORY_CACHING", ""),
                   "PYTORCH_CUDA_ALLOC_CONF": os.environ.get("PYTORCH_CUDA_ALLOC_CONF", "")},
        dataset=dataset, dataset_on_device=whole,
        params=entries(torch, model.named_parameters()),
        grads=entries(torch, ((n, p.grad) for n, p in model.named_parameters())),
        optimizer_state=entries(torch, optimizer_state(torch, model, optimizer)),
        batches={"count": steps * args.epochs, "bytes": batch_bytes,
                 "uploaded_each_step": not whole},
        memory={"allocated": cuda.memory_allocated() if gpu else 0,
                "max_allocated": cuda.max_memory_allocated() if gpu else 0,
                "reserved": cuda.memory_reserved() if gpu else 0})
    J.emit_result(losses=J.exact(epoch_losses), checksum=J.exact([checksum])[0])


if __name__ == "__main__":
    J.run(main)
