"""The backend registry: every library under test, and the converters that feed the ONNX ones.

Stdlib only (worker processes of every environment import this package). Each entry names the module
that declares the spec (as ``SPEC``); modules are imported on demand, and importing one imports no
DL library (their callables do that inside the worker).
"""
from __future__ import annotations

import importlib

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
}
# What `memo fuzz` runs without --backends: every engine whose cost per model keeps a campaign's CPU per
# executed model within +35 % of the seven original libraries' (bench_differential.py, docs/benchmarks.md,
# "Engines"); the costlier ones (litert, tvm, torch-compile, torch-inductor) are one --backends flag away.
DEFAULT_BACKENDS: tuple[str, ...] = ("keras-tensorflow", "keras-jax", "keras-torch", "keras-openvino", "onnxruntime",
                                     "onnx2pytorch", "onnx2torch", "openvino", "mxnet", "onnxruntime-keras-export")

# Converters, keyed by name; PRODUCERS says which converter writes each non-keras artifact kind.
CONVERTERS: dict[str, str] = {
    "tf2onnx": "memo.backends.tf2onnx_converter:SPEC",
    "tf2onnx-opset11": "memo.backends.tf2onnx_converter:SPEC_OPSET11",
    "tflite-converter": "memo.backends.tflite_converter:SPEC",
    "keras-export": "memo.backends.keras_export_converter:SPEC",
}
PRODUCERS: dict[str, str] = {"onnx": "tf2onnx", "onnx-opset11": "tf2onnx-opset11", "tflite": "tflite-converter",
                             "keras-onnx": "keras-export"}


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
           "ORACLES", "find_spec", "PRODUCERS", "REFERENCE", "ReproRecipe", "load_spec"]
