"""Keras's own ONNX export: a second, independent path from the ``.keras`` model to ONNX.

``Model.export(path, format="onnx")`` on Keras's torch backend: Keras traces the model with torch.onnx's
TorchScript exporter (the one it picks for a dynamic batch dimension, which every memo model has), naming
the ONNX inputs after the Keras inputs. Its file (``keras-onnx/model.onnx``) feeds
``onnxruntime-keras-export``; tf2onnx's path (TensorFlow graph -> ONNX) shares no code with this one.

Stages: ``load`` is Keras's load of the ``.keras`` file on torch, as the keras-torch worker does it, and
one call of the model on the inputs (Keras refuses to export a model that was never called: "The model
provided has never called."); that call is what keras-torch's ``execute`` runs, so a failure there is
recorded at ``load`` (Keras on torch), not at ``convert``. ``convert`` is the export itself: Keras's
wrapper and torch.onnx's TorchScript exporter. A failure in either stage is a finding against
``keras-export``; the ONNX Runtime backend on its file is then skipped.

Keras and torch are imported inside the functions below, which run in the worker only: the orchestrator
imports this module to read the spec and must never import a library under test.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from memo.backends.keras_common import _load as load_keras_model
from memo.backends.keras_common import keras_spec
from memo.backends.result import StageFailure
from memo.backends.spec import ConverterSpec, ReproRecipe, UnsupportedPhrase
from memo.backends.versions import distribution_versions

DISTRIBUTIONS = ("keras", "torch", "onnx")
_KERAS_TORCH = keras_spec("torch", ("torch",))


def _setup() -> dict[str, str]:
    import onnx  # noqa: F401  (torch.onnx's exporter needs it)
    import torch

    torch.set_num_threads(1)
    _KERAS_TORCH.setup()  # type: ignore[misc]
    return distribution_versions(DISTRIBUTIONS)


def _load_model(path: Path) -> Any:
    return load_keras_model(path)  # what keras-torch's worker loads (_KERAS_TORCH.load)


def _export(model: Any, inputs: dict[str, Any], out_path: Path) -> list[str]:
    """Keras's ONNX export of ``model`` to ``out_path``; it raises on what it cannot export."""
    import torch

    try:  # Keras exports only a model called once; the call is Keras on torch (keras-torch's execute)
        with torch.no_grad():
            model([inputs[name] for name in inputs], training=False)
    except Exception as exc:
        raise StageFailure("load", exc) from exc
    out_path.parent.mkdir(parents=True, exist_ok=True)
    model.export(str(out_path), format="onnx", verbose=False)
    return []


# torch.onnx's TorchScript exporter declining on purpose: an aten op without an ONNX symbolic function at the
# opset it exports (UnsupportedOperatorError), a symbolic function refusing a configuration
# (symbolic_helper._onnx_unsupported: adaptive pooling whose output size does not divide the input size), and
# its STFT symbolic refusing ``return_complex=True`` (which Keras's torch ``stft`` always passes). Not
# "Failed to export a node ... because it is not constant" (Keras feeding a traced shape where torch.onnx needs a
# constant, e.g. same-padded pooling) nor "Unsupported prim::Constant kind ... send a bug report": findings.
UNSUPPORTED: tuple[UnsupportedPhrase, ...] = (
    UnsupportedPhrase(r"^Exporting the operator '[^']+' to ONNX opset version \d+ is not supported",
                      exc_types=("UnsupportedOperatorError",),
                      example="Exporting the operator 'aten::rms_norm' to ONNX opset version 20 is not supported"),
    UnsupportedPhrase(r"^Unsupported: ONNX export of operator ", exc_types=("OnnxExporterError",),
                      example="Unsupported: ONNX export of operator adaptive_max_pool2d, output size that are not "
                              "factor of input size. Please feel free to request support or submit a pull request "
                              "on PyTorch GitHub: https://github.com/pytorch/pytorch/issues  [Caused by the value "
                              "'11 defined in (%11 : Long(2, strides=[1], device=cpu) = onnx::Constant[value= 4  4 "
                              "[ CPULongType{2} ]]()\n)' (type 'Tensor') in the TorchScript graph."),
    UnsupportedPhrase(r"^STFT does not currently support complex types", exc_types=("SymbolicValueError",),
                      example="STFT does not currently support complex types  [Caused by the value '60 defined in "
                              "(%60 : Float(*, *, strides=[192, 1], requires_grad=0, device=cpu) = "
                              "onnx::Reshape[allowzero=0](%49, %59)"),
)

# Export time grows with the model (TorchScript tracing, ~15 ms CPU per layer: 16.5 s for the 822 layers of
# Inception-ResNet-v2), and the worker shares two cores with the others: a large model is no hang.
SPEC = ConverterSpec(name="keras-export", consumes="keras", produces="keras-onnx", load=_load_model, export=_export,
                     setup=_setup, distributions=DISTRIBUTIONS, env=dict(_KERAS_TORCH.env), group="keras-export",
                     unsupported_patterns=UNSUPPORTED, repro=ReproRecipe(), timeout_s=120.0)
