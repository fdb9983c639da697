"""The three Keras backends share one implementation; only ``KERAS_BACKEND`` differs.

Keras fixes its backend at import, so each is its own worker process. All of them load the very same
``.keras`` file (written once by the orchestrator), so they run identical weights.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from memo.backends.spec import BackendSpec
from memo.backends.versions import distribution_versions


def _load(path: Path) -> Any:
    import keras  # noqa: PLC0415  (imported in the worker only)

    # safe_mode: never deserialize Python code from the artifact (memo writes it, but mutants are data).
    return keras.saving.load_model(path, compile=False, safe_mode=True)


def _run(model: Any, inputs: dict[str, Any]) -> list[Any]:
    import keras  # noqa: PLC0415

    outputs = model([inputs[name] for name in inputs], training=False)
    if not isinstance(outputs, (list, tuple)):
        outputs = [outputs]
    return [keras.ops.convert_to_numpy(out) for out in outputs]


def keras_spec(keras_backend: str, libraries: tuple[str, ...]) -> BackendSpec:
    """The spec of Keras running on ``keras_backend`` (tensorflow, jax or torch)."""
    distributions = ("keras", *libraries)

    def setup() -> dict[str, str]:
        import keras  # noqa: PLC0415

        if keras.backend.backend() != keras_backend:
            raise RuntimeError(f"Keras started on {keras.backend.backend()!r}, expected {keras_backend!r}")
        return distribution_versions(distributions)

    return BackendSpec(name=f"keras-{keras_backend}", consumes="keras", load=_load, run=_run, setup=setup,
                       distributions=distributions, env={"KERAS_BACKEND": keras_backend})
