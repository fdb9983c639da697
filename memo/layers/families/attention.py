"""Attention layers: Attention and AdditiveAttention (called on a list [query, value(, key)]),
MultiHeadAttention and GroupQueryAttention (called positionally: query, value(, key)).

Shape rules: value and key share their sequence axes; Attention/AdditiveAttention also need query, value and
key to end in the same feature size.
"""
from __future__ import annotations

import random
from typing import Sequence

from memo.layers import values as v
from memo.layers.families.common import channels, divisors, draw_modes, entry
from memo.layers.spec import Draw, Impossible, LayerSpec, Shape
from memo.model.ir import LayerConfig


def _sequence_inputs(same_features: bool, ranks: Sequence[int] = (3,)):
    def make(rng: random.Random, spec: LayerSpec) -> list[Shape]:
        rank = rng.choice(list(ranks))
        middle_q = [rng.randint(1, 6) for _ in range(rank - 2)]
        middle_v = [rng.randint(1, 6) for _ in range(rank - 2)]
        dim = rng.randint(1, 8)
        query = (None, *middle_q, dim)
        value = (None, *middle_v, dim if same_features else rng.randint(1, 8))
        if rng.random() < 0.5:
            return [query, value]
        return [query, value, (None, *middle_v, dim if same_features else rng.randint(1, 8))]

    return make


def _check(shapes: Sequence[Shape], same_features: bool) -> None:
    if len({len(s) for s in shapes}) > 1:
        raise Impossible("query, value and key need the same rank")
    if len(shapes) == 3 and tuple(shapes[1][:-1]) != tuple(shapes[2][:-1]):
        raise Impossible("value and key need the same sequence axes")
    if same_features and len({s[-1] for s in shapes}) > 1:
        raise Impossible("query, value and key need the same feature size")
    for shape in shapes:
        channels(shape)


def dot_attention(name: str) -> LayerSpec:
    params = [v.flag("use_scale"), v.shape("dropout", v.RATE, v.number)]
    if name == "Attention":
        params.append(v.mode("score_mode", ("dot", "concat")))
    modes = [p.name for p in params if p.kind == "mode"]

    def sample(d: Draw, shapes: Sequence[Shape]) -> LayerConfig:
        _check(shapes, same_features=True)
        return draw_modes(d, modes, {"dropout": d.real("dropout", 0.0, 0.9)})

    return entry(name, "attention", (3,), params, sample, arity=(2, 3), call_style="list",
                 input_maker=_sequence_inputs(True))


def _weights() -> list:
    return [*v.weight_params("kernel", v.KERNEL_INITIALIZERS), *v.weight_params("bias", v.VECTOR_INITIALIZERS),
            v.regularizer("activity_regularizer"), v.flag("use_bias"), v.flag("use_gate")]


def multi_head_attention() -> LayerSpec:
    params = [v.shape("num_heads", v.FACTOR), v.shape("key_dim", v.COUNT), v.shape("value_dim", v.COUNT),
              v.shape("dropout", v.RATE, v.number), *_weights()]
    modes = [p.name for p in params if p.kind == "mode"]

    def sample(d: Draw, shapes: Sequence[Shape]) -> LayerConfig:
        _check(shapes, same_features=False)
        config = {"num_heads": d.integer("num_heads", 1, 8, cap=4), "key_dim": d.integer("key_dim", 1, 64, cap=8),
                  "value_dim": d.integer("value_dim", 1, 64, cap=8), "dropout": d.real("dropout", 0.0, 0.9)}
        return draw_modes(d, modes, config)

    return entry("MultiHeadAttention", "attention", (3, 4), params, sample, arity=(2, 3),
                 call_style="positional", input_maker=_sequence_inputs(False, (3, 4)))


def group_query_attention() -> LayerSpec:
    params = [v.shape("num_query_heads", v.FACTOR), v.shape("num_key_value_heads", v.FACTOR),
              v.shape("head_dim", v.COUNT), v.shape("dropout", v.RATE, v.number), *_weights()]
    modes = [p.name for p in params if p.kind == "mode"]

    def sample(d: Draw, shapes: Sequence[Shape]) -> LayerConfig:
        _check(shapes, same_features=True)
        heads = d.integer("num_query_heads", 1, 8, cap=4)
        config = {"num_query_heads": heads, "num_key_value_heads": d.pick("num_key_value_heads", divisors(heads)),
                  "head_dim": d.integer("head_dim", 1, 64, cap=8), "dropout": d.real("dropout", 0.0, 0.9)}
        return draw_modes(d, modes, config)

    return entry("GroupQueryAttention", "attention", (3,), params, sample, arity=(2, 3),
                 call_style="positional", input_maker=_sequence_inputs(True))


def build() -> list[LayerSpec]:
    return [dot_attention("Attention"), dot_attention("AdditiveAttention"), multi_head_attention(),
            group_query_attention()]
