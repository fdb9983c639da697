"""Convolutions: ConvND, SeparableConvND, DepthwiseConvND and ConvNDTranspose, one builder over the variant
and the number of spatial dimensions.

Validity rules the sampler respects (channels_last, input ``(batch, *spatial, channels)``):
* strides > 1 and dilation_rate > 1 exclude each other;
* with "valid" padding the dilated kernel ``d * (k - 1) + 1`` fits in the input, so the output is non-empty;
* ``groups`` divides the input channels and ``filters``;
* "causal" padding exists for Conv1D only.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from memo.layers import values as v
from memo.layers.families.common import channels, draw_modes, entry, only, spatial, divisors
from memo.layers.spec import ComputeRule, Draw, LayerSpec, ParamSpace
from memo.model.ir import LayerConfig


@dataclass(frozen=True)
class ConvVariant:
    prefix: str                 # class name prefix: "Conv", "SeparableConv", "DepthwiseConv"
    suffix: str                 # "" or "Transpose"
    weights: tuple[str, ...]    # weight prefixes with initializer/regularizer/constraint ("kernel", ...)
    filters: bool = True
    depth_multiplier: bool = False
    groups: bool = False
    dilation: bool = True       # transposed convolutions: dilation with strides is unsupported on TF CPU
    causal: bool = False        # set per dimension below (Conv1D only)

    def class_name(self, dims: int) -> str:
        return f"{self.prefix}{dims}D{self.suffix}"


VARIANTS = {
    "conv": ConvVariant("Conv", "", ("kernel",), groups=True),
    "separable": ConvVariant("SeparableConv", "", ("depthwise", "pointwise"), depth_multiplier=True),
    "depthwise": ConvVariant("DepthwiseConv", "", ("depthwise",), filters=False, depth_multiplier=True),
    "transpose": ConvVariant("Conv", "Transpose", ("kernel",), dilation=False),
}
# (variant, spatial dimensions) pairs Keras 3.15 offers.
CONV_APIS = (("conv", 1), ("conv", 2), ("conv", 3), ("separable", 1), ("separable", 2), ("depthwise", 1),
             ("depthwise", 2), ("transpose", 1), ("transpose", 2), ("transpose", 3))


def conv_params(variant: ConvVariant, dims: int) -> list[ParamSpace]:
    paddings = ("valid", "same", "causal") if variant.prefix == "Conv" and not variant.suffix and dims == 1 \
        else ("valid", "same")
    params = [v.shape("kernel_size", v.KERNEL), v.shape("strides", v.STRIDE), v.mode("padding", paddings),
              v.data_format(), v.activation(), v.flag("use_bias")]
    if variant.filters:
        params.append(v.shape("filters", v.COUNT))
    if variant.depth_multiplier:
        params.append(v.shape("depth_multiplier", v.FACTOR))
    if variant.groups:
        params.append(v.shape("groups", v.FACTOR))
    if variant.dilation:
        params.append(v.shape("dilation_rate", v.DILATION))
    for weight in variant.weights:
        params += v.weight_params(weight, v.KERNEL_INITIALIZERS)
    params += v.weight_params("bias", v.VECTOR_INITIALIZERS)
    params.append(v.regularizer("activity_regularizer"))
    return params


def draw_window(d: Draw, sizes: list[int], padding: str, *, dilation: bool, transpose: bool = False,
                kernel: str = "kernel_size", stride_cap: int = 4) -> LayerConfig:
    """strides, dilation_rate and kernel_size that fit inputs of spatial ``sizes`` (shared with ConvLSTM)."""
    forced_dilation = d.fixed.get("dilation_rate") not in (None, "1")
    strides = d.integers("strides", [1] * len(sizes) if forced_dilation else sizes, cap=stride_cap)
    out: LayerConfig = {"strides": strides}
    rates = [1] * len(sizes)
    if dilation:
        highs = [1] * len(sizes) if max(strides) > 1 else [max(1, s - 1) for s in sizes]
        rates = list(d.integers("dilation_rate", highs, cap=3))
        out["dilation_rate"] = tuple(rates)
    if padding == "valid" and not transpose:
        highs = [(s - 1) // r + 1 for s, r in zip(sizes, rates)]
    else:
        highs = list(sizes)
    out[kernel] = d.integers(kernel, highs, cap=8)
    return out


def conv_sampler(variant: ConvVariant, dims: int):
    drawn_first = {"data_format", "padding", "activation"}
    free_modes = [p.name for p in conv_params(variant, dims) if p.kind == "mode" and p.name not in drawn_first]

    def sample(d: Draw, shapes) -> dict:
        shape = only(shapes)
        chans = channels(shape)
        config: LayerConfig = {"data_format": d.choice("data_format"), "padding": d.choice("padding")}
        config.update(draw_window(d, spatial(shape), config["padding"], dilation=variant.dilation,
                                  transpose=bool(variant.suffix)))
        if variant.groups:
            config["groups"] = d.pick("groups", divisors(chans))
        if variant.depth_multiplier:
            config["depth_multiplier"] = d.integer("depth_multiplier", 1, 8, cap=4)
        if variant.filters:
            step = config.get("groups", 1)
            config["filters"] = d.pick("filters", [step * k for k in range(1, 80 // step + 2)])
        config["activation"] = d.choice("activation", v.ACTIVATIONS)
        return draw_modes(d, free_modes, config)

    return sample


def equal_strides(config: Mapping[str, Any], dtype: str) -> bool:
    """TensorFlow's CPU depthwise kernel outside float32 (oneDNN's covers float32) takes only equal row and
    column strides ("Current implementation only supports equal length strides")."""
    strides = config.get("strides", 1)
    return dtype == "float32" or isinstance(strides, int) or len(set(strides)) == 1


def conv_compute(variant: ConvVariant, dims: int) -> ComputeRule | None:
    return equal_strides if variant.depth_multiplier and dims == 2 else None


def build() -> list[LayerSpec]:
    specs = []
    for key, dims in CONV_APIS:
        variant = VARIANTS[key]
        specs.append(entry(variant.class_name(dims), "conv", [dims + 2], conv_params(variant, dims),
                           conv_sampler(variant, dims), compute=conv_compute(variant, dims)))
    return specs
