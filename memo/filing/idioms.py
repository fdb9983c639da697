"""How each library is called in its own idiom: a registry keyed by memo's backend name.

An :class:`Idiom` is the library's imports, the line printing its version, and the lines that compute ``actual``
(a list of numpy arrays) or raise, from ``model`` (a Keras model, or an ``onnx.ModelProto``) and ``x`` (the model's
input: an array, or a list of them) or ``feed`` (``{input name: array}`` for an ONNX graph).
"""
from __future__ import annotations

from dataclasses import dataclass, replace

KERAS, ONNX = "keras", "onnx"  # what the script builds: a Keras model in code, or an ONNX graph with onnx.helper

KERAS_IMPORTS = ("import keras", "import numpy as np")
ONNX_IMPORTS = ("import numpy as np", "import onnx", "from onnx import TensorProto, helper, numpy_helper")
# A converter's output must be valid ONNX: the checker, and strict shape inference with data propagation.
CHECK_MODEL = ("onnx.checker.check_model(onnx_model, full_check=True)",
               "onnx.shape_inference.infer_shapes(onnx_model, strict_mode=True, data_prop=True)")


@dataclass(frozen=True)
class Idiom:
    """One library's call. ``builds``: KERAS or ONNX; ``imports`` after the environment lines; ``versions``: the
    expression printed first (library and numpy versions); ``call``: lines leaving ``actual`` (a list of arrays), or
    raising; ``collect``: lines after them that a numeric check needs; ``numeric``: whether ``actual`` is the
    model's outputs (a converter's call leaves none)."""

    builds: str
    imports: tuple[str, ...]
    versions: str
    call: tuple[str, ...]
    numeric: bool = True
    collect: tuple[str, ...] = ()  # lines turning the call's result into ``actual``, a list (numeric bugs only)
    stage_calls: tuple[tuple[str, tuple[str, ...]], ...] = ()  # (memo's stage, its call) where it differs

    def call_for(self, stage: str) -> tuple[str, ...]:
        """The call that shows a failure of memo's ``stage`` (Keras on TensorFlow traced by tf.function)."""
        return dict(self.stage_calls).get(stage, self.call)


def _keras(library: str, call: tuple[tuple[str, ...], tuple[str, ...]]) -> Idiom:
    module = "tensorflow as tf" if library == "tensorflow" else library
    return Idiom(KERAS, (*KERAS_IMPORTS, f"import {module}"),
                 f'"keras", keras.__version__, "{library}", {module.split()[-1]}.__version__', call[0], collect=call[1])


EAGER = (("actual = model(x, training=False)",),
         ("actual = [keras.ops.convert_to_numpy(a) for a in keras.tree.flatten(actual)]",))
PREDICT = (("actual = model.predict(x, verbose=0)",),
           ("actual = actual if isinstance(actual, list) else [actual]",))
TORCH_MODULE = ("with torch.no_grad():",
                "    actual = module(*[torch.from_numpy(a) for a in feed.values()])")
TORCH_COLLECT = ("actual = [a.numpy() for a in (actual if isinstance(actual, (list, tuple)) else [actual])]",)
OPENVINO_CONFIG = '{"INFERENCE_PRECISION_HINT": "f32"}'


def _converter(imports: tuple[str, ...], versions: str, call: tuple[str, ...]) -> Idiom:
    return Idiom(KERAS, (*KERAS_IMPORTS, *imports), versions, call, numeric=False)


def _tf2onnx(opset: int | None) -> Idiom:
    opset_arg = f", opset={opset}" if opset else ""
    return _converter(("import onnx", "import tensorflow as tf", "import tf2onnx"),
                      '"tf2onnx", tf2onnx.__version__, "tensorflow", tf.__version__, "keras", keras.__version__',
                      ("signature = [tf.TensorSpec((None, *i.shape[1:]), i.dtype, name=i.name) for i in model.inputs]",
                       f"onnx_model, _ = tf2onnx.convert.from_keras(model, input_signature=signature{opset_arg})",
                       *CHECK_MODEL))


