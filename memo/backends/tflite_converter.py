"""TensorFlow's TFLite converter: the Keras model (on TensorFlow) to a LiteRT flatbuffer, for the litert backend.

It shares the tf2onnx worker process (group ``tf2onnx``) and its ``load``, the very same ``_freeze`` function:
the worker caches what ``load`` returned by that function, so the Keras model is loaded and traced once for
the three conversions. It converts the Keras model traced again with the inputs' batch size (the shared trace
has a dynamic batch, with which no recurrent layer converts; see ``_static_function``) with
``TFLiteConverter.from_concrete_functions``: builtin ops only (no Flex / TF Select fallback, so an op
without a TFLite builtin is a refusal), float32, no optimization or quantization.

The converter takes the SavedModel route (the MLIR SavedModel importer, as ``from_keras_model`` does; the
flatbuffer gets a ``serving_default`` signature) when given a trackable object that owns the function's
variables. That object is a plain ``tf.Module`` holding the TensorFlow variables the function captured, not
the Keras model: with a Keras 3 model (or its Keras variables) as the trackable object, TensorFlow 2.21's
converter writes a flatbuffer whose weights are garbage (a one-``Dense`` model computes 1e30s), although the
same SavedModel runs correctly in TensorFlow; that would make every model a false finding.

A failure raises ``ConverterError``, whose structured errors are the MLIR diagnostics (memo keeps these as
the message, see ``_located_nowhere``): an op that no TFLite builtin implements ("... op is neither a custom
op nor a flex op") is "unsupported"; anything else is the converter crashing. TensorFlow is imported inside
the functions, which run in the worker only.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from memo.backends import trackers
from memo.backends.idioms import converter_idiom
from memo.backends.result import TRACE_STAGE, StageFailure
from memo.library_coverage.measured import MeasuredCode
from memo.backends.spec import ConverterSpec, MessageRules, ModelInputs, ReproRecipe, UnsupportedPhrase, Upstream
from memo.backends.tf2onnx_converter import _KERAS_TF, TENSORFLOW_GRAPH_NODE, FrozenModel, _freeze
from memo.backends.tf2onnx_converter import SPEC as TF2ONNX
from memo.backends.versions import distribution_versions

DISTRIBUTIONS = ("tensorflow-cpu", "keras")
# The names of the model's i-th input and output in the flatbuffer's signature: the inputs as _static_function
# names them, the outputs as the converter names a function's list of outputs.
INPUT_NAME = "input_{}"
OUTPUT_NAME = "output_{}"


def _setup() -> dict[str, str]:
    from tensorflow.lite.python import lite  # noqa: F401  (the converter's modules, imported once per worker)

    _KERAS_TF.setup()  # type: ignore[misc]
    return distribution_versions(DISTRIBUTIONS)


def _static_function(frozen: FrozenModel, inputs: ModelInputs) -> Any:
    """The model traced again as ``_freeze`` traces it, with the inputs' batch size instead of ``None``.

    The inputs are named by position (``input_0``, ``input_1``...): the flatbuffer's signature keeps these
    names, and they are how LiteRT finds the model's input order (the subgraph's own input list is not in
    that order when an input is also an output).

    TFLite cannot lower the tensor lists of a recurrent layer's loop whose element shape has a dynamic
    batch ("'tf.TensorListReserve' op requires element_shape to be static during TF Lite transformation
    pass"): every LSTM, GRU or SimpleRNN would fail. A fixed batch is what TFLite users export anyway.
    """
    import tensorflow as tf

    model = frozen.model
    dynamic = frozen.concrete.structured_input_signature[0]  # the model's inputs, in order
    signature = [tf.TensorSpec((array.shape[0], *spec.shape[1:]), spec.dtype, name=INPUT_NAME.format(i))
                 for i, (spec, array) in enumerate(zip(dynamic, inputs.values()))]
    try:  # TensorFlow's graph mode, as in _freeze: a failure is TensorFlow's, not the converter's
        return tf.function(lambda *args: model(list(args), training=False)).get_concrete_function(*signature)
    except Exception as exc:
        raise StageFailure(TRACE_STAGE, exc) from exc


def _located_nowhere(exc: Exception) -> Exception:
    """A ``ConverterError`` with the message of its structured errors (``exc.errors``: each diagnostic, the
    op it concerns and its error code), without the Python call sites (file:line of every frame from the
    process's first one) that TensorFlow puts before each diagnostic in the exception's own message: those
    differ between memo's worker and a bug's repro.py, so the same bug would not reproduce. Others: ``exc``."""
    messages = [error.error_message for error in getattr(exc, "errors", None) or () if error.error_message]
    if type(exc).__name__ != "ConverterError" or not messages:
        return exc
    clean = type(exc)("\n".join(messages))
    clean.errors = list(exc.errors)  # type: ignore[attr-defined]
    return clean


def _export(frozen: FrozenModel, inputs: ModelInputs, out_path: Path) -> list[str]:
    """Convert the model (builtin ops, float32, static batch) and write the flatbuffer to ``out_path``."""
    import tensorflow as tf

    concrete = _static_function(frozen, inputs)
    owner = tf.Module()  # owns the captured variables, so the converter saves and re-imports them
    owner.captured = list(concrete.variables)
    converter = tf.lite.TFLiteConverter.from_concrete_functions([concrete], trackable_obj=owner)
    converter.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS]
    try:
        with tf.device("/cpu:0"):
            flatbuffer = converter.convert()
    except Exception as exc:
        raise _located_nowhere(exc) from exc
    out_path.parent.mkdir(parents=True, exist_ok=True)
    out_path.write_bytes(flatbuffer)
    return []


# An op no TFLite builtin implements (what TF Select's Flex kernels, which memo leaves off, or a custom op
# would run): "Error code: ERROR_NEEDS_FLEX_OPS" or "ERROR_NEEDS_CUSTOM_OPS" follows. Any other converter
# failure (a legalization that fails, a crash in a pass) is the converter's bug.
UNSUPPORTED: tuple[UnsupportedPhrase, ...] = (
    UnsupportedPhrase(r"'tf\.\w+' op is neither a custom op nor a flex op", exc_types=("ConverterError",),
                      example="'tf.MaxPool3D' op is neither a custom op nor a flex op\nsee current operation: "
                              "%0 = \"tf.MaxPool3D\"(%arg0) <{data_format = \"NDHWC\", ksize = [1, 2, 2, 2, 1], "
                              "padding = \"VALID\", strides = [1, 2, 2, 2, 1]}> {device = \"\"} : "
                              "(tensor<2x4x4x4x2xf32>) -> tensor<2x2x2x2x2xf32>\nError code: ERROR_NEEDS_FLEX_OPS"),
)

# Same worker as tf2onnx, so the same environment (the group's worker starts with its first member's).
SPEC = ConverterSpec(name="tflite-converter", consumes="keras", produces="tflite", load=_freeze, export=_export,
                     setup=_setup, distributions=DISTRIBUTIONS, env=dict(TF2ONNX.env), group="tf2onnx",
                     unsupported_patterns=UNSUPPORTED,
                     library_code=(MeasuredCode("tflite-converter", ("tensorflow/lite/python",)),),
                     messages=MessageRules(declined_nodes=(TENSORFLOW_GRAPH_NODE,),
                                           frame_modules=("tensorflow", "keras")),
                     upstream=Upstream("active", "https://github.com/tensorflow/tensorflow/issues",
                                       "ships with TensorFlow, released regularly (2.21.0 installed)", trackers.TENSORFLOW),
                     # the shared load is tf2onnx's trace and freeze
                     repro=ReproRecipe(requirements=(*DISTRIBUTIONS, "tf2onnx", "numpy")),
                     idiom=converter_idiom(("import tensorflow as tf",),
                                           '"tensorflow", tf.__version__, "keras", keras.__version__',
                                           ("tf.lite.TFLiteConverter.from_keras_model(model).convert()",)))
