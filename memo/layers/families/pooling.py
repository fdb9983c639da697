"""Pooling: windowed (Max/Average 1D-3D), global (keepdims or not) and adaptive (fixed output size)."""
from __future__ import annotations

import random
from typing import Any, Mapping, Sequence

from memo.layers import values as v
from memo.layers.families.common import draw_modes, entry, float32_only, only, spatial
from memo.layers.spec import ComputeRule, Draw, Impossible, LayerSpec, Shape, random_shape
from memo.model.ir import LayerConfig

KINDS = ("Max", "Average")
DIMS = (1, 2, 3)


def window_compute(dims: int) -> ComputeRule | None:
    """TensorFlow's CPU kernels for MaxPool3D and AvgPool3D exist in float32 only (no float16 kernel; MaxPool3D
    takes no float64 at all): windowed and adaptive 3-D pooling (built on them) compute in float32 only."""
    return float32_only if dims == 3 else None


def windowed(kind: str, dims: int) -> LayerSpec:
    params = [v.shape("pool_size", v.KERNEL), v.shape("strides", v.STRIDE), v.mode("padding", ("valid", "same")),
              v.data_format()]

    def sample(d: Draw, shapes) -> LayerConfig:
        sizes = spatial(only(shapes))
        config = draw_modes(d, ["padding", "data_format"], {})
        config["pool_size"] = d.integers("pool_size", sizes, cap=4)
        config["strides"] = d.integers("strides", sizes, cap=4)
        return config

    return entry(f"{kind}Pooling{dims}D", "pooling", [dims + 2], params, sample, compute=window_compute(dims))


def global_pooling(kind: str, dims: int) -> LayerSpec:
    params = [v.flag("keepdims"), v.data_format()]

    def sample(d: Draw, shapes) -> LayerConfig:
        return draw_modes(d, ["keepdims", "data_format"], {})

    return entry(f"Global{kind}Pooling{dims}D", "pooling", [dims + 2], params, sample,
                 rank_map=lambda rank: frozenset({2, rank}))


def _last_output_size(config: Mapping[str, Any]) -> int | None:
    size = config.get("output_size")
    size = size[-1] if isinstance(size, (list, tuple)) and size else size
    return size if isinstance(size, int) else None


def adaptive_max_refusal(config: Mapping[str, Any], shapes: Sequence[Shape]) -> str | None:
    """TensorFlow (2.21) kills the process with SIGFPE when an adaptive max pooling's last spatial axis is 1, in
    the output or in the input, in 1-D, 2-D and 3-D alike (memo found it; `(17, 2, 64) -> (17, 1)` and
    `(30, 1, 4) -> (1, 4)` crash, `(4, 4, 8) -> (1, 2)` runs): a known reference crash that every model with one
    would otherwise pay for again."""
    shape = only(shapes)
    extent = shape[-1] if config.get("data_format") == "channels_first" else shape[-2]
    if _last_output_size(config) == 1 or extent == 1:
        return "with a last spatial size of 1 crashes TensorFlow (SIGFPE, a known bug)"
    return None


# Output sizes of adaptive max pooling: the largest of them cannot be 1 (see adaptive_max_refusal)
EXTENT_FROM_2 = v.buckets(*((b.label, b.lo, b.hi) for b in v.EXTENT if b.lo >= 2))


def adaptive(kind: str, dims: int) -> LayerSpec:
    refusal = adaptive_max_refusal if kind == "Max" else None
    params = [v.shape("output_size", EXTENT_FROM_2 if refusal else v.EXTENT), v.data_format()]

    def sample(d: Draw, shapes) -> LayerConfig:
        config = draw_modes(d, ["data_format"], {})
        sizes = spatial(only(shapes))
        if refusal and sizes[-1] < 2:
            raise Impossible("an adaptive max pooling needs a last spatial size of 2 or more")
        output = list(d.integers("output_size", sizes, cap=8))
        if refusal and output[-1] == 1:  # the largest size keeps its bucket: it is at least 2 already
            output[-1] = 2
        config["output_size"] = tuple(output)
        return config

    def inputs_from_2(rng: random.Random, spec: LayerSpec) -> list[Shape]:  # a last spatial size of 1 has no setting
        return [random_shape(rng, dims + 2, low=2)]

    return entry(f"Adaptive{kind}Pooling{dims}D", "pooling", [dims + 2], params, sample,
                 compute=window_compute(dims), runtime_rule=refusal, input_maker=inputs_from_2 if refusal else None)


def build() -> list[LayerSpec]:
    return [make(kind, dims) for make in (windowed, global_pooling, adaptive) for kind in KINDS for dims in DIMS]
