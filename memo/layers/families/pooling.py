"""Pooling: windowed (Max/Average 1D-3D), global (keepdims or not) and adaptive (fixed output size)."""
from __future__ import annotations

from typing import Any

from memo.layers import values as v
from memo.layers.families.common import draw_modes, entry, float32_only, only, spatial
from memo.layers.spec import ComputeRule, Draw, LayerSpec

KINDS = ("Max", "Average")
DIMS = (1, 2, 3)


def window_compute(dims: int) -> ComputeRule | None:
    """TensorFlow's CPU kernels for MaxPool3D and AvgPool3D exist in float32 only (no float16 kernel; MaxPool3D
    takes no float64 at all): windowed and adaptive 3-D pooling (built on them) compute in float32 only."""
    return float32_only if dims == 3 else None


def windowed(kind: str, dims: int) -> LayerSpec:
    params = [v.shape("pool_size", v.KERNEL), v.shape("strides", v.STRIDE), v.mode("padding", ("valid", "same")),
              v.data_format()]

    def sample(d: Draw, shapes) -> dict[str, Any]:
        sizes = spatial(only(shapes))
        config = draw_modes(d, ["padding", "data_format"], {})
        config["pool_size"] = d.integers("pool_size", sizes, cap=4)
        config["strides"] = d.integers("strides", sizes, cap=4)
        return config

    return entry(f"{kind}Pooling{dims}D", "pooling", [dims + 2], params, sample, compute=window_compute(dims))


def global_pooling(kind: str, dims: int) -> LayerSpec:
    params = [v.flag("keepdims"), v.data_format()]

    def sample(d: Draw, shapes) -> dict[str, Any]:
        return draw_modes(d, ["keepdims", "data_format"], {})

    return entry(f"Global{kind}Pooling{dims}D", "pooling", [dims + 2], params, sample,
                 rank_map=lambda rank: frozenset({2, rank}))


def adaptive(kind: str, dims: int) -> LayerSpec:
    params = [v.shape("output_size", v.EXTENT), v.data_format()]

    def sample(d: Draw, shapes) -> dict[str, Any]:
        config = draw_modes(d, ["data_format"], {})
        config["output_size"] = d.integers("output_size", spatial(only(shapes)), cap=8)
        return config

    return entry(f"Adaptive{kind}Pooling{dims}D", "pooling", [dims + 2], params, sample,
                 compute=window_compute(dims))


def build() -> list[LayerSpec]:
    return [make(kind, dims) for make in (windowed, global_pooling, adaptive) for kind in KINDS for dims in DIMS]
