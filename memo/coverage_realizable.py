"""Which coverage items can change an inference result (*realizable*, the headline) and which cannot (*inert*).

memo runs every model at inference (``training=False``) with weights it draws itself
(:mod:`memo.model.weights` overwrites every variable, moving statistics included). So:

* an **inference-identity layer** returns its input unchanged: its type, every pair it is part of, every one
  of its parameter values and its per-layer secondary items (rank, dtype, size, degrees) are inert;
* an **inert parameter** of any other layer is one whose every value leaves both the output and the
  operations that compute it unchanged: initializers (overwritten), regularizers (a loss term only),
  constraints (applied by optimizers only), and the few parameters in :data:`INERT_PARAMS`.

Everything here is keyed by Keras class and parameter names, checked against ``memo.layers.CATALOGUE`` by
``tests/unit/test_coverage.py`` so the tables cannot rot. Verified against the Keras 3.15 sources
(``call(..., training=False)`` of each layer); docs/coverage.md explains the method.
Pure Python: no Keras import.
"""
from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping
from types import MappingProxyType
from typing import Any

_DROPOUT = "returns its input when training is False"
_AUGMENT = "random augmentation: returns its input (cast to its compute dtype) when training is False"

# class name -> why it is the identity at inference
IDENTITY_LAYERS: Mapping[str, str] = MappingProxyType({
    "Dropout": _DROPOUT, "SpatialDropout1D": _DROPOUT, "SpatialDropout2D": _DROPOUT, "SpatialDropout3D": _DROPOUT,
    "AlphaDropout": _DROPOUT, "GaussianDropout": _DROPOUT, "GaussianNoise": _DROPOUT,
    "ActivityRegularization": "returns its input (its l1/l2 only add a loss term)",
    "Identity": "returns its input",
    # RandomCrop (center crop at inference) is not the identity: it is not in the catalogue either.
    **dict.fromkeys(("RandomBrightness", "RandomColorDegeneration", "RandomContrast", "RandomFlip",
                     "RandomGrayscale", "RandomHue", "RandomInvert", "RandomRotation", "RandomSaturation",
                     "RandomSharpness", "RandomTranslation", "RandomZoom"), _AUGMENT),
})

AUGMENTATION_LAYERS: frozenset[str] = frozenset(name for name, why in IDENTITY_LAYERS.items() if why == _AUGMENT)
"""Keras's random image augmentation layers: their ``call`` defaults to ``training=True``."""

# Parameters named ``*_initializer``, ``*_regularizer`` (activity_regularizer included), ``*_constraint``.
INERT_SUFFIXES: tuple[str, ...] = ("_initializer", "_regularizer", "_constraint")

_TRAINING = "read only when training is True"
_BIAS_INIT = "only changes the bias initializer (memo overwrites the weights)"
# class name -> {parameter -> why}: inert parameters the suffix rule does not name. Deliberately absent:
# LSTM/GRU recurrent_dropout (non-zero switches the cell to implementation 1, other operations),
# MultiHeadAttention/GroupQueryAttention dropout (non-zero turns the fused dot_product_attention off),
# SimpleRNN dropout/recurrent_dropout (the cell draws its dropout masks even at inference).
INERT_PARAMS: Mapping[str, Mapping[str, str]] = MappingProxyType({
    "Attention": {"dropout": _TRAINING},
    "AdditiveAttention": {"dropout": _TRAINING},
    "LSTM": {"dropout": _TRAINING, "unit_forget_bias": _BIAS_INIT},
    "GRU": {"dropout": _TRAINING},
    **{name: {"dropout": _TRAINING, "recurrent_dropout": _TRAINING, "unit_forget_bias": _BIAS_INIT}
       for name in ("ConvLSTM1D", "ConvLSTM2D", "ConvLSTM3D")},
    "BatchNormalization": {"momentum": "updates the moving statistics only when training is True"},
    "SpectralNormalization": {"power_iterations": "normalizes the kernel only when training is True"},
    "ReversibleEmbedding": {"tie_weights": "only changes the reverse projection, which memo never calls"},
})


def is_identity(class_name: str) -> bool:
    """Whether the layer API returns its input unchanged at inference."""
    return class_name in IDENTITY_LAYERS


def inert_param(class_name: str, param: str) -> bool:
    """Whether no value of ``param`` can change what a ``class_name`` layer computes at inference."""
    return (class_name in IDENTITY_LAYERS or param.endswith(INERT_SUFFIXES)
            or param in INERT_PARAMS.get(class_name, ()))


def headline_pair(pair: tuple[str, str]) -> bool:
    """Whether a layer pair counts in headline coverage (neither layer is an inference identity)."""
    return not (pair[0] in IDENTITY_LAYERS or pair[1] in IDENTITY_LAYERS)


def headline_param(item: tuple[str, str, Hashable]) -> bool:
    """Whether a (layer, parameter, value) item counts in headline coverage."""
    return not inert_param(item[0], item[1])


def _per_layer(item: Any) -> bool:
    return item[0] in IDENTITY_LAYERS


# criterion name (memo.coverage.CRITERIA) -> is this item of it inert? Secondary items are (layer, ...) tuples.
INERT_RULES: Mapping[str, Callable[[Any], bool]] = MappingProxyType({
    "types": is_identity,
    "pairs": lambda pair: not headline_pair(pair),
    "params": lambda item: not headline_param(item),
    "input_ranks": _per_layer, "dtypes": _per_layer, "shapes": _per_layer,
    "in_degrees": _per_layer, "out_degrees": _per_layer,
})


def is_inert(criterion: str, item: Any) -> bool:
    """Whether ``item`` of ``criterion`` cannot change an inference result."""
    return INERT_RULES[criterion](item)
