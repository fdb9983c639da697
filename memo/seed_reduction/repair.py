"""Width repair: when an edit leaves an element-wise merge with inputs of different channel counts, change
the width (``filters``/``units``) of the layer that produces one of them so that they agree again.

This is what lets reduction drop a branch of an inception block whose concatenation later meets a residual
``Add``: the 1x1 convolution feeding the ``Add`` is narrowed to the new width. The new width usually falls
in the same coverage bucket as the old one; when it does not, the coverage check rejects the edit.
"""
from __future__ import annotations

from memo.model.ir import ModelIR
from memo.seed_reduction.specs import Spec

ELEMENTWISE_MERGES = frozenset({"Add", "Subtract", "Multiply", "Average", "Maximum", "Minimum"})
WIDTH_PARAMS = {"Conv1D": "filters", "Conv2D": "filters", "Conv3D": "filters", "SeparableConv1D": "filters",
                "SeparableConv2D": "filters", "Conv1DTranspose": "filters", "Conv2DTranspose": "filters",
                "Conv3DTranspose": "filters", "Dense": "units"}
# single-input layers whose output has their input's channel count whatever it is
CHANNEL_PRESERVING = frozenset({"BatchNormalization", "LayerNormalization", "Activation", "ReLU", "LeakyReLU", "ELU",
                                "Softmax", "Rescaling", "Dropout", "SpatialDropout1D", "SpatialDropout2D",
                                "SpatialDropout3D", "GaussianNoise", "GaussianDropout", "AlphaDropout",
                                "ActivityRegularization", "ZeroPadding1D", "ZeroPadding2D", "ZeroPadding3D",
                                "MaxPooling1D", "MaxPooling2D", "MaxPooling3D", "AveragePooling1D",
                                "AveragePooling2D", "AveragePooling3D", "DepthwiseConv2D"})

Repair = tuple[str, str, int]  # (node, config key, new value)


def width_layer(ir: ModelIR, name: str) -> str | None:
    """The layer that sets the channel count of ``name``'s output, if a width parameter does."""
    layers = ir.by_name()
    layer = layers[name]
    while layer.class_name in CHANNEL_PRESERVING and len(layer.inputs) == 1:
        if layer.class_name == "DepthwiseConv2D" and layer.config.get("depth_multiplier", 1) != 1:
            return None
        layer = layers[layer.inputs[0]]
    return layer.name if layer.class_name in WIDTH_PARAMS else None


def width_repairs(ir: ModelIR, merge: str, inputs: tuple[Spec, ...]) -> list[Repair]:
    """Config changes, one per merge input, each making that input as wide as the others.

    Only for element-wise merges whose inputs differ in their last dimension alone, with two widths.
    """
    layer = ir.get(merge)
    shapes = [shape for shape, _dtype in inputs]
    if layer.class_name not in ELEMENTWISE_MERGES or len({shape[:-1] for shape in shapes}) != 1:
        return []
    widths = [shape[-1] for shape in shapes]
    if len(set(widths)) != 2 or None in widths:
        return []
    repairs = []
    for src, width in zip(layer.inputs, widths):
        target = next(w for w in widths if w != width)
        producer = width_layer(ir, src)
        if producer is not None:
            repairs.append((producer, WIDTH_PARAMS[ir.get(producer).class_name], int(target)))
    return repairs
