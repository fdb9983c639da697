"""Core layers: Dense, EinsumDense, Embedding, Identity, Masking."""
from __future__ import annotations

from typing import Any, Mapping, Sequence

from memo.layers import values as v
from memo.layers.families.common import channels, draw_modes, entry, only
from memo.layers.spec import Draw, LayerSpec, Shape
from memo.model.ir import LayerConfig

ANY_RANK = (2, 3, 4, 5)


def dense() -> LayerSpec:
    params = [v.shape("units", v.COUNT), v.activation(), v.flag("use_bias"), v.regularizer("activity_regularizer"),
              *v.weight_params("kernel", v.MATRIX_INITIALIZERS), *v.weight_params("bias", v.VECTOR_INITIALIZERS)]
    free = [p.name for p in params if p.kind == "mode" and p.name != "activation"]

    def sample(d: Draw, shapes: Sequence[Shape]) -> LayerConfig:
        channels(only(shapes))
        config: LayerConfig = {"units": d.integer("units", 1, 64, cap=32)}
        config["activation"] = d.choice("activation", v.ACTIVATIONS)
        return draw_modes(d, free, config)

    return entry("Dense", "core", ANY_RANK, params, sample)


# equation template -> (input rank, output rank, bias axes by choice)
EINSUM_EQUATIONS = {"ab,bc->ac": (2, 2, "c"), "abc,cd->abd": (3, 3, "d"), "abc,cde->abde": (3, 4, "e"),
                    "abcd,de->abce": (4, 4, "e")}


def _last(raw: Any) -> Any:
    return raw[-1] if isinstance(raw, (list, tuple)) and raw else raw


def einsum_dense() -> LayerSpec:
    params = [v.mode("equation", tuple(EINSUM_EQUATIONS)), v.shape("output_shape", v.COUNT, _last),
              v.mode("bias_axes", (v.NONE, "last"), normalize=lambda raw: v.NONE if raw is None else
                     ("last" if isinstance(raw, str) and len(raw) == 1 else raw)),
              v.activation(), *v.weight_params("kernel", v.KERNEL_INITIALIZERS),
              *v.weight_params("bias", v.VECTOR_INITIALIZERS)]
    free = [p.name for p in params if p.kind == "mode" and p.name not in ("activation", "equation", "bias_axes")]

    def sample(d: Draw, shapes: Sequence[Shape]) -> LayerConfig:
        shape = only(shapes)
        channels(shape)
        equation = d.choice("equation", [eq for eq, (rank, _, _) in EINSUM_EQUATIONS.items() if rank == len(shape)])
        _, out_rank, bias = EINSUM_EQUATIONS[equation]
        units = d.integer("output_shape", 1, 64, cap=16)
        middle = list(shape[1:-1])
        if out_rank > len(shape):
            middle.append(d.rng.randint(1, 4))
        config: LayerConfig = {"equation": equation, "output_shape": (*middle, units)}
        config["bias_axes"] = bias if d.choice("bias_axes") == "last" else None
        config["activation"] = d.choice("activation", v.ACTIVATIONS)
        return draw_modes(d, free, config)

    def rank_map(rank: int) -> frozenset[int]:
        return frozenset(out for (inp, out, _) in EINSUM_EQUATIONS.values() if inp == rank)

    def runtime_rule(config: Mapping[str, Any], shapes: Sequence[Shape]) -> str | None:
        # the symbolic call takes an input of another rank than the equation's (an upstream mutation changed
        # it: "ab,bc->ac" fed (None, 1, 1) declares (None, 4)), the run broadcasts it to (2, 1, 4) and the next
        # layer refuses that
        equation, rank = config.get("equation"), len(only(shapes))
        subscripts = equation.split(",")[0] if isinstance(equation, str) else ""
        if subscripts and "..." not in subscripts and len(subscripts) != rank:
            return f"equation {equation!r} takes a rank-{len(subscripts)} input, not rank {rank}"
        return None

    return entry("EinsumDense", "core", (2, 3, 4), params, sample, rank_map=rank_map, runtime_rule=runtime_rule)


def embedding(name: str = "Embedding", extra_flags: Sequence[str] = ()) -> LayerSpec:
    params = [v.shape("input_dim", v.COUNT), v.shape("output_dim", v.COUNT), v.flag("mask_zero"),
              *(v.flag(flag) for flag in extra_flags), *v.weight_params("embeddings", v.MATRIX_INITIALIZERS)]
    free = [p.name for p in params if p.kind == "mode"]

    def sample(d: Draw, shapes: Sequence[Shape]) -> LayerConfig:
        config = {"input_dim": d.integer("input_dim", 1, 1000, cap=64),
                  "output_dim": d.integer("output_dim", 1, 64, cap=16)}
        return draw_modes(d, free, config)

    return entry(name, "core", (2, 3), params, sample, rank_map=lambda rank: frozenset({rank + 1}),
                 dtypes=frozenset({"int32", "int64", "float32"}))


def identity() -> LayerSpec:
    return entry("Identity", "core", ANY_RANK, [], lambda d, shapes: {})


def masking() -> LayerSpec:
    params = [v.shape("mask_value", v.SIGNED, v.number)]
    # Masking skips timesteps of (batch, time, features) sequences: on another rank its mask has the wrong rank
    # for the layers that read it, which then fail at run time on every backend although the symbolic build
    # passes (Softmax after a rank-2 Masking: "The `mask` must be broadcastable"; ConvLSTM1D after a rank-4 one:
    # SelectV2 "must be broadcastable"): 2 of 342 executed mutants in a 20-minute campaign.
    return entry("Masking", "core", (3,), params,
                 lambda d, shapes: {"mask_value": d.real("mask_value", -2.0, 2.0)})


def build() -> list[LayerSpec]:
    return [dense(), einsum_dense(), embedding(), embedding("ReversibleEmbedding", ("tie_weights",)), identity(),
            masking()]

