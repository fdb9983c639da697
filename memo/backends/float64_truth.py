"""The float64 truth: a model recomputed by Keras with every floating weight, input and layer widened to float64,
so that a numeric finding can say which library is wrong, not only that two disagree.

Not a library under test: memo never compares it as a backend. Triage runs it on a bug's reduced model
(:mod:`memo.triage.truth`), ``memo run`` on a whole model. The weights and inputs are exactly the float32
ones, widened (float32 -> float64 is exact), so the only difference from the libraries under test is the
precision of the arithmetic. Two engines, neither TensorFlow (the truth must not share the reference's
kernels): Keras on JAX with x64 (``SPEC_JAX``) and Keras on torch (``SPEC``). Each inherits its library's
choices where an operation leaves one open (torch's bicubic kernel is a = -0.75, TensorFlow's and JAX's
-0.5), so a finding against a torch-based library is judged by the JAX truth and one against Keras on JAX by
the torch truth (:func:`memo.truth.truth_engines`).
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from memo.backends.keras_common import _load as _load_float32
from memo.backends.keras_common import _zero_initializers
from memo.backends.spec import BackendSpec, ModelInputs
from memo.backends.training import training_stages_wide
from memo.backends.versions import distribution_versions

TRUTH = "float64-torch"
TRUTH_JAX = "float64-jax"
WIDE = "float64"
# Dtype names that a layer or input computes in, as Keras writes them into a config: each is widened.
_FLOATING = frozenset({"float16", "bfloat16", "float32", "float64", "mixed_float16", "mixed_bfloat16"})


def _widen_config(value: Any) -> Any:
    """A copy of a serialized Keras object in which every floating dtype (a layer's dtype policy, an input's
    dtype) is float64; integer and string dtypes (lookups, hashing, embedding indices) stay as they are."""
    if isinstance(value, list):
        return [_widen_config(item) for item in value]
    if not isinstance(value, dict):
        return value
    widened = {key: _widen_config(item) for key, item in value.items()}
    dtype = value.get("dtype")
    if isinstance(dtype, str) and dtype in _FLOATING:
        widened["dtype"] = WIDE
    elif isinstance(dtype, dict) and (dtype.get("config") or {}).get("name") in _FLOATING:
        widened["dtype"] = WIDE
    return widened


def _load(path: Path) -> Any:
    """The float32 model as stored, rebuilt with float64 layers and given its own weights, widened."""
    import keras

    model = _load_float32(path)
    serialized = keras.saving.serialize_keras_object(model)
    with _zero_initializers():  # the weights are set below: initializers would only cost (JAX compiles each)
        wide = keras.saving.deserialize_keras_object(_widen_config(serialized), safe_mode=True)
    weights = model.get_weights()
    wide.set_weights([w.astype(np.float64) if np.issubdtype(w.dtype, np.floating) else w for w in weights])
    return wide


def _run(model: Any, inputs: ModelInputs) -> list[Any]:
    import keras

    arrays = [np.asarray(inputs[name]) for name in inputs]
    arrays = [a.astype(np.float64) if np.issubdtype(a.dtype, np.floating) else a for a in arrays]
    outputs = model(arrays, training=False)
    if not isinstance(outputs, (list, tuple)):
        outputs = [outputs]
    return [keras.ops.convert_to_numpy(out) for out in outputs]


def _run_watching_special_values(model: Any, inputs: ModelInputs) -> list[Any]:
    """:func:`_run`, plus one last output: 1 when some operation inside the model makes NaN or Inf (JAX's
    debug_nans / debug_infs), even if the model removes it again (Keras's AutoContrast divides by a channel's
    range and replaces the NaN of a constant channel); such a model is judged by the special-value rule."""
    import jax

    outputs = _run(model, inputs)
    try:
        with jax.debug_nans(True), jax.debug_infs(True):
            _run(model, inputs)
        special = 0
    except FloatingPointError:
        special = 1
    return [*outputs, np.array(special, dtype=np.int8)]


SPECIAL_FLAG_ENGINES = frozenset({TRUTH_JAX})  # engines whose last output is that flag


def _setup_for(keras_backend: str, libraries: tuple[str, ...]) -> Any:
    def setup() -> dict[str, str]:
        import keras

        if keras.backend.backend() != keras_backend:
            raise RuntimeError(f"this float64 truth needs Keras on {keras_backend}, not {keras.backend.backend()!r}")
        return distribution_versions(("keras", *libraries))

    return setup


SPEC = BackendSpec(name=TRUTH, consumes="keras", load=_load, run=_run, setup=_setup_for("torch", ("torch",)),
                   distributions=("keras", "torch"), env={"KERAS_BACKEND": "torch", "KERAS_TORCH_DEVICE": "cpu"},
                   train=training_stages_wide)
# JAX computes in float32 unless x64 is enabled before its first array; eager calls (no jit): a reduced model is
# small, and one XLA program per primitive costs less than tracing the whole model for three runs.
SPEC_JAX = BackendSpec(name=TRUTH_JAX, consumes="keras", load=_load, run=_run_watching_special_values, setup=_setup_for("jax", ("jax", "jaxlib")),
                       distributions=("keras", "jax", "jaxlib"), env={"KERAS_BACKEND": "jax", "JAX_ENABLE_X64": "1",
                                                                    "JAX_PLATFORMS": "cpu"},
                       train=training_stages_wide)
