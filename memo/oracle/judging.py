"""Every verdict on one differential execution: failures first, then the numeric flags, attributed."""
from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np

from memo.backends.result import ExecutionResult
from memo.devices import per_backend_tolerances
from memo.kinds import VerdictKind
from memo.npz_arrays import restored
from memo.oracle.attribution import attribute
from memo.oracle.comparison import compare, numeric_flags
from memo.oracle.criterion import Thresholds, agreement_groups, nonfinite_mask
from memo.oracle.failures import failure_verdicts
from memo.oracle.verdict import Comparison, Verdict


def load_outputs(result: ExecutionResult) -> dict[str, list[np.ndarray]]:
    """The outputs each successful backend wrote, in model-output order."""
    out: dict[str, list[np.ndarray]] = {}
    for backend in result.results("backend"):
        if backend.status == "ok" and backend.outputs_path and Path(backend.outputs_path).exists():
            with np.load(backend.outputs_path, allow_pickle=False) as data:
                out[backend.name] = [restored(data[f"out_{i}"]) for i in range(len(data.files))]
    return out


def _as_lists(outputs: dict[str, dict[str, np.ndarray]]) -> dict[str, list[np.ndarray]]:
    return {name: list(arrays.values()) for name, arrays in outputs.items()}


def judge(result: ExecutionResult, thresholds: Thresholds = Thresholds(),
          outputs: dict[str, dict[str, np.ndarray]] | None = None, *, special_values: bool = False) -> list[Verdict]:
    """Every verdict on one execution. ``outputs`` (backend -> output name -> array) defaults to the
    ``.npz`` files the backends wrote. ``special_values``: the model makes NaN/Inf on purpose (see
    :func:`memo.mutation.nan.has_injection`), so numeric disagreements are ``special``, not bugs."""
    verdicts = failure_verdicts(result)
    if verdicts and verdicts[0].kind == VerdictKind.INVALID.value:
        return verdicts
    arrays = _as_lists(outputs) if outputs is not None else load_outputs(result)
    if result.reference not in arrays:
        return verdicts
    if not special_values and any(nonfinite_mask(array).any() for array in arrays[result.reference]):
        # NaN/Inf the reference makes itself (not only NaN the NaN operator injected): libraries legitimately
        # differ in how special values propagate, so every numeric difference is judged by that rule
        special_values = True
    own = per_backend_tolerances(result, thresholds)
    comparisons = compare(arrays, result.reference, thresholds, own)
    by_kind: dict[str, dict[str, str]] = {}
    outputs_of: dict[tuple[str, str], int | None] = {}
    for name, comparison in comparisons.items():
        for kind, message, index in numeric_flags(comparison, own.get(name, thresholds), result.output_names):
            by_kind.setdefault(kind, {})[name] = message
            outputs_of[(kind, name)] = index
    if not by_kind:
        return verdicts
    flagged_any = {name for flagged in by_kind.values() for name in flagged}
    groups = agreement_groups(arrays, thresholds)
    for kind in (VerdictKind.SHAPE.value, VerdictKind.NAN.value, VerdictKind.INCONSISTENCY.value):
        if kind not in by_kind:
            continue

        def metrics(name: str, kind: str = kind) -> Comparison:
            """``name``'s figures, naming the output flagged with ``kind``."""
            index = outputs_of.get((kind, name))
            if index is None:
                return replace(comparisons[name])
            named = result.output_names[index] if index < len(result.output_names) else None
            return replace(comparisons[name], output=index, output_name=named)

        for verdict in attribute(kind, by_kind[kind], arrays, result, thresholds, metrics, flagged_any, groups):
            if special_values and kind in (VerdictKind.NAN.value, VerdictKind.INCONSISTENCY.value):
                verdict.numeric_kind = verdict.kind
                verdict.kind = VerdictKind.SPECIAL.value
            verdicts.append(verdict)
    return verdicts
