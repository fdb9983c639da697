"""Building the Keras model of an IR, and shape inference by that (symbolic) build.

Keras comes from :func:`memo.model.keras_runtime.keras_module` when a model is built, never at import.
"""
from __future__ import annotations

from typing import Any

from memo.errors import InvalidModelError, one_line
from memo.model.ir import ModelIR, Shape, input_dtype, input_shape
from memo.model.keras_runtime import deserialize_layer, keras_module, reset_auto_names

__all__ = ["Shape", "build_keras_model", "infer_shapes", "shapes_of"]


def build_keras_model(ir: ModelIR) -> Any:
    """Build the functional Keras model of ``ir``; :class:`InvalidModelError` names the layer Keras rejected."""
    keras = keras_module()
    reset_auto_names()
    tensors: dict[str, Any] = {}
    for layer in ir.layers:
        try:
            if layer.is_input:
                tensors[layer.name] = keras.Input(batch_shape=input_shape(layer), dtype=input_dtype(layer),
                                                  name=layer.name)
                continue
            obj = deserialize_layer(keras, layer)
            args = [tensors[src] for src in layer.inputs]
            if layer.call_style == "list":
                out = obj(args, **layer.call_kwargs)
            else:
                out = obj(*args, **layer.call_kwargs)
        except InvalidModelError:
            raise
        except Exception as exc:  # Keras raises ValueError, TypeError, KeyError... at build time
            raise InvalidModelError(f"layer {layer.name!r} ({layer.class_name}): {one_line(exc)}") from exc
        if isinstance(out, (list, tuple)):
            raise InvalidModelError(f"layer {layer.name!r} ({layer.class_name}) returns several tensors; "
                                    "memo needs one output per layer")
        tensors[layer.name] = out
    try:
        return keras.Model(inputs=[tensors[layer.name] for layer in ir.input_layers],
                           outputs=[tensors[name] for name in ir.outputs], name=ir.name)
    except Exception as exc:
        raise InvalidModelError(f"model assembly: {one_line(exc)}") from exc


def infer_shapes(ir: ModelIR) -> dict[str, Shape]:
    """Output shape (batch dimension first, ``None``) of every node, by symbolic build."""
    model = build_keras_model(ir)
    return shapes_of(model)


def shapes_of(model: Any) -> dict[str, Shape]:
    """Output shape of every layer of a built Keras model, keyed by layer name."""
    out: dict[str, Shape] = {}
    for layer in model.layers:
        out[layer.name] = tuple(layer.output.shape)
    return out
