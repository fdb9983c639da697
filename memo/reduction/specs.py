"""Tensor specs (shape and dtype) of every node, kept up to date incrementally while reducing.

A full symbolic build of InceptionResNetV2 takes about a second; the reducer tries hundreds of edits.
Most edits feed a consumer a tensor of exactly the spec it had before, and then nothing downstream can
change. Only nodes whose input specs changed are rebuilt (one Keras layer call on symbolic tensors
each, about a millisecond), and the walk stops changing things where a layer absorbs the difference
(a convolution with fixed ``filters`` after a channel change, for instance). Keras rejecting a call is
how a broken shape or rank constraint shows up.
"""
from __future__ import annotations

import dataclasses
import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np

from memo.model import keras_bridge
from memo.model.ir import Layer, ModelIR

Spec = tuple[tuple[int | None, ...], str]


@dataclass
class SpecTable:
    """Output spec and weight count of each node, and the input specs they were computed from."""

    outputs: dict[str, Spec]
    seen_inputs: dict[str, tuple[Spec, ...]]
    weights: dict[str, int]

    def total_weights(self) -> int:
        return sum(self.weights.values())


# Shapes and weight counts do not depend on initial values; drawing them (glorot, orthogonal) was more than
# half of the reduction time, so spec computations build every layer with zero initializers.
_ZEROS = {"module": "keras.initializers", "class_name": "Zeros", "config": {}, "registered_name": None}


def _without_initializers(layer: Layer) -> Layer:
    config = {key: (_ZEROS if key.endswith("_initializer") and value is not None else value)
              for key, value in layer.config.items()}
    return dataclasses.replace(layer, config=config)


def _spec(tensor: Any) -> Spec:
    return tuple(None if d is None else int(d) for d in tensor.shape), str(tensor.dtype)


def full_specs(ir: ModelIR) -> SpecTable:
    """Specs of every node by one symbolic build (raises :class:`InvalidModelError` if Keras rejects it)."""
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        model = keras_bridge.build_keras_model(
            ModelIR([_without_initializers(layer) for layer in ir.layers], list(ir.outputs), ir.name))
    outputs = {layer.name: _spec(layer.output) for layer in model.layers}
    return SpecTable(outputs, {layer.name: tuple(outputs[src] for src in layer.inputs) for layer in ir.layers},
                     {layer.name: int(layer.count_params()) for layer in model.layers})


def _call(keras: Any, layer: Layer, inputs: tuple[Spec, ...]) -> tuple[Spec, int] | None:
    tensors = [keras.KerasTensor(shape, dtype=dtype) for shape, dtype in inputs]
    try:
        obj = keras_bridge._deserialize_layer(keras, _without_initializers(layer))  # noqa: SLF001  (same deserialization as builds)
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            out = obj(tensors, **layer.call_kwargs) if layer.call_style == "list" else obj(*tensors,
                                                                                          **layer.call_kwargs)
    except Exception:  # Keras raises ValueError, TypeError... for a violated shape or rank constraint
        return None
    if isinstance(out, (list, tuple)):
        return None
    spec = _spec(out)
    if any(d is not None and d <= 0 for d in spec[0]):
        return None
    return spec, int(obj.count_params())


def propagate(ir: ModelIR, table: SpecTable) -> tuple[SpecTable, int] | None:
    """Specs of ``ir`` (an edited version of the model ``table`` describes), or ``None`` if it does not build.

    Returns the new table and how many layers had to be rebuilt.
    Output specs and weight counts depend only on a layer's config and its input specs.
    """
    keras = None
    outputs: dict[str, Spec] = {}
    seen: dict[str, tuple[Spec, ...]] = {}
    weights: dict[str, int] = {}
    rebuilt = 0
    for layer in ir.layers:
        if layer.is_input:
            outputs[layer.name] = table.outputs[layer.name]
            seen[layer.name] = ()
            weights[layer.name] = 0
            continue
        inputs = tuple(outputs[src] for src in layer.inputs)
        seen[layer.name] = inputs
        if table.seen_inputs.get(layer.name) == inputs and layer.name in table.outputs:
            outputs[layer.name] = table.outputs[layer.name]
            weights[layer.name] = table.weights[layer.name]
            continue
        keras = keras or keras_bridge._keras()  # noqa: SLF001  (keeps TensorFlow out of the orchestrator)
        called = _call(keras, layer, inputs)
        rebuilt += 1
        if called is None:
            return None
        outputs[layer.name], weights[layer.name] = called
    return SpecTable(outputs, seen, weights), rebuilt
