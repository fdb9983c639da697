"""Recurrent layers: LSTM, GRU, SimpleRNN, their Bidirectional wrapper, ConvLSTM1D-3D and TimeDistributed.

``return_state`` and ``stateful`` stay False: memo's IR has one output tensor per layer and stateless
inference. ``unroll`` is drawn only when the time axis has a known length of at most :data:`MAX_UNROLL` steps:
an unrolled GRU over 702 steps (a Reshape adapter made that sequence) hung four libraries for 30 s each.
"""
from __future__ import annotations

from typing import Any, Mapping, Sequence

from memo.layers import values as v
from memo.layers.families.common import (channels, draw_inner, draw_modes, entry, float32_only, inner_class, only,
                                         spatial)
from memo.layers.families.conv import draw_window
from memo.layers.spec import Draw, LayerSpec, ParamSpace, Shape
from memo.model.ir import LayerConfig

RNN_APIS = ("LSTM", "GRU", "SimpleRNN")
GATED = frozenset({"LSTM", "GRU"})


def rnn_params(name: str) -> list[ParamSpace]:
    params = [v.shape("units", v.COUNT), v.activation(), v.flag("use_bias"), v.flag("return_sequences"),
              v.flag("go_backwards"), v.flag("unroll"), v.shape("dropout", v.RATE, v.number),
              v.shape("recurrent_dropout", v.RATE, v.number), v.regularizer("activity_regularizer")]
    if name in GATED:
        params.append(v.activation("recurrent_activation"))
    if name == "LSTM":
        params.append(v.flag("unit_forget_bias"))
    if name == "GRU":
        params.append(v.flag("reset_after"))
    params += v.weight_params("kernel", v.MATRIX_INITIALIZERS)
    params += v.weight_params("recurrent", v.MATRIX_INITIALIZERS)
    params += v.weight_params("bias", v.VECTOR_INITIALIZERS)
    return params


MAX_UNROLL = 64  # time steps an unrolled recurrent layer may have (one copy of the cell per step)


def rnn_sampler(name: str):
    params = rnn_params(name)
    drawn = {"activation", "recurrent_activation", "unroll"}
    free = [p.name for p in params if p.kind == "mode" and p.name not in drawn]

    def sample(d: Draw, shapes: Sequence[Shape]) -> LayerConfig:
        shape = only(shapes)
        channels(shape)
        config: LayerConfig = {"units": d.integer("units", 1, 64, cap=32)}
        config["activation"] = d.choice("activation", v.ACTIVATIONS)
        if name in GATED:
            config["recurrent_activation"] = d.choice("recurrent_activation", v.ACTIVATIONS)
        short = shape[1] is not None and shape[1] <= MAX_UNROLL
        config["unroll"] = d.choice("unroll", v.BOOLS if short else (False,))
        config["dropout"] = d.real("dropout", 0.0, 0.9)
        config["recurrent_dropout"] = d.real("recurrent_dropout", 0.0, 0.9)
        return draw_modes(d, free, config)

    return sample


def rnn_entries() -> list[LayerSpec]:
    return [entry(name, "recurrent", [3], rnn_params(name), rnn_sampler(name),
                  rank_map=lambda rank: frozenset({2, 3})) for name in RNN_APIS]


def bidirectional(inner: dict[str, LayerSpec]) -> LayerSpec:
    params = [v.mode("layer", RNN_APIS, normalize=inner_class),
              # merge_mode None returns two tensors; memo's IR has one output per layer
              v.mode("merge_mode", ("concat", "sum", "mul", "ave"))]

    def sample(d: Draw, shapes: Sequence[Shape]) -> LayerConfig:
        kind = d.value("layer")
        layer = draw_inner(d, inner[kind], shapes)
        layer["config"]["go_backwards"] = False  # the wrapper builds the backward copy itself
        return {"layer": layer, "merge_mode": d.choice("merge_mode")}

    return entry("Bidirectional", "recurrent", [3], params, sample, rank_map=lambda rank: frozenset({2, 3}))


