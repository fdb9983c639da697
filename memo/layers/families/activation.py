"""Activation layers: ReLU, Softmax, LeakyReLU, PReLU, ELU and the generic Activation."""
from __future__ import annotations

from typing import Any, Mapping, Sequence

from memo.layers import values as v
from memo.layers.families.common import draw_modes, entry, only
from memo.layers.spec import Draw, Impossible, LayerSpec, Shape
from memo.model.ir import LayerConfig

ANY_RANK = (2, 3, 4, 5)
SOFTMAX_AXES = (-1, 1, 2, 3, 4)
SHARED_AXES = (v.NONE, "1", "1,2", "1,2,3")
SHARED_AXES_CONFIG = (None, (1,), (1, 2), (1, 2, 3))


def relu() -> LayerSpec:
    params = [v.shape("max_value", v.SCALE, v.number), v.shape("negative_slope", v.SCALE, v.number),
              v.shape("threshold", v.SCALE, v.number)]

    def sample(d: Draw, shapes: Sequence[Shape]) -> LayerConfig:
        if "max_value" in d.fixed:
            unbounded = False
        elif "max_value" in d.keep:
            unbounded = d.keep["max_value"] is None
        else:
            unbounded = d.rng.random() < 0.5
        max_value = None if unbounded else d.real("max_value", 0.0, 10.0)
        return {"max_value": max_value, "negative_slope": d.real("negative_slope", 0.0, 1.0),
                "threshold": d.real("threshold", 0.0, 1.0)}

    return entry("ReLU", "activation", ANY_RANK, params, sample)


def slope_layer(name: str, param: str) -> LayerSpec:
    return entry(name, "activation", ANY_RANK, [v.shape(param, v.SCALE, v.number)],
                 lambda d, shapes: {param: d.real(param, 0.0, 5.0)})


def softmax() -> LayerSpec:
    def sample(d: Draw, shapes: Sequence[Shape]) -> LayerConfig:
        rank = len(only(shapes))
        return {"axis": d.choice("axis", [a for a in SOFTMAX_AXES if a < rank])}

    def runtime_rule(config: Mapping[str, Any], shapes: Sequence[Shape]) -> str | None:
        # Keras's symbolic call does not check the axis; the run does ("axis 2 is out of bounds"), after a
        # mutation lowered the rank of the layer's input
        axis, rank = config.get("axis", -1), len(only(shapes))
        if isinstance(axis, int) and not -rank <= axis < rank:
            return f"normalizes over axis {axis} of a rank-{rank} input"
        return None

    return entry("Softmax", "activation", ANY_RANK, [v.mode("axis", SOFTMAX_AXES)], sample, runtime_rule=runtime_rule)


def prelu() -> LayerSpec:
    params = [*v.weight_params("alpha", v.VECTOR_INITIALIZERS),
              v.mode("shared_axes", SHARED_AXES, SHARED_AXES_CONFIG,
                     normalize=lambda raw: v.NONE if raw is None else v.tuple_key(raw))]
    free = [p.name for p in params if p.name != "shared_axes"]

    def sample(d: Draw, shapes: Sequence[Shape]) -> LayerConfig:
        shape = only(shapes)
        if any(dim is None for dim in shape[1:]):
            raise Impossible("PReLU needs every axis size to create alpha")
        allowed = [key for key, axes in zip(SHARED_AXES, SHARED_AXES_CONFIG)
                   if axes is None or max(axes) < len(shape) - 1]
        return draw_modes(d, free, {"shared_axes": d.choice("shared_axes", allowed)})

    return entry("PReLU", "activation", ANY_RANK, params, sample)


def activation() -> LayerSpec:
    def sample(d: Draw, shapes: Sequence[Shape]) -> LayerConfig:
        return {"activation": d.choice("activation", v.ACTIVATIONS)}

    return entry("Activation", "activation", ANY_RANK, [v.activation()], sample)


def build() -> list[LayerSpec]:
    return [relu(), softmax(), slope_layer("LeakyReLU", "negative_slope"), prelu(), slope_layer("ELU", "alpha"),
            activation()]
