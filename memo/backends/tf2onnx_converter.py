"""tf2onnx: converts the Keras model (on TensorFlow) to ONNX, once per model, for the ONNX backends.

Two conversions, each its own converter entry sharing one worker process and one frozen graph (the
worker caches what ``load`` returned, so the model is loaded, traced and frozen once per artifact):
``tf2onnx`` at tf2onnx's default opset with a dynamic batch dimension, and ``tf2onnx-opset11`` at
opset 11 with static shapes and every initializer also listed as a graph input (what MXNet imports).

tf2onnx does not always raise when it cannot convert an op: it logs an error and leaves the TensorFlow
node in the output graph. Such nodes (and logged errors) are returned as problems, which the worker
reports as "unsupported" against tf2onnx.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memo.backends.keras_common import keras_spec
from memo.backends.spec import ConverterSpec
from memo.backends.versions import distribution_versions

DISTRIBUTIONS = ("tf2onnx", "onnx", "tensorflow-cpu", "keras")
STANDARD_DOMAINS = ("", "ai.onnx", "ai.onnx.ml")
_KERAS_TF = keras_spec("tensorflow", ("tensorflow-cpu",))


def _setup() -> dict[str, str]:
    import tf2onnx  # noqa: F401, PLC0415

    _KERAS_TF.setup()  # type: ignore[misc]
    return distribution_versions(DISTRIBUTIONS)


class _ErrorLog(logging.Handler):
    def __init__(self) -> None:
        super().__init__(level=logging.ERROR)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


def unconverted_nodes(model: Any) -> list[str]:
    """Nodes whose op is not an ONNX op of the model's opsets: what tf2onnx left unconverted."""
    import onnx  # noqa: PLC0415

    opsets = {entry.domain: entry.version for entry in model.opset_import}
    problems = []
    for node in model.graph.node:
        domain = node.domain or ""
        known = domain in STANDARD_DOMAINS and onnx.defs.has(node.op_type, domain)
        if not known:
            problems.append(f"node {node.name!r} has op {domain + '::' if domain else ''}{node.op_type}, "
                            f"not an ONNX op (opset {opsets.get(domain, '?')})")
    return problems


@dataclass
class FrozenModel:
    """The Keras model traced into a frozen TensorFlow graph once; both conversions start from it."""

    graph_def: Any
    name: str
    input_names: list[str]
    output_names: list[str]
    renames: dict[str, str]


def _freeze(path: Path) -> FrozenModel:
    """Load the ``.keras`` model on TensorFlow and freeze it with a dynamic batch dimension."""
    import numpy as np  # noqa: PLC0415
    import tensorflow as tf  # noqa: PLC0415
    from tf2onnx import tf_loader  # noqa: PLC0415
    from tf2onnx.convert import tensor_names_from_structed  # noqa: PLC0415

    model = _KERAS_TF.load(path)
    signature = [tf.TensorSpec((None, *[int(d) for d in tensor.shape[1:]]), tf.as_dtype(np.dtype(tensor.dtype)),
                               name=tensor.name.split(":")[0]) for tensor in model.inputs]
    function = tf.function(lambda *args: model(list(args), training=False))
    concrete = function.get_concrete_function(*signature)
    # Only the model's own inputs: the concrete function's later inputs are its captures (variables, and eager
    # constants such as an activity regularizer's factor), which the freeze turns into constants.
    inputs = [t.name for t in concrete.inputs[:len(signature)]]
    outputs = [t.name for t in concrete.outputs if t.dtype != tf.dtypes.resource]
    renames = tensor_names_from_structed(concrete, inputs, outputs)
    with tf.device("/cpu:0"):
        graph_def = tf_loader.from_function(concrete, inputs, outputs)
    return FrozenModel(graph_def, concrete.name, inputs, outputs, renames)


def _export(frozen: FrozenModel, inputs: dict[str, Any], out_path: Path, *, opset: int | None, static: bool,
            initializers_as_inputs: bool) -> list[str]:
    """What ``tf2onnx.convert.from_function`` does after freezing (its ``_convert_common``), so that the
    trace and freeze are shared by both conversions. ``static`` fixes every input shape to the arrays'."""
    import onnx  # noqa: PLC0415
    import tensorflow as tf  # noqa: PLC0415
    from tf2onnx.convert import _convert_common  # noqa: PLC0415

    shapes = {name: list(array.shape) for name, array in zip(frozen.input_names, inputs.values())} if static else None
    errors = _ErrorLog()
    logger = logging.getLogger("tf2onnx")
    logger.addHandler(errors)
    try:
        with tf.device("/cpu:0"):
            proto, _ = _convert_common(frozen.graph_def, name=frozen.name, continue_on_error=True, opset=opset,
                                       input_names=frozen.input_names, output_names=frozen.output_names,
                                       tensors_to_rename=frozen.renames, shape_override=shapes)
    finally:
        logger.removeHandler(errors)
    if initializers_as_inputs:
        listed = {arg.name for arg in proto.graph.input}
        for init in proto.graph.initializer:
            if init.name not in listed:
                proto.graph.input.append(onnx.helper.make_tensor_value_info(init.name, init.data_type, init.dims))
    out_path.parent.mkdir(parents=True, exist_ok=True)
    onnx.save(proto, str(out_path))
    return unconverted_nodes(proto) + [f"tf2onnx logged: {message}" for message in errors.messages]


def _export_default(frozen: FrozenModel, inputs: dict[str, Any], out_path: Path) -> list[str]:
    return _export(frozen, inputs, out_path, opset=None, static=False, initializers_as_inputs=False)


def _export_opset11(frozen: FrozenModel, inputs: dict[str, Any], out_path: Path) -> list[str]:
    return _export(frozen, inputs, out_path, opset=11, static=True, initializers_as_inputs=True)


# tf2onnx deep-copies the whole graph before each optimizer pass so that it can drop a pass that raises
# (its "catch errors" mode); that copying was 55 % of conversion time on memo's mutants. Without it a
# failing optimizer fails the conversion, which memo reports against tf2onnx: a finding, not noise.
_COMMON = dict(consumes="keras", load=_freeze, setup=_setup, distributions=DISTRIBUTIONS,
               env={**_KERAS_TF.env, "TF2ONNX_CATCH_ERRORS": "FALSE"}, group="tf2onnx")
SPEC = ConverterSpec(name="tf2onnx", produces="onnx", export=_export_default, **_COMMON)  # type: ignore[arg-type]
SPEC_OPSET11 = ConverterSpec(name="tf2onnx-opset11", produces="onnx-opset11", export=_export_opset11,
                             **_COMMON)  # type: ignore[arg-type]