def conv_lstm(dims: int) -> LayerSpec:
    params = [v.shape("filters", v.COUNT), v.shape("kernel_size", v.KERNEL), v.shape("strides", v.STRIDE),
              v.shape("dilation_rate", v.DILATION), v.mode("padding", ("valid", "same")), v.data_format(),
              v.activation(), v.activation("recurrent_activation"), v.flag("use_bias"),
              v.flag("unit_forget_bias"), v.flag("return_sequences"), v.flag("go_backwards"),
              v.shape("dropout", v.RATE, v.number), v.shape("recurrent_dropout", v.RATE, v.number),
              v.regularizer("activity_regularizer")]
    params += v.weight_params("kernel", v.KERNEL_INITIALIZERS)
    params += v.weight_params("recurrent", v.KERNEL_INITIALIZERS)
    params += v.weight_params("bias", v.VECTOR_INITIALIZERS)
    free = [p.name for p in params if p.kind == "mode" and p.name not in ("activation", "recurrent_activation",
                                                                          "padding")]

    def sample(d: Draw, shapes: Sequence[Shape]) -> LayerConfig:
        shape = only(shapes)
        channels(shape)
        config: LayerConfig = {"padding": d.choice("padding")}
        config.update(draw_window(d, spatial(shape, lead=2), config["padding"], dilation=True, stride_cap=3))
        config["filters"] = d.integer("filters", 1, 64, cap=16)
        config["activation"] = d.choice("activation", v.ACTIVATIONS)
        config["recurrent_activation"] = d.choice("recurrent_activation", v.ACTIVATIONS)
        config["dropout"] = d.real("dropout", 0.0, 0.9)
        config["recurrent_dropout"] = d.real("recurrent_dropout", 0.0, 0.9)
        return draw_modes(d, free, config)

    return entry(f"ConvLSTM{dims}D", "recurrent", [dims + 3], params, sample,
                 rank_map=lambda rank: frozenset({rank, rank - 1}))


# Layers TimeDistributed may wrap: applied to every time step, so they see the input without its time axis.
TIME_DISTRIBUTED_INNER = ("Dense", "Conv1D", "Conv2D", "SeparableConv1D", "DepthwiseConv1D", "MaxPooling1D",
                          "MaxPooling2D", "AveragePooling1D", "AveragePooling2D", "GlobalAveragePooling1D",
                          "GlobalMaxPooling1D", "Flatten", "LayerNormalization", "Activation", "Dropout")


def time_distributed(catalogue: dict[str, LayerSpec]) -> LayerSpec:
    inner_specs = [catalogue[name] for name in TIME_DISTRIBUTED_INNER]
    ranks = sorted({rank + 1 for spec in inner_specs for rank in spec.input_ranks if rank + 1 <= 5})
    params = [v.mode("layer", TIME_DISTRIBUTED_INNER, normalize=inner_class)]

    def rank_map(rank: int) -> frozenset[int]:
        return frozenset(out + 1 for spec in inner_specs for out in spec.output_ranks(rank - 1))

    def sample(d: Draw, shapes: Sequence[Shape]) -> LayerConfig:
        shape = only(shapes)
        step_shape = (None, *shape[2:])
        allowed = [spec.name for spec in inner_specs if len(step_shape) in spec.input_ranks]
        kind = d.value("layer", allowed)
        return {"layer": draw_inner(d, catalogue[kind], [step_shape])}

    def runtime_rule(config: Mapping[str, Any], shapes: Sequence[Shape]) -> str | None:
        # The sampler picks an inner layer for the step's rank; a mutation that feeds the layer another rank keeps
        # it, and Keras's symbolic call still answers (a 2-D pooling on a rank-4 input: a rank-5 output), while the
        # run fails on every backend ("ksize should be of length 1, 1 or 3").
        inner = catalogue.get(inner_class(config.get("layer")) or "")
        step_rank = len(only(shapes)) - 1
        if inner is not None and step_rank not in inner.input_ranks:
            return f"wraps a {inner.name} that takes rank {sorted(inner.input_ranks)} steps, not {step_rank}"
        return None

    # Computes in float32 only: TimeDistributed runs its inner layer's call() without Keras's input autocast,
    # so with a float16 or float64 policy a convolution inside gets inputs of that dtype and float32 kernels,
    # which every backend rejects (a Keras bug; the inner layer keeps its own float32 policy).
    return entry("TimeDistributed", "recurrent", ranks, params, sample, rank_map=rank_map, compute=float32_only,
                 runtime_rule=runtime_rule)


def build() -> list[LayerSpec]:
    rnns = rnn_entries()
    return [*rnns, bidirectional({spec.name: spec for spec in rnns}), *(conv_lstm(d) for d in (1, 2, 3))]


def build_wrappers(catalogue: dict[str, LayerSpec]) -> list[LayerSpec]:
    """Entries that wrap other entries; built once every family's plain entries exist."""
    return [time_distributed(catalogue)]
