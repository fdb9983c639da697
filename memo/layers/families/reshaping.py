"""Reshaping layers (what MEMO's LResh operator inserts): Flatten, RepeatVector, Permute, Reshape,
Cropping1D-3D, UpSampling1D-3D, ZeroPadding1D-3D."""
from __future__ import annotations

import itertools
from typing import Sequence

from memo.layers import values as v
from memo.layers.families.common import draw_modes, entry, only, spatial
from memo.layers.spec import Draw, LayerSpec, Shape
from memo.model.ir import LayerConfig

ANY_RANK = (2, 3, 4, 5)
DIMS = (1, 2, 3)
# Permutations of the non-batch axes of rank-3..5 inputs, as "2,1"-style keys (Keras config: a tuple).
PERMUTATIONS = tuple(p for rank in (3, 4, 5) for p in itertools.permutations(range(1, rank)))
UPSAMPLING_INTERPOLATIONS = ("nearest", "bilinear", "bicubic", "lanczos3", "lanczos5")


def flatten() -> LayerSpec:
    return entry("Flatten", "reshaping", ANY_RANK, [v.data_format()],
                 lambda d, shapes: {"data_format": d.choice("data_format")}, rank_map=lambda rank: frozenset({2}))


def repeat_vector() -> LayerSpec:
    return entry("RepeatVector", "reshaping", (2,), [v.shape("n", v.COUNT)],
                 lambda d, shapes: {"n": d.integer("n", 1, 128, cap=8)}, rank_map=lambda rank: frozenset({3}))


def permute() -> LayerSpec:
    params = [v.mode("dims", [v.tuple_key(p) for p in PERMUTATIONS], PERMUTATIONS, normalize=v.tuple_key)]

    def sample(d: Draw, shapes: Sequence[Shape]) -> LayerConfig:
        rank = len(only(shapes))
        return {"dims": tuple(d.choice("dims", [v.tuple_key(p) for p in PERMUTATIONS if len(p) == rank - 1]))}

    return entry("Permute", "reshaping", (3, 4, 5), params, sample)


def _factor(rng, total: int, parts: int) -> list[int]:
    """``total`` split into ``parts`` positive factors (random order)."""
    out = []
    for _ in range(parts - 1):
        choices = [k for k in range(1, total + 1) if total % k == 0]
        pick = rng.choice(choices)
        out.append(pick)
        total //= pick
    out.append(total)
    rng.shuffle(out)
    return out


def reshape() -> LayerSpec:
    params = [v.shape("target_shape", v.RANK, v.length)]

    def sample(d: Draw, shapes: Sequence[Shape]) -> LayerConfig:
        shape = only(shapes)
        if any(dim is None for dim in shape[1:]):
            d.integer("target_shape", 1, 1)  # only a flat (-1,) target is valid for unknown sizes
            return {"target_shape": (-1,)}
        total = 1
        for dim in shape[1:]:
            total *= int(dim)
        parts = d.integer("target_shape", 1, 4)
        target = _factor(d.rng, total, parts)
        if d.rng.random() < 0.3:
            target[d.rng.randrange(parts)] = -1
        return {"target_shape": tuple(target)}

    return entry("Reshape", "reshaping", ANY_RANK, params, sample, rank_map=lambda rank: frozenset({2, 3, 4, 5}))


def _pairs(values: list[int]) -> tuple:
    return tuple((values[2 * i], values[2 * i + 1]) for i in range(len(values) // 2))


def cropping(dims: int) -> LayerSpec:
    params = [v.shape("cropping", v.AMOUNT)] + ([v.data_format()] if dims > 1 else [])

    def sample(d: Draw, shapes: Sequence[Shape]) -> LayerConfig:
        sizes = spatial(only(shapes))
        if any(s < 2 for s in sizes):
            d.integers("cropping", [0] * (2 * dims), lo=0)  # nothing can be cropped from a size-1 axis
            crops = [0] * (2 * dims)
        else:
            crops = list(d.integers("cropping", [s - 1 for s in sizes for _ in (0, 1)], lo=0, cap=4))
            for i, s in enumerate(sizes):  # keep at least one element on each axis
                while crops[2 * i] + crops[2 * i + 1] >= s:
                    j = 2 * i if crops[2 * i] >= crops[2 * i + 1] else 2 * i + 1
                    crops[j] -= 1
        config = {"cropping": _pairs(crops)[0] if dims == 1 else _pairs(crops)}
        if dims > 1:
            config["data_format"] = d.choice("data_format")
        return config

    return entry(f"Cropping{dims}D", "reshaping", (dims + 2,), params, sample)


def upsampling(dims: int) -> LayerSpec:
    params = [v.shape("size", v.FACTOR)]
    if dims > 1:
        params.append(v.data_format())
    if dims == 2:
        params.append(v.mode("interpolation", UPSAMPLING_INTERPOLATIONS))

    def sample(d: Draw, shapes: Sequence[Shape]) -> LayerConfig:
        if dims == 1:
            return {"size": d.integer("size", 1, 8, cap=4)}
        config: LayerConfig = {"size": d.integers("size", [8] * dims, cap=3)}
        return draw_modes(d, [p.name for p in params if p.kind == "mode"], config)

    return entry(f"UpSampling{dims}D", "reshaping", (dims + 2,), params, sample)


def zero_padding(dims: int) -> LayerSpec:
    params = [v.shape("padding", v.AMOUNT)] + ([v.data_format()] if dims > 1 else [])

    def sample(d: Draw, shapes: Sequence[Shape]) -> LayerConfig:
        pads = _pairs(list(d.integers("padding", [8] * (2 * dims), lo=0, cap=3)))
        config: LayerConfig = {"padding": pads[0] if dims == 1 else pads}
        if dims > 1:
            config["data_format"] = d.choice("data_format")
        return config

    return entry(f"ZeroPadding{dims}D", "reshaping", (dims + 2,), params, sample)


def build() -> list[LayerSpec]:
    return [flatten(), repeat_vector(), permute(), reshape(), *(cropping(n) for n in DIMS),
            *(upsampling(n) for n in DIMS), *(zero_padding(n) for n in DIMS)]


