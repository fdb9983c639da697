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
    "onnxruntime": "memo.backends.onnxruntime_backend",
    "onnx2pytorch": "memo.backends.onnx2pytorch_backend",
    "onnx2torch": "memo.backends.onnx2torch_backend",
    "mxnet": "memo.backends.mxnet_backend",
}
DEFAULT_BACKENDS: tuple[str, ...] = tuple(BACKENDS)

# Converters, keyed by name; PRODUCERS says which converter writes each non-keras artifact kind.
CONVERTERS: dict[str, str] = {
    "tf2onnx": "memo.backends.tf2onnx_converter:SPEC",
    "tf2onnx-opset11": "memo.backends.tf2onnx_converter:SPEC_OPSET11",
}
PRODUCERS: dict[str, str] = {"onnx": "tf2onnx", "onnx-opset11": "tf2onnx-opset11"}


def load_spec(name: str) -> AnySpec:
    """The declaration of a registered backend or converter (KeyError for an unknown name)."""
    target = BACKENDS.get(name) or CONVERTERS[name]
    module_name, _, attribute = target.partition(":")
    return getattr(importlib.import_module(module_name), attribute or "SPEC")


__all__ = ["ARTIFACT_KINDS", "BACKENDS", "BackendSpec", "CONVERTERS", "ConverterSpec", "DEFAULT_BACKENDS",
           "PRODUCERS", "REFERENCE", "ReproRecipe", "load_spec"]
