"""Print one line per framework the kit may run: its version and the CUDA it
was built for / sees. Each import is guarded: a missing package is a line,
not an error."""
import importlib


def torch_line(torch):
    gpu = torch.cuda.get_device_name(0) if torch.cuda.is_available() else "no GPU"
    return f"{torch.__version__}, CUDA {torch.version.cuda}, cuDNN {torch.backends.cudnn.version()}, {gpu}"


def jax_line(jax):
    import jaxlib
    return f"{jax.__version__}, jaxlib {jaxlib.__version__}, devices {jax.devices()}"


def cupy_line(cupy):
    runtime = cupy.cuda.runtime
    return f"{cupy.__version__}, runtime {runtime.runtimeGetVersion()}, driver {runtime.driverGetVersion()}"


def tensorflow_line(tf):
    info = tf.sysconfig.get_build_info()
    return f"{tf.__version__}, built for CUDA {info.get('cuda_version', 'none')}"


PROBES = [("torch", torch_line), ("jax", jax_line), ("cupy", cupy_line), ("tensorflow", tensorflow_line),
          ("numpy", lambda np: np.__version__)]

for name, describe in PROBES:
    try:
        line = describe(importlib.import_module(name))
    except Exception as error:
        line = f"not available ({type(error).__name__}: {str(error).strip().splitlines()[0] if str(error).strip() else ''})"
    print(f"{name}: {line}", flush=True)
