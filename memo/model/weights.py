"""Deterministic weights for a built Keras model (the edits an IR records are :mod:`memo.model.weight_edits`).

Nothing here imports Keras: the functions take a model that :mod:`memo.model.build` has built.
"""
from __future__ import annotations

import zlib
from typing import Any

import numpy as np

Weights = dict[str, list[np.ndarray]]


def generate_weights(model: Any, seed: int) -> Weights:
    """Deterministic weights for every layer of a built model.

    Each weight array gets its own generator keyed by (seed, layer name, index), so a layer's weights
    do not change when an unrelated layer is added or removed: a mutant keeps its parent's weights.
    Statistics that Keras initializes to constants (batch-norm moving mean/variance, biases, gammas) are
    randomized too, so that such layers are not an identity that hides bugs.
    """
    weights: Weights = {}
    for layer in model.layers:
        arrays = []
        for index, variable in enumerate(layer.weights):
            shape = tuple(int(d) for d in variable.shape)
            rng = np.random.default_rng([seed & 0xFFFFFFFF, zlib.crc32(layer.name.encode()), index])
            arrays.append(_draw(rng, _variable_name(variable), shape, str(variable.dtype)))
        if arrays:
            weights[layer.name] = arrays
    return weights


def _variable_name(variable: Any) -> str:
    return str(getattr(variable, "path", None) or getattr(variable, "name", "")).lower()


def _draw(rng: np.random.Generator, name: str, shape: tuple[int, ...], dtype: str) -> np.ndarray:
    if "int" in dtype or "bool" in dtype:
        return np.zeros(shape, dtype=dtype)
    leaf = name.rsplit("/", 1)[-1]
    if "variance" in leaf:
        values = rng.uniform(0.5, 1.5, shape)
    elif leaf in ("gamma", "scale") or leaf.endswith("gamma"):
        values = rng.uniform(0.5, 1.5, shape)
    elif "mean" in leaf or "beta" in leaf or "bias" in leaf or len(shape) <= 1:
        values = rng.normal(0.0, 0.1, shape)
    else:
        fan_out = shape[-1] if shape else 1
        fan_in = int(np.prod(shape[:-1])) if len(shape) > 1 else 1
        limit = float(np.sqrt(6.0 / max(1, fan_in + fan_out)))
        values = rng.uniform(-limit, limit, shape)
    return values.astype(dtype if dtype in ("float16", "float32", "float64") else "float32")


def set_weights(model: Any, weights: Weights) -> None:
    """Give the layers of a built model the arrays of ``weights`` (layers not named there keep theirs)."""
    for layer in model.layers:
        if layer.name in weights:
            layer.set_weights(weights[layer.name])
