"""Tensor specs (shape and dtype) of every node, kept up to date incrementally while reducing.

A full symbolic build of InceptionResNetV2 takes about a second; the reducer tries hundreds of edits.
Most edits feed a consumer a tensor of exactly the spec it had before, and then nothing downstream can
change. Only nodes whose input specs changed are rebuilt (one Keras layer call on symbolic tensors
each, about a millisecond), and the walk stops changing things where a layer absorbs the difference
(a convolution with fixed ``filters`` after a channel change, for instance). Keras rejecting a call is
how a broken shape or rank constraint shows up.
"""
from __future__ import annotations

import contextlib
import math
import warnings
from dataclasses import dataclass, field
from typing import Any, Iterator

import numpy as np

from memo.model.build import build_keras_model
from memo.model.ir import Layer, ModelIR
from memo.model.keras_runtime import deserialize_layer, keras_module, weights_deferred
from memo.seed_reduction.graph import layer_signature

Spec = tuple[tuple[int | None, ...], str]


class BuildConflict(Exception):
    """Keras rejected ``layer`` called on tensors of ``inputs`` specs (a shape or rank constraint broke)."""

    def __init__(self, layer: str, inputs: tuple[Spec, ...]) -> None:
        super().__init__(f"{layer}: {inputs}")
        self.layer, self.inputs = layer, inputs


@dataclass
class SpecTable:
    """Output spec and weight count of each node, and the input specs and config they were computed from.

    Configs are compared by identity: edits share the config dict of every layer they do not reconfigure.
    """

    outputs: dict[str, Spec]
    seen_inputs: dict[str, tuple[Spec, ...]]
    weights: dict[str, int]
    configs: dict[str, dict[str, Any]]
    # (layer signature, input specs) -> (output spec, weight count) or None: shared by the tables of one
    # reduction, since rejected edits and repeated blocks ask for the same layer calls again and again.
    calls: dict[Any, tuple[Spec, int] | None] = field(default_factory=dict)

    def total_weights(self) -> int:
        return sum(self.weights.values())

    def total_macs(self) -> int:
        """Multiply-accumulate proxy: each layer's weights times its output positions (dims between batch
        and channels). Exact for dense and convolution layers; it keeps reduction from trading a removed
        downsampling block for wide layers on large feature maps (fewer layers, slower model)."""
        return sum(count * math.prod(d or 1 for d in self.outputs[name][0][1:-1])
                   for name, count in self.weights.items())


@contextlib.contextmanager
def _shapes_only() -> Iterator[None]:
    """A symbolic build that allocates no weights (:func:`weights_deferred`; allocating them
    was most of the reduction time: a 3x3 convolution on 2080 channels draws 28 M numbers), quietly."""
    with weights_deferred(), warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        yield


def _spec(tensor: Any) -> Spec:
    return tuple(None if d is None else int(d) for d in tensor.shape), str(tensor.dtype)


def full_specs(ir: ModelIR) -> SpecTable:
    """Specs of every node by one symbolic build (raises :class:`InvalidModelError` if Keras rejects it)."""
    with _shapes_only():
        model = build_keras_model(ir)
    outputs = {layer.name: _spec(layer.output) for layer in model.layers}
    return SpecTable(outputs, {layer.name: tuple(outputs[src] for src in layer.inputs) for layer in ir.layers},
                     {layer.name: int(layer.count_params()) for layer in model.layers},
                     {layer.name: layer.config for layer in ir.layers})


def weight_shapes(ir: ModelIR) -> dict[str, list[tuple[int, ...]]]:
    """Shape of every weight array of every layer, by a symbolic build that allocates none."""
    with _shapes_only():
        model = build_keras_model(ir)
    return {layer.name: [tuple(int(d) for d in w.shape) for w in layer.weights] for layer in model.layers}


def _call(keras: Any, layer: Layer, inputs: tuple[Spec, ...]) -> tuple[Spec, int] | None:
    tensors = [keras.KerasTensor(shape, dtype=dtype) for shape, dtype in inputs]
    try:
        obj = deserialize_layer(keras, layer)
        with _shapes_only():
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


def propagate(ir: ModelIR, table: SpecTable) -> tuple[SpecTable, int]:
    """Specs of ``ir`` (an edited version of the model ``table`` describes); :class:`BuildConflict` if it
    does not build.

    Returns the new table and how many layers had to be rebuilt.
    Output specs and weight counts depend only on a layer's config and its input specs: a node whose
    config and input specs are unchanged keeps its entry.
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
        if table.seen_inputs.get(layer.name) == inputs and table.configs.get(layer.name) is layer.config:
            outputs[layer.name] = table.outputs[layer.name]
            weights[layer.name] = table.weights[layer.name]
            continue
        key = (layer_signature(layer), inputs)
        if key not in table.calls:
            keras = keras or keras_module()
            table.calls[key] = _call(keras, layer, inputs)
            rebuilt += 1
        called = table.calls[key]
        if called is None:
            raise BuildConflict(layer.name, inputs)
        outputs[layer.name], weights[layer.name] = called
    return SpecTable(outputs, seen, weights, {layer.name: layer.config for layer in ir.layers}, table.calls), rebuilt
