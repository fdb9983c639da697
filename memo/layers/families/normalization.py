"""Normalization layers: Batch, Layer, Group, Unit and RMS normalization, and the SpectralNormalization wrapper.

``axis`` is a mode parameter whose declared values are -1 and 1..4; a value is valid for an input when it
names an existing, non-batch axis of known size.
"""
from __future__ import annotations

from typing import Any, Mapping, Sequence

from memo.layers import values as v
from memo.layers.families.common import channels, divisors, draw_inner, draw_modes, entry, inner_class, only
from memo.layers.spec import Draw, LayerSpec, ParamSpace, Shape
from memo.model.ir import LayerConfig

ANY_RANK = (2, 3, 4, 5)
AXES = (-1, 1, 2, 3, 4)


def _axis_key(raw: Any) -> Any:
    if isinstance(raw, (list, tuple)) and len(raw) == 1:
        raw = raw[0]
    return raw if isinstance(raw, int) and not isinstance(raw, bool) else None


def axis_param() -> ParamSpace:
    return v.mode("axis", AXES, normalize=_axis_key)


def valid_axes(shape: Shape, need_known: bool = True) -> list[int]:
    """Axes of ``shape`` a normalization may use: -1 (if the last axis is known) and each known middle axis."""
    out = [axis for axis in range(1, len(shape)) if shape[axis] is not None or not need_known]
    return ([-1] if len(shape) - 1 in out else []) + out


def affine_params(*, moving: bool = False) -> list[ParamSpace]:
    params = [v.shape("epsilon", v.EPSILON, v.number), v.flag("center"), v.flag("scale"),
              *v.weight_params("beta", v.VECTOR_INITIALIZERS), *v.weight_params("gamma", v.VECTOR_INITIALIZERS)]
    if moving:
        params += [v.initializer("moving_mean_initializer", v.VECTOR_INITIALIZERS),
                   v.initializer("moving_variance_initializer", v.VECTOR_INITIALIZERS),
                   v.shape("momentum", v.MOMENTUM, v.number)]
    return params


def normalizer(name: str, *, moving: bool = False, axes: bool = True, affine: bool = True) -> LayerSpec:
    params = ([axis_param()] if axes else []) + (affine_params(moving=moving) if affine else [])
    free = [p.name for p in params if p.kind == "mode" and p.name != "axis"]

    def sample(d: Draw, shapes: Sequence[Shape]) -> LayerConfig:
        shape = only(shapes)
        config: LayerConfig = {}
        if axes:
            config["axis"] = d.choice("axis", valid_axes(shape))
        if affine:
            config["epsilon"] = d.real("epsilon", 1e-6, 0.1, digits=7)
        if moving:
            config["momentum"] = d.real("momentum", 0.0, 0.999)
        return draw_modes(d, free, config)

    return entry(name, "normalization", ANY_RANK, params, sample)


def group_normalization() -> LayerSpec:
    params = [v.shape("groups", v.FACTOR), axis_param(), *affine_params()]
    free = [p.name for p in params if p.kind == "mode" and p.name != "axis"]

    def sample(d: Draw, shapes: Sequence[Shape]) -> LayerConfig:
        chans = channels(only(shapes))
        config: LayerConfig = {"axis": d.choice("axis", (-1,)), "groups": d.pick("groups", divisors(chans)),
                                  "epsilon": d.real("epsilon", 1e-6, 0.1, digits=7)}
        return draw_modes(d, free, config)

    return entry("GroupNormalization", "normalization", ANY_RANK, params, sample)


def rms_normalization() -> LayerSpec:
    params = [axis_param(), v.shape("epsilon", v.EPSILON, v.number)]

    def sample(d: Draw, shapes: Sequence[Shape]) -> LayerConfig:
        shape = only(shapes)
        last = [a for a in valid_axes(shape) if a in (-1, len(shape) - 1)]
        return {"axis": d.choice("axis", last), "epsilon": d.real("epsilon", 1e-6, 0.1, 7)}

    def runtime_rule(config: Mapping[str, Any], shapes: Sequence[Shape]) -> str | None:
        # Keras 3.15 builds the scale over `axis` but multiplies it against the last axis: only the last axis
        # runs (other axes pass shape inference, then fail in every backend). A layer sampled on the last axis
        # of a rank-3 tensor keeps axis=2 when a mutation feeds it a rank-4 one.
        axis, rank = config.get("axis", -1), len(only(shapes))
        if isinstance(axis, int) and axis not in (-1, rank - 1):
            return f"scales over axis {axis} but multiplies against the last axis ({rank - 1}) at run time"
        return None

    return entry("RMSNormalization", "normalization", ANY_RANK, params, sample, runtime_rule=runtime_rule)


SPECTRAL_INNER = ("Dense", "Conv1D", "Conv2D", "Conv3D", "Conv1DTranspose", "Conv2DTranspose")


def spectral_normalization(catalogue: dict[str, LayerSpec]) -> LayerSpec:
    inner = {name: catalogue[name] for name in SPECTRAL_INNER}
    ranks = sorted({rank for spec in inner.values() for rank in spec.input_ranks})
    params = [v.mode("layer", SPECTRAL_INNER, normalize=inner_class),
              v.shape("power_iterations", v.FACTOR)]

    def sample(d: Draw, shapes: Sequence[Shape]) -> LayerConfig:
        rank = len(only(shapes))
        kind = d.value("layer", [name for name, spec in inner.items() if rank in spec.input_ranks])
        return {"layer": draw_inner(d, inner[kind], shapes), "power_iterations": d.integer("power_iterations", 1, 8, cap=3)}

    return entry("SpectralNormalization", "normalization", ranks, params, sample)


def build() -> list[LayerSpec]:
    return [normalizer("BatchNormalization", moving=True), normalizer("LayerNormalization"),
            group_normalization(), normalizer("UnitNormalization", affine=False), rms_normalization()]


def build_wrappers(catalogue: dict[str, LayerSpec]) -> list[LayerSpec]:
    return [spectral_normalization(catalogue)]