def _keras_export(opset: int | None) -> Idiom:
    opset_arg = f", opset_version={opset}" if opset else ""
    return _converter(("import onnx", "import torch"), '"keras", keras.__version__, "torch", torch.__version__',
                      ("with torch.no_grad():  # Keras exports only a model it has called",
                       "    model(x, training=False)",
                       f'model.export("exported.onnx", format="onnx", verbose=False{opset_arg})',
                       "onnx_model = onnx.load(\"exported.onnx\")", *CHECK_MODEL))


def _engine(module: str, call: tuple[str, ...], imports: tuple[str, ...] = (), collect: tuple[str, ...] = ()) -> Idiom:
    """An ONNX engine's idiom; its version from the distribution's metadata (onnx2torch has no ``__version__``)."""
    return Idiom(ONNX, (*ONNX_IMPORTS, "from importlib.metadata import version", *imports, f"import {module}"),
                 f'"{module}", version("{module}"), "onnx", onnx.__version__', call, collect=collect)


ONNXRUNTIME = _engine("onnxruntime", (
    'session = onnxruntime.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])',
    "actual = session.run(None, feed)"))

IDIOMS: dict[str, Idiom] = {
    "keras-tensorflow": replace(_keras("tensorflow", EAGER), stage_calls=(
        ("tf-function", ("actual = tf.function(lambda x: model(x, training=False))(x)",)),)),
    "keras-torch": _keras("torch", EAGER),
    "keras-jax": _keras("jax", PREDICT),
    "keras-openvino": _keras("openvino", PREDICT),
    "tf2onnx": _tf2onnx(None),
    "tf2onnx-opset11": _tf2onnx(11),
    "keras-export": _keras_export(None),
    "keras-export-opset15": _keras_export(15),
    "tflite-converter": _converter(("import tensorflow as tf",),
                                   '"tensorflow", tf.__version__, "keras", keras.__version__',
                                   ("tf.lite.TFLiteConverter.from_keras_model(model).convert()",)),
    "onnxruntime": ONNXRUNTIME,
    "onnxruntime-keras-export": ONNXRUNTIME,
    "onnx2torch": _engine("onnx2torch", ("module = onnx2torch.convert(model).eval()", *TORCH_MODULE),
                          ("import torch",), TORCH_COLLECT),
    "onnx2pytorch": Idiom(ONNX, (*ONNX_IMPORTS, "from importlib.metadata import version", "import torch",
                                 "from onnx2pytorch import ConvertModel"),
                          '"onnx2pytorch", version("onnx2pytorch"), "torch", torch.__version__, '
                          '"onnx", onnx.__version__',
                          ("module = ConvertModel(model, experimental=True).eval()", *TORCH_MODULE),
                          collect=TORCH_COLLECT),
    "openvino": _engine("openvino", (
        'onnx.save(model, "bug.onnx")',
        f'compiled = openvino.Core().compile_model("bug.onnx", "CPU", {OPENVINO_CONFIG})',
        "result = compiled(list(feed.values()))",
        "actual = [result[output] for output in compiled.outputs]")),
    "torch-compile": _engine("onnx2torch", (
        'module = torch.compile(onnx2torch.convert(model).eval(), backend="inductor")', *TORCH_MODULE),
        ("import torch",), TORCH_COLLECT),
    "mxnet": Idiom(ONNX, (*ONNX_IMPORTS, "import mxnet as mx", "from mxnet.contrib import onnx as onnx_mxnet"),
                   '"mxnet", mx.__version__, "onnx", onnx.__version__', (
        'onnx.save(model, "bug.onnx")',
        'symbol, arg_params, aux_params = onnx_mxnet.import_model("bug.onnx")',
        "module = mx.mod.Module(symbol=symbol, data_names=list(feed), label_names=None, context=mx.cpu())",
        "module.bind(for_training=False, data_shapes=[(k, v.shape) for k, v in feed.items()])",
        "module.set_params(arg_params, aux_params, allow_missing=True, allow_extra=True)",
        "module.forward(mx.io.DataBatch([mx.nd.array(v, dtype=v.dtype) for v in feed.values()]), is_train=False)",
        "actual = [out.asnumpy() for out in module.get_outputs()]")),
}


def idiom_for(library: str) -> Idiom | None:
    """The idiom of memo's backend ``library`` (None: memo writes no minimal script for it)."""
    return IDIOMS.get(library)
