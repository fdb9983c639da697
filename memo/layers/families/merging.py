"""Merging layers (what MEMO's LMerg operator inserts): element-wise Add, Subtract, Multiply, Average,
Maximum, Minimum (equal shapes), Concatenate (equal except along ``axis``) and Dot (matching ``axes``)."""
from __future__ import annotations

import random
from typing import Sequence

from memo.layers import values as v
from memo.layers.families.common import entry
from memo.layers.spec import Draw, Impossible, LayerSpec, Shape, random_shape
from memo.model.ir import LayerConfig

ANY_RANK = (2, 3, 4, 5)
MAX_INPUTS = 8
ELEMENTWISE = ("Add", "Multiply", "Average", "Maximum", "Minimum")
AXES = (-1, 1, 2, 3, 4)
DOT_AXES = (1, 2, -1, "1,2", "2,1")
DOT_AXES_CONFIG = (1, 2, -1, (1, 2), (2, 1))


def _copies(count_range: tuple[int, int]):
    def make(rng: random.Random, spec: LayerSpec) -> list[Shape]:
        shape = random_shape(rng, rng.choice(sorted(spec.input_ranks)))
        return [shape] * rng.randint(*count_range)

    return make


def elementwise(name: str, arity: tuple[int, int]) -> LayerSpec:
    return entry(name, "merging", ANY_RANK, [], lambda d, shapes: {}, arity=arity, call_style="list",
                 same_shapes=True, input_maker=_copies((arity[0], min(arity[1], 3))))


def concat_axes(shapes: Sequence[Shape]) -> list[int]:
    """Axes along which ``shapes`` may be concatenated (all other axes equal), as declared values."""
    rank = len(shapes[0])
    out = []
    for axis in range(1, rank):
        rest = {tuple(s[:axis]) + tuple(s[axis + 1:]) for s in shapes}
        if len(rest) == 1:
            out.append(axis)
    return ([-1] if rank - 1 in out else []) + out


def concatenate() -> LayerSpec:
    def sample(d: Draw, shapes: Sequence[Shape]) -> LayerConfig:
        if len({len(s) for s in shapes}) > 1:
            raise Impossible("inputs of different ranks")
        return {"axis": d.choice("axis", concat_axes(shapes))}

    def inputs(rng: random.Random, spec: LayerSpec) -> list[Shape]:
        base = random_shape(rng, rng.choice(sorted(spec.input_ranks)))
        axis = rng.randrange(1, len(base))
        return [tuple(rng.randint(1, 8) if i == axis else d for i, d in enumerate(base))
                for _ in range(rng.randint(2, 3))]

    return entry("Concatenate", "merging", ANY_RANK, [v.mode("axis", AXES)], sample, arity=(2, MAX_INPUTS),
                 call_style="list", input_maker=inputs)


def dot() -> LayerSpec:
    params = [v.mode("axes", DOT_AXES, DOT_AXES_CONFIG, normalize=v.tuple_key), v.flag("normalize")]

    def sample(d: Draw, shapes: Sequence[Shape]) -> LayerConfig:
        x, y = shapes
        if len(x) != len(y):
            raise Impossible("Dot needs inputs of equal rank")
        rank = len(x)
        allowed = []
        for value, axes in zip(DOT_AXES, DOT_AXES_CONFIG):
            a, b = axes if isinstance(axes, tuple) else (axes, axes)
            a, b = a % rank, b % rank
            if a == 0 or b == 0 or x[a] is None or x[a] != y[b]:
                continue
            allowed.append(value)
        return {"axes": d.choice("axes", allowed), "normalize": d.choice("normalize")}

    def inputs(rng: random.Random, spec: LayerSpec) -> list[Shape]:
        n, m = rng.randint(1, 6), rng.randint(1, 6)
        if rng.random() < 0.5:
            return [(None, n), (None, n)]
        return [(None, n, m), (None, rng.choice([n, m, rng.randint(1, 6)]), m)]

    return entry("Dot", "merging", (2, 3), params, sample, arity=(2, 2), call_style="list", input_maker=inputs,
                 rank_map=lambda rank: frozenset({2, 3}))


def build() -> list[LayerSpec]:
    return [*(elementwise(name, (2, MAX_INPUTS)) for name in ELEMENTWISE), elementwise("Subtract", (2, 2)),
            concatenate(), dot()]
