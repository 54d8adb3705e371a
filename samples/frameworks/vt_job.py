"""Shared plumbing for the framework jobs in samples/frameworks/.

Every job is small, seeded and deterministic, and prints exactly two lines
that the GPU check kit (samples/gpu/kit.py) reads back:

  VRAMTRACE_TRUTH {json}   what the job put on the device, read from the
                           framework's own objects (data_ptr/nbytes, ...)
  VRAMTRACE_RESULT {json}  what the job computed: must be byte-identical with
                           and without vramtrace

A job that cannot run fails EARLY with one line on stderr and a distinct
exit code (never a traceback from deep inside a framework):

  EXIT_NO_GPU (3)      the framework imported but sees no CUDA device
  EXIT_NO_PACKAGE (4)  the framework package is not importable
  EXIT_USAGE (2)       bad arguments
  EXIT_FAILED (5)      the job itself failed after start (traceback kept:
                       on a GPU machine that is a finding worth reading)
"""
import argparse
import importlib
import json
import os
import sys
import traceback

EXIT_OK = 0
EXIT_USAGE = 2
EXIT_NO_GPU = 3
EXIT_NO_PACKAGE = 4
EXIT_FAILED = 5

TRUTH_PREFIX = "VRAMTRACE_TRUTH "
RESULT_PREFIX = "VRAMTRACE_RESULT "

# One set of sizes for every training job, so the traces are comparable:
# the dataset (16 MiB of float32 features) is many times a batch (256 KiB)
# and many times the weights (~70 KiB), which is what lets the analyzer tell
# a whole-dataset upload from streaming.
DEFAULT_SAMPLES = 8192
DEFAULT_FEATURES = 512
DEFAULT_HIDDEN = 32
DEFAULT_CLASSES = 8
DEFAULT_BATCH = 128
DEFAULT_EPOCHS = 2
SEED = 1234


class JobExit(Exception):
    """Raised to end a job with a code and one message line."""

    def __init__(self, code, message):
        super().__init__(message)
        self.code = code
        self.message = message


def job_name():
    return os.path.splitext(os.path.basename(sys.argv[0]))[0]


def common_args(description, feeds=None):
    """The argument parser every job shares; feeds=('whole','stream') adds
    --feed for jobs that have a streaming twin."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--samples", type=int, default=DEFAULT_SAMPLES)
    parser.add_argument("--features", type=int, default=DEFAULT_FEATURES)
    parser.add_argument("--hidden", type=int, default=DEFAULT_HIDDEN)
    parser.add_argument("--classes", type=int, default=DEFAULT_CLASSES)
    parser.add_argument("--batch", type=int, default=DEFAULT_BATCH)
    parser.add_argument("--epochs", type=int, default=DEFAULT_EPOCHS)
    parser.add_argument("--allow-cpu", action="store_true",
                        help="run on the CPU when no GPU is found (checks on GPU-less machines)")
    if feeds:
        parser.add_argument("--feed", choices=feeds, default=feeds[0],
                            help="whole: upload the whole dataset once; stream: upload each batch")
    return parser


def parse_args(parser):
    args = parser.parse_args()
    for name in ("samples", "features", "hidden", "classes", "batch", "epochs"):
        if getattr(args, name) <= 0:
            raise JobExit(EXIT_USAGE, f"--{name} must be positive")
    if args.samples % args.batch:
        raise JobExit(EXIT_USAGE, "--samples must be a multiple of --batch (every step the same size)")
    return args


def import_framework(module, package, what=None):
    """Import a framework or end the job with EXIT_NO_PACKAGE."""
    try:
        return importlib.import_module(module)
    except Exception as error:  # ImportError, or a broken install raising anything
        detail = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        raise JobExit(EXIT_NO_PACKAGE,
                      f"{what or package} is not installed or does not import "
                      f"(pip package '{package}'): {detail}")


def no_gpu(framework, reason):
    """End the job with EXIT_NO_GPU and the framework's own words."""
    reason = " ".join(str(reason).split()) or "no reason given"
    return JobExit(EXIT_NO_GPU, f"no CUDA device: {framework} says: {reason[:300]}")


def require_gpu(framework, probe, allow_cpu):
    """probe() -> (True, detail) when the framework sees a CUDA device, else
    (False, the framework's own reason). Returns True for GPU, False for the
    CPU fallback that --allow-cpu permits; otherwise ends the job early."""
    try:
        found, detail = probe()
    except Exception as error:  # a probe that raises is the framework's "no"
        found, detail = False, first_line(error)
    if found:
        return True
    if allow_cpu:
        print(f"{job_name()}: no CUDA device ({framework}: {detail}); running on the CPU "
              "as --allow-cpu asks", file=sys.stderr, flush=True)
        return False
    raise no_gpu(framework, detail)


def first_line(error):
    text = str(error).strip()
    return text.splitlines()[0] if text else type(error).__name__


def dataset(args, numpy):
    """The job's dataset: float32 features, integer labels from a fixed
    linear teacher, so the loss actually falls and results are exact."""
    rng = numpy.random.default_rng(SEED)
    x = rng.standard_normal((args.samples, args.features), dtype=numpy.float32)
    teacher = rng.standard_normal((args.features, args.classes), dtype=numpy.float32)
    y = numpy.argmax(x @ teacher, axis=1).astype(numpy.int32)
    return x, y


def tensor(name, nbytes, ptr=None, shape=None, dtype=None):
    """One entry of the truth: a device buffer the framework owns."""
    entry = {"name": name, "bytes": int(nbytes)}
    if ptr is not None:
        entry["ptr"] = int(ptr)
    if shape is not None:
        entry["shape"] = [int(d) for d in shape]
    if dtype is not None:
        entry["dtype"] = str(dtype)
    return entry


def emit(prefix, payload):
    # sort_keys + fixed separators: the same payload is the same line, so a
    # result is compared as text.
    print(prefix + json.dumps(payload, sort_keys=True, separators=(",", ":")), flush=True)


def emit_truth(**fields):
    fields.setdefault("job", job_name())
    emit(TRUTH_PREFIX, fields)


def emit_result(**fields):
    fields.setdefault("job", job_name())
    emit(RESULT_PREFIX, fields)


def exact(values):
    """Floats as exact text (repr round-trips): results compare bit for bit."""
    return [repr(float(v)) for v in values]


def run(main):
    """Run main() with the kit's exit-code contract."""
    try:
        main()
    except JobExit as stop:
        print(f"{job_name()}: {stop.message}", file=sys.stderr, flush=True)
        sys.exit(stop.code)
    except KeyboardInterrupt:
        sys.exit(130)
    except Exception as error:
        traceback.print_exc()
        print(f"{job_name()}: job failed: {type(error).__name__}: {first_line(error)}",
              file=sys.stderr, flush=True)
        sys.exit(EXIT_FAILED)
    sys.exit(EXIT_OK)
