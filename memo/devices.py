"""What a backend's device changes in the oracle's verdicts: its tolerance, and its CPU twin's say.

A GPU backend (``BackendSpec.device == "cuda"``) runs the same library as a CPU backend, its ``cpu_twin``
(keras-torch-cuda and keras-torch). Besides agreement with the reference it is judged against that twin:

* flagged while the twin agrees with the reference: the library's CUDA path alone is wrong; the verdict stays
  on the GPU backend and says so;
* flagged while the twin is flagged too (of any kind: the library is wrong on the CPU as well, and the GPU's
  numbers are a variant of that): the twin's verdict is the library's finding, not a second one on the GPU;
* failing as the twin fails (same stage, exception and message, device names aside): the twin's finding;
* in "several backends agree on a different result" (the reference is blamed), a library and its twin count once.

In tf32 mode (``--gpu-precision tf32``) a GPU backend's result is checked with the tolerance TF32's mantissa
allows (:data:`memo.backends.cuda.TF32_TOLERANCE_FACTOR`), recorded on each of its results.
"""
from __future__ import annotations

import dataclasses
import re
from typing import Callable, Mapping, Protocol, Sequence

from memo.backends import find_spec
from memo.backends.cuda import DEVICE_CPU, TF32, TF32_TOLERANCE_FACTOR
from memo.backends.result import ExecutionResult


class _Tolerances(Protocol):
    atol: float
    rtol: float
    mad_floor: float


def tolerance_for(thresholds: _Tolerances, precision: str) -> _Tolerances:
    """``thresholds`` as they apply to a result computed in ``precision`` ("" or "strict": unchanged)."""
    if precision != TF32:
        return thresholds
    return dataclasses.replace(thresholds, atol=thresholds.atol * TF32_TOLERANCE_FACTOR,  # type: ignore[type-var]
                               rtol=thresholds.rtol * TF32_TOLERANCE_FACTOR,
                               mad_floor=thresholds.mad_floor * TF32_TOLERANCE_FACTOR)


def per_backend_tolerances(result: ExecutionResult, thresholds: _Tolerances) -> dict[str, _Tolerances]:
    """The thresholds of each backend whose result was computed in a relaxed precision."""
    return {name: tolerance_for(thresholds, backend.precision)
            for name, backend in result.backends.items() if backend.precision == TF32}


def cpu_twin(name: str) -> str | None:
    """The same library on the CPU, for a GPU backend (None for a CPU backend or a plugin)."""
    spec = find_spec(name)
    return spec.cpu_twin if spec is not None else None


def device_of(name: str) -> str:
    """Where a backend's kernels run ("cpu" for a plugin or converter)."""
    spec = find_spec(name)
    return spec.device if spec is not None else DEVICE_CPU


def library_count(names: Sequence[str]) -> int:
    """How many libraries ``names`` are, a GPU backend and its CPU twin counting once."""
    return len({cpu_twin(name) or name for name in names})


def judge_by_twins(flagged: Mapping[str, str], flagged_any: set[str],
                   has_outputs: Callable[[str], bool]) -> tuple[dict[str, str], dict[str, str]]:
    """The flags of one kind after the twin rules: ``(kept flags, twin of each kept GPU flag)``.

    ``has_outputs(name)``: whether a backend produced outputs. A GPU flag whose twin is flagged too (any kind) is
    dropped (the twin's verdict is the finding); one whose twin agrees with the reference gets "on CUDA only" in
    front of its message."""
    kept: dict[str, str] = {}
    twins: dict[str, str] = {}
    for name, message in flagged.items():
        twin = cpu_twin(name)
        if twin is None or not has_outputs(twin):
            kept[name] = message
            continue
        if twin in flagged_any:
            continue
        kept[name] = f"on CUDA only ({twin}, the same library on the CPU, agrees with the reference): {message}"
        twins[name] = twin
    return kept, twins


_DEVICE_NAMES = re.compile(r"\bcuda(?::\d+)?\b")


def same_on_both_devices(gpu_message: str, cpu_message: str) -> bool:
    """Whether a GPU backend's failure message is its twin's, device names aside (``cuda:0`` for ``cpu``)."""
    return _DEVICE_NAMES.sub("cpu", gpu_message) == cpu_message

