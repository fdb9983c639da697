"""The backend registry: every library under test, and the converters that feed the ONNX ones.

Stdlib only (worker processes of every environment import this package). Each entry names the module
that declares the spec (as ``SPEC``); modules are imported on demand, and importing one imports no
DL library (their callables do that inside the worker).
"""
from __future__ import annotations

import importlib
from typing import Collection

from memo.backends.spec import ARTIFACT_KINDS, AnySpec, BackendSpec, ConverterSpec, ReproRecipe

REFERENCE = "keras-tensorflow"

BACKENDS: dict[str, str] = {
    "keras-tensorflow": "memo.backends.keras_tensorflow",
    "keras-jax": "memo.backends.keras_jax",
    "keras-torch": "memo.backends.keras_torch",
    "keras-openvino": "memo.backends.keras_openvino",
    "onnxruntime": "memo.backends.onnxruntime_backend",
    "onnx2pytorch": "memo.backends.onnx2pytorch_backend",
    "onnx2torch": "memo.backends.onnx2torch_backend",
    "openvino": "memo.backends.openvino_backend",
    "tvm": "memo.backends.tvm_backend",
    "torch-compile": "memo.backends.torch_compile_backend",
    "torch-inductor": "memo.backends.torch_compile_backend:SPEC_INDUCTOR",
    "mxnet": "memo.backends.mxnet_backend",
    "litert": "memo.backends.litert_backend",
    "onnxruntime-keras-export": "memo.backends.onnxruntime_backend:SPEC_KERAS_EXPORT",
    "keras-torch-cuda": "memo.backends.keras_torch:SPEC_CUDA",
    "keras-jax-cuda": "memo.backends.keras_jax:SPEC_CUDA",
    "onnx2torch-cuda": "memo.backends.onnx2torch_backend:SPEC_CUDA",
    "torch-inductor-cuda": "memo.backends.torch_compile_backend:SPEC_INDUCTOR_CUDA",
    "onnxruntime-cuda": "memo.backends.onnxruntime_backend:SPEC_CUDA",
}
# What `memo fuzz` runs without --backends: every engine whose cost per model keeps a campaign's CPU per
# executed model within +35 % of the seven original libraries' (bench_differential.py, docs/benchmarks.md,
# "Engines"); the costlier ones (litert, tvm, torch-compile, torch-inductor) are one --backends flag away.
DEFAULT_BACKENDS: tuple[str, ...] = ("keras-tensorflow", "keras-jax", "keras-torch", "keras-openvino", "onnxruntime",
                                     "onnx2pytorch", "onnx2torch", "openvino", "mxnet", "onnxruntime-keras-export")
# Added to the default set where the driver shows an NVIDIA GPU (memo.backends.cuda.gpu_unavailable), never
# elsewhere: a machine without one runs exactly the set above. ONNX Runtime's CUDA provider needs onnxruntime-gpu,
# and is recorded as unavailable (once per campaign) where only the CPU package is installed.
GPU_BACKENDS: tuple[str, ...] = ("keras-torch-cuda", "keras-jax-cuda", "onnx2torch-cuda", "torch-inductor-cuda",
                                 "onnxruntime-cuda")


def default_backends() -> tuple[str, ...]:
    """What `memo fuzz` runs without --backends here: :data:`DEFAULT_BACKENDS`, and the GPU backends on a GPU."""
    from memo.backends.cuda import gpu_unavailable

    return DEFAULT_BACKENDS + (() if gpu_unavailable() else GPU_BACKENDS)

# Converters, keyed by name; PRODUCERS says which converter writes each non-keras artifact kind.
CONVERTERS: dict[str, str] = {
    "tf2onnx": "memo.backends.tf2onnx_converter:SPEC",
    "tf2onnx-opset11": "memo.backends.tf2onnx_converter:SPEC_OPSET11",
    "tflite-converter": "memo.backends.tflite_converter:SPEC",
    "keras-export": "memo.backends.keras_export_converter:SPEC",
    "keras-export-opset15": "memo.backends.keras_export_converter:SPEC_OPSET15",
}
PRODUCERS: dict[str, str] = {"onnx": "tf2onnx", "onnx-opset11": "tf2onnx-opset11", "tflite": "tflite-converter",
                             "keras-onnx": "keras-export"}
# Where a kind's producer cannot run (tf2onnx needs TensorFlow, which a GPU machine may lack), another converter
# that writes the same format stands in: the ONNX backends then run on Keras's own export.
STAND_IN_PRODUCERS: dict[str, tuple[str, ...]] = {"onnx": ("keras-export-opset15",)}


def producer_of(kind: str, present: Collection[str]) -> str:
    """The converter that wrote ``kind`` in a run whose members are ``present``: its producer, or the stand-in that
    ran in its place."""
    candidates = (PRODUCERS[kind], *STAND_IN_PRODUCERS.get(kind, ()))
    return next((name for name in candidates if name in present), PRODUCERS[kind])


# Oracles: computations memo runs in a worker to judge the libraries, never compared as libraries under test
# (the float64 truth of a numeric finding, :mod:`memo.triage.truth`).
ORACLES: dict[str, str] = {"float64-torch": "memo.backends.float64_truth",
                           "float64-jax": "memo.backends.float64_truth:SPEC_JAX"}


def load_spec(name: str) -> AnySpec:
    """The declaration of a registered backend, converter or oracle (KeyError for an unknown name)."""
    target = BACKENDS.get(name) or CONVERTERS.get(name) or ORACLES[name]
    module_name, _, attribute = target.partition(":")
    return getattr(importlib.import_module(module_name), attribute or "SPEC")


def find_spec(name: str) -> AnySpec | None:
    """:func:`load_spec`, or None for a name memo does not register (a plugin) or whose module does not import."""
    try:
        return load_spec(name)
    except (KeyError, ImportError):
        return None


__all__ = ["ARTIFACT_KINDS", "BACKENDS", "BackendSpec", "CONVERTERS", "ConverterSpec", "DEFAULT_BACKENDS",
           "GPU_BACKENDS", "STAND_IN_PRODUCERS", "default_backends", "producer_of",
           "ORACLES", "find_spec", "PRODUCERS", "REFERENCE", "ReproRecipe", "load_spec"]
