"""How a library is called in its own idiom, for a bug's minimal script: each backend spec declares its
``idiom`` (data: lines of Python); :mod:`memo.filing.script` writes the script around it. Stdlib only.

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


def keras_idiom(library: str, call: tuple[tuple[str, ...], tuple[str, ...]],
                stage_calls: tuple[tuple[str, tuple[str, ...]], ...] = ()) -> Idiom:
    """Keras on ``library`` (tensorflow, jax, torch, openvino): ``call`` is (the call, its collect lines)."""
    module = "tensorflow as tf" if library == "tensorflow" else library
    return Idiom(KERAS, (*KERAS_IMPORTS, f"import {module}"),
                 f'"keras", keras.__version__, "{library}", {module.split()[-1]}.__version__', call[0], collect=call[1],
                 stage_calls=stage_calls)


EAGER = (("actual = model(x, training=False)",),
         ("actual = [keras.ops.convert_to_numpy(a) for a in keras.tree.flatten(actual)]",))
PREDICT = (("actual = model.predict(x, verbose=0)",),
           ("actual = actual if isinstance(actual, list) else [actual]",))
TORCH_MODULE = ("with torch.no_grad():",
                "    actual = module(*[torch.from_numpy(a) for a in feed.values()])")
TORCH_COLLECT = ("actual = [a.numpy() for a in (actual if isinstance(actual, (list, tuple)) else [actual])]",)


def converter_idiom(imports: tuple[str, ...], versions: str, call: tuple[str, ...]) -> Idiom:
    """A converter's call on a Keras ``model``: it leaves no outputs, only a file (checked by :data:`CHECK_MODEL`)."""
    return Idiom(KERAS, (*KERAS_IMPORTS, *imports), versions, call, numeric=False)


def engine_idiom(module: str, call: tuple[str, ...], imports: tuple[str, ...] = (),
                 collect: tuple[str, ...] = ()) -> Idiom:
    """An ONNX engine's idiom; its version from the distribution's metadata (onnx2torch has no ``__version__``)."""
    return Idiom(ONNX, (*ONNX_IMPORTS, "from importlib.metadata import version", *imports, f"import {module}"),
                 f'"{module}", version("{module}"), "onnx", onnx.__version__', call, collect=collect)


def onnx2torch_idiom(wrap: str = "") -> Idiom:
    """onnx2torch's module, eager, or wrapped (``wrap`` formats the module expression: torch.compile's call, whose
    bugs are torch's: its version is printed too)."""
    idiom = engine_idiom("onnx2torch", (f"module = {(wrap or '{}').format('onnx2torch.convert(model).eval()')}",
                                        *TORCH_MODULE), ("import torch",), TORCH_COLLECT)
    return replace(idiom, versions=f'"torch", torch.__version__, {idiom.versions}') if wrap else idiom
