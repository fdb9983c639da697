"""Deterministic input arrays for a model, from its IR alone (pure Python and numpy, no Keras)."""
from __future__ import annotations

import numpy as np

from memo.model.ir import ModelIR, input_dtype, input_shape


def make_inputs(ir: ModelIR, seed: int, batch: int = 2) -> dict[str, np.ndarray]:
    """Deterministic input arrays for every model input, keyed by input name.

    Floats are uniform in [-1, 1). Integer inputs feeding an embedding (Embedding, ReversibleEmbedding: a
    layer whose config has a vocabulary size ``input_dim``) stay below it.
    """
    out: dict[str, np.ndarray] = {}
    consumers = ir.consumers()
    layers = ir.by_name()
    for position, layer in enumerate(ir.input_layers):
        shape = tuple(batch if d is None else int(d) for d in input_shape(layer))
        dtype = input_dtype(layer)
        rng = np.random.default_rng([seed & 0xFFFFFFFF, position])
        if "int" in dtype:
            limits = [layers[c].config["input_dim"] for c in consumers[layer.name] if "input_dim" in layers[c].config]
            high = max(1, min(limits) if limits else 10)
            out[layer.name] = rng.integers(0, high, shape).astype(dtype)
        elif dtype == "bool":
            out[layer.name] = rng.integers(0, 2, shape).astype(bool)
        else:
            out[layer.name] = rng.uniform(-1.0, 1.0, shape).astype(dtype)
    return out
