"""A minimal script's attached arrays load with numpy alone: bfloat16 weights are kept as float32 (numpy's ``.npz``
reads an ml_dtypes bfloat16 array back as raw ``void16``, which Keras rejects: "Invalid dtype: void16")."""
from __future__ import annotations

import io

import ml_dtypes
import numpy as np

from memo.filing.script import _npz, portable


def test_bfloat16_weights_are_attached_as_float32_holding_the_same_values() -> None:
    weights = np.array([[1.5, -2.25], [0.0030059814, 65280.0]], dtype=ml_dtypes.bfloat16)
    for given in (weights, weights.view("V2")):  # as Keras returns it, and as an .npz read it back
        widened = portable(given)
        assert widened.dtype == np.float32 and np.array_equal(widened.astype(ml_dtypes.bfloat16), weights)
    with np.load(io.BytesIO(_npz({"dense/0": weights, "dense/1": np.ones(2, np.float16)}))) as data:
        assert data["dense/0"].dtype == np.float32 and data["dense/1"].dtype == np.float16
