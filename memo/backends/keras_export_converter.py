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

from dataclasses import replace
from pathlib import Path
from typing import Any

from memo.backends import trackers
from memo.backends.idioms import CHECK_MODEL, Idiom, converter_idiom
from memo.backends.keras_common import _load as load_keras_model
from memo.backends.keras_common import keras_spec
from memo.backends.onnx_validity import conversion_problems
from memo.backends.result import ConversionProblem, StageFailure
from memo.backends.keras_common import BICUBIC_KERNEL
from memo.backends.spec import ModelInputs
from memo.library_coverage.measured import MeasuredCode
from memo.backends.spec import (LOW_PRECISION_POLICIES, ConverterSpec, DifferenceExample, DocumentedDifference,
                                ReproRecipe, UnsupportedPhrase, Upstream)
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


def _export(model: Any, inputs: ModelInputs, out_path: Path) -> list[ConversionProblem]:
    """Keras's ONNX export of ``model`` to ``out_path`` at torch.onnx's default opset."""
    return _export_at(model, inputs, out_path, None)


def _export_opset15(model: Any, inputs: ModelInputs, out_path: Path) -> list[ConversionProblem]:
    """Keras's ONNX export at opset 15, tf2onnx's default (:data:`SPEC_OPSET15`)."""
    return _export_at(model, inputs, out_path, STAND_IN_OPSET)


def _export_at(model: Any, inputs: ModelInputs, out_path: Path, opset: int | None) -> list[ConversionProblem]:
    """Keras's ONNX export of ``model`` to ``out_path`` (``opset`` None: torch.onnx's default); it raises on what it
    cannot export, and returns what is invalid in the file it wrote (:mod:`memo.backends.onnx_validity`)."""
    import torch

    try:  # Keras exports only a model called once; the call is Keras on torch (keras-torch's execute)
        with torch.no_grad():
            model([inputs[name] for name in inputs], training=False)
    except Exception as exc:
        raise StageFailure("load", exc) from exc
    out_path.parent.mkdir(parents=True, exist_ok=True)
    model.export(str(out_path), format="onnx", verbose=False, opset_version=opset)
    return conversion_problems(out_path)  # an invalid file is the export's failure, not its engine's


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

# Keras documents its ONNX export for float32 models only: a crash of the export on a model with a float16 or
# bfloat16 layer is outside what it promises, when the message blames that dtype (torch's "not implemented for
# 'Half'", ONNX's "tensor(float16)" in a type error). Not any message that merely prints a Half tensor: Conv3D's
# "onnx memory_format support is not implemented [Caused by the value 'kernel.3 ... Half(2, 1, 2, 2, 2 ..." is
# the same failure in float32 too, a finding. None of 24 float16 single-layer models fails to export in float16
# alone (docs/benchmarks.md), so the example below is the form of torch's dtype refusal, not a captured message.
_FLOAT16_POLICY = {"module": "keras", "class_name": "DTypePolicy", "config": {"name": "float16"}}
DOCUMENTED: tuple[DocumentedDifference, ...] = (
    BICUBIC_KERNEL,  # the export is Keras on torch: Resize(cubic_coeff_a=-0.75), as keras_common explains
    DocumentedDifference(
        behaviour="Keras's ONNX export supports float32 models only; a float16 or bfloat16 layer fails it",
        source="Keras 3.15 keras/src/export/onnx.py, export_onnx docstring "
               "(https://github.com/keras-team/keras/blob/master/keras/src/export/onnx.py)",
        quote='**Note:** The dtype policy must be "float32" for the model.',
        kinds=("crash",), attributes=(("dtype", LOW_PRECISION_POLICIES),), at_layer=False,
        message=r"not implemented for '(Half|BFloat16)'|tensor\(b?float16\)",
        example=DifferenceExample("crash", (("Dense", {"units": 4, "dtype": _FLOAT16_POLICY}),), None,
                                  "RuntimeError: \"addmm_impl_cpu_\" not implemented for 'Half'")),
)
UPSTREAM = Upstream("active", "https://github.com/keras-team/keras/issues",
                    "Keras's export (torch.onnx underneath) is released with Keras 3 (3.15.1 installed)", trackers.KERAS)

# How the export fails: as Keras on torch does, and torch.onnx's trace names the Keras layer's source file it went
# through ("node defined in .../keras/src/layers/preprocessing/image_preprocessing/random_flip.py(92)").
MESSAGES = replace(_KERAS_TORCH.messages, failing_classes=(*_KERAS_TORCH.messages.failing_classes,
                                                            r"/keras/src/layers/(?:\w+/)*(?P<file>\w+)\.py\(\d+\)"))

def _idiom(opset: int | None) -> Idiom:
    """A bug's minimal script: the model called once (Keras exports only a called model), exported, checked."""
    opset_arg = f", opset_version={opset}" if opset else ""
    return converter_idiom(("import onnx", "import torch"), '"keras", keras.__version__, "torch", torch.__version__',
                           ("with torch.no_grad():  # Keras exports only a model it has called",
                            "    model(x, training=False)",
                            f'model.export("exported.onnx", format="onnx", verbose=False{opset_arg})',
                            "onnx_model = onnx.load(\"exported.onnx\")", *CHECK_MODEL))


# Export time grows with the model (TorchScript tracing, ~15 ms CPU per layer: over 10 s for the 822 layers of
# Inception-ResNet-v2), and the worker shares two cores with the others: a large model is no hang.
SPEC = ConverterSpec(name="keras-export", consumes="keras", produces="keras-onnx", load=_load_model, export=_export,
                     setup=_setup, distributions=DISTRIBUTIONS, env=dict(_KERAS_TORCH.env), group="keras-export",
                     unsupported_patterns=UNSUPPORTED, repro=ReproRecipe(), timeout_s=120.0,
                     documented_differences=DOCUMENTED, upstream=UPSTREAM, messages=MESSAGES,
                     computes_with="keras-torch", idiom=_idiom(None),
                     library_code=(MeasuredCode("keras-export", ("keras/src/export",)),
                                   MeasuredCode("torch.onnx", ("torch/onnx",))))

# Keras's export standing in for tf2onnx where TensorFlow is not installed (a GPU machine with torch and JAX only:
# memo.backends.STAND_IN_PRODUCERS): it writes the "onnx" artifact the ONNX backends read, at tf2onnx's default
# opset, since onnx2torch converts no opset-19 Cast and torch.onnx's default opset is 20.
STAND_IN_OPSET = 15
SPEC_OPSET15 = replace(SPEC, name="keras-export-opset15", produces="onnx", export=_export_opset15,
                       idiom=_idiom(STAND_IN_OPSET))
