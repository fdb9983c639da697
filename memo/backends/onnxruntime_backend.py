"""ONNX Runtime (CPU execution provider) on tf2onnx's default-opset conversion (``onnxruntime``) and on
Keras's own ONNX export (``onnxruntime-keras-export``).

onnxruntime is imported inside the functions below, which run in the worker only: the orchestrator
imports this module to read the spec and must never import a library under test.
"""
from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from memo.backends.keras_common import BICUBIC_KERNEL
from memo.backends.spec import BackendSpec, ModelInputs, ReproRecipe, UnsupportedPhrase, Upstream
from memo.backends.versions import distribution_versions

DISTRIBUTIONS = ("onnxruntime", "onnx")


def _setup() -> dict[str, str]:
    import onnxruntime  # noqa: F401

    return distribution_versions(DISTRIBUTIONS)


def _load(path: Path) -> Any:
    import onnxruntime

    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    return onnxruntime.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])


def _run(session: Any, inputs: ModelInputs) -> list[Any]:
    """Feed the inputs by name when the graph's inputs are named after the model's (both converters name
    them so), else by position; an exporter may drop an input the outputs do not depend on."""
    args = session.get_inputs()
    if all(arg.name in inputs for arg in args):
        feed = {arg.name: inputs[arg.name] for arg in args}
    else:
        feed = {arg.name: array for arg, array in zip(args, inputs.values())}
    return session.run(None, feed)


# ONNX Runtime's NOT_IMPLEMENTED status (its own exception class, not a NotImplementedError): no kernel
# for an op, opset version or type.
UNSUPPORTED = (
    UnsupportedPhrase(r"NOT_IMPLEMENTED : Could not find an implementation for", exc_types=("NotImplemented",),
                      example="[ONNXRuntimeError] : 9 : NOT_IMPLEMENTED : Could not find an implementation for "
                              "ConvInteger(10) node with name 'conv'"),
)

UPSTREAM = Upstream("active", "https://github.com/microsoft/onnxruntime/issues",
                    "Microsoft releases ONNX Runtime regularly (1.31.1 installed)")

SPEC = BackendSpec(name="onnxruntime", consumes="onnx", load=_load, run=_run, setup=_setup,
                   distributions=DISTRIBUTIONS, unsupported_patterns=UNSUPPORTED, repro=ReproRecipe(),
                   engine="onnxruntime", upstream=UPSTREAM)
# The same runtime on Keras's own export (keras_export_converter: Keras on torch, torch.onnx). That file's
# bicubic Resize says cubic_coeff_a=-0.75 (PyTorch's kernel, what Keras on torch computes), and ONNX Runtime
# follows it: a difference from TensorFlow's a = -0.5 there is by design (keras_common.BICUBIC_KERNEL).
SPEC_KERAS_EXPORT = dataclasses.replace(SPEC, name="onnxruntime-keras-export", consumes="keras-onnx",
                                        documented_differences=(BICUBIC_KERNEL,), computes_with="keras-torch")
