"""The backend registry: every library under test, and the converters that feed the ONNX ones.

Stdlib only (worker processes of every environment import this package). Each entry names the module
that declares the spec (as ``SPEC``); modules are imported on demand, and importing one imports no
DL library (their callables do that inside the worker).
"""
from __future__ import annotations

import functools
import importlib
from typing import Collection

from memo.backends.spec import (ARTIFACT_KINDS, SPEC_NAME, AnySpec, BackendSpec, ConverterSpec, MessageRules,
                                ReproRecipe)

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

# Converters, keyed by name; each spec says which artifact kind it writes (``produces``: :func:`producers`).
CONVERTERS: dict[str, str] = {
    "tf2onnx": "memo.backends.tf2onnx_converter:SPEC",
    "tf2onnx-opset11": "memo.backends.tf2onnx_converter:SPEC_OPSET11",
    "tflite-converter": "memo.backends.tflite_converter:SPEC",
    "keras-export": "memo.backends.keras_export_converter:SPEC",
    "keras-export-opset15": "memo.backends.keras_export_converter:SPEC_OPSET15",
}
# Where a kind's producer cannot run (tf2onnx needs TensorFlow, which a GPU machine may lack), another converter
# that writes the same format stands in: the ONNX backends then run on Keras's own export.
STAND_IN_PRODUCERS: dict[str, tuple[str, ...]] = {"onnx": ("keras-export-opset15",)}


# Oracles: computations memo runs in a worker to judge the libraries, never compared as libraries under test
# (the float64 truth of a numeric finding, :mod:`memo.triage.truth`).
ORACLES: dict[str, str] = {"float64-torch": "memo.backends.float64_truth",
                           "float64-jax": "memo.backends.float64_truth:SPEC_JAX"}


def load_spec(name: str) -> AnySpec:
    """The declaration of a registered backend, converter or oracle (KeyError for an unknown name)."""
    return _declared_at(BACKENDS.get(name) or CONVERTERS.get(name) or ORACLES[name])


def find_spec(name: str) -> AnySpec | None:
    """:func:`load_spec`, or None for a name memo does not register (a plugin) or whose module does not import."""
    try:
        return load_spec(name)
    except (KeyError, ImportError):
        return None


def _declared_at(target: str) -> AnySpec:
    """The spec a registry entry names: ``module`` (its ``SPEC``) or ``module:ATTRIBUTE``."""
    module_name, _, attribute = target.partition(":")
    return getattr(importlib.import_module(module_name), attribute or SPEC_NAME)


def producers() -> dict[str, str]:
    """``{artifact kind: converter}``: which registered converter writes each artifact kind but keras (its
    spec's ``produces``)."""
    return dict(_producers(tuple(CONVERTERS.items())))


def produced_by(name: str) -> str | None:
    """The artifact kind the registered converter ``name`` writes (None for any other name)."""
    spec = find_spec(name)
    return spec.produces if isinstance(spec, ConverterSpec) else None


def producer_of(kind: str, present: Collection[str] | None = None) -> str | None:
    """The converter that writes artifact ``kind``; None for keras (the artifact itself) or an unknown kind. With
    ``present`` (the members of one run): the one that wrote it there, the producer or a stand-in in its place."""
    primary = producers().get(kind)
    if present is None or primary is None:
        return primary
    return next((name for name in (primary, *STAND_IN_PRODUCERS.get(kind, ())) if name in present), primary)


def kernels_of(backend: str) -> frozenset[str]:
    """The libraries whose code decides ``backend``'s results: its spec's distributions and those of the converter
    that wrote the file it reads (ONNX Runtime on Keras's export runs what torch.onnx traced); none for a plugin."""
    spec = find_spec(backend)
    if spec is None:
        return frozenset()
    converter = producer_of(spec.consumes)
    return frozenset(spec.distributions) | (kernels_of(converter) if converter else frozenset())


def declared_messages() -> tuple[MessageRules, ...]:
    """The :class:`MessageRules` of every registered backend and converter whose module imports, each once, in
    registry order (backends first): memo applies them to every library's messages."""
    return _declared_messages(tuple(BACKENDS.values()) + tuple(CONVERTERS.values()))


def declared_masks() -> tuple[tuple[str, str, str], ...]:
    """``(stage, pattern, replacement)`` of every :class:`MessageMask` in :func:`declared_messages`, each once, in
    registry order: plain data, which a bug's script holds as memo had it when it wrote the script."""
    masks = dict.fromkeys(mask for rules in declared_messages() for mask in rules.masks)
    return tuple((mask.stage, mask.pattern, mask.replacement) for mask in masks)


@functools.lru_cache(maxsize=4)
def _producers(converters: tuple[tuple[str, str], ...]) -> tuple[tuple[str, str], ...]:
    kinds: dict[str, str] = {}
    for name, target in converters:
        spec = _declared_at(target)
        if isinstance(spec, ConverterSpec):
            kinds.setdefault(spec.produces, name)
    return tuple(kinds.items())


@functools.lru_cache(maxsize=4)
def _declared_messages(targets: tuple[str, ...]) -> tuple[MessageRules, ...]:
    rules: dict[MessageRules, None] = {}
    for target in targets:
        try:
            rules.setdefault(_declared_at(target).messages)
        except ImportError:  # a backend whose module does not import here declares nothing here
            continue
    return tuple(rules)


__all__ = ["ARTIFACT_KINDS", "BACKENDS", "BackendSpec", "CONVERTERS", "ConverterSpec", "DEFAULT_BACKENDS",
           "GPU_BACKENDS", "ORACLES", "STAND_IN_PRODUCERS", "declared_masks", "declared_messages", "default_backends",
           "find_spec", "kernels_of", "produced_by", "producer_of", "producers", "REFERENCE", "ReproRecipe", "load_spec"]
