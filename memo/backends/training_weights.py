"""The training check's view of a Keras model's weights (worker side): their precision, as the judge's tolerance needs
it, and the float64 truth's perturbation of them (:mod:`memo.backends.training`).

Stdlib and numpy at module level; Keras is imported inside the functions (worker only).
"""
from __future__ import annotations

from typing import Any

import numpy as np

PERTURBATION_ULPS = 4  # the float64 truth's weight perturbation, as memo.truth's of the inputs


def dtype_name(dtype: Any) -> str:
    from keras import backend

    return str(backend.standardize_dtype(dtype))


def precision_record(model: Any) -> dict[str, np.ndarray]:
    """What the judge's tolerance needs to know of the model's precision (:func:`memo.training.judge.thresholds_for`):
    ``compute_dtype``, the least precise floating dtype any layer computes or keeps its weights in (a float16 layer
    deep inside makes every gradient flowing through it float16 noise, even a float32 weight's); per trainable
    weight its dtype (``weight_dtypes``) and largest magnitude (``weight_scales``): an update is read as
    ``(after - before) / lr``, so rounding the weight to its dtype moves it by ``eps * |w| / lr``."""
    order = ("float64", "float32", "float16", "bfloat16")  # each less precise than the one before
    least = "float32"
    for layer in model._flatten_layers(include_self=True, recursive=True):
        for dtype in (getattr(layer, "compute_dtype", None), getattr(layer, "variable_dtype", None)):
            name = dtype_name(dtype) if dtype else ""
            if name in order and order.index(name) > order.index(least):
                least = name
    scales, whole = [], []
    for variable in model.trainable_weights:
        values = to_numpy(variable.value).astype(np.float64)
        finite = np.abs(values[np.isfinite(values)])
        scales.append(float(finite.max()) if finite.size else 0.0)
        whole.append(finite.size == values.size)
    return {"compute_dtype": np.array(least), "weight_dtypes": np.array([dtype_name(v.dtype) for v in
                                                                         model.trainable_weights], dtype=str),
            "weight_scales": np.array(scales, dtype=np.float64),
            "weights_finite": np.array(whole, dtype=bool)}  # an optimizer step of finite weights must stay finite


def to_numpy(value: Any) -> np.ndarray:
    from keras import ops

    if len(getattr(value, "shape", ())) == 0:
        # TensorFlow 2.21 under numpy 2 cannot hand a 0-d bfloat16 tensor to np.array ("object __array__ method not
        # producing an array"): memo's own read, not the model's; a scalar goes through a 1-element vector
        return to_numpy(ops.reshape(value, (1,))).reshape(())
    array = np.array(ops.convert_to_numpy(value), copy=True)  # never a view of a variable reset afterwards
    # bfloat16 (ml_dtypes) is no numpy floating dtype: an .npz keeps it as raw bytes; float32 holds it exactly
    return array.astype(np.float32) if array.dtype.name == "bfloat16" else array


def perturb_weights(model: Any, index: int) -> None:
    """Move every floating weight by :data:`PERTURBATION_ULPS` float32 ulps (random signs seeded by ``index``), relative
    to the larger of the element and the weight's mean magnitude (1 for a weight of zeros), as
    :func:`memo.truth.perturb` moves the inputs: the float64 truth's conditioning check, so that a result decided by a
    tie the inputs do not move (a pre-activation exactly 0 from zero weights: a ReLU at 0) is ill-conditioned too."""
    rng = np.random.default_rng(2000 + index)
    step = PERTURBATION_ULPS * float(np.finfo(np.float32).eps)
    for variable in model.weights:
        values = to_numpy(variable.value)
        if not np.issubdtype(values.dtype, np.floating) or values.size == 0:
            continue
        wide = values.astype(np.float64)
        finite = np.abs(wide[np.isfinite(wide)])
        typical = float(finite.mean()) if finite.size and finite.any() else 1.0  # all zeros: moved at scale 1
        signs = rng.choice(np.array([-1.0, 1.0]), size=values.shape)
        variable.assign((wide + step * signs * np.maximum(np.abs(wide), typical)).astype(values.dtype))
