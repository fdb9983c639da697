"""The test oracle: verdicts on one differential execution, against the reference backend.

Pure numpy (no DL library). Verdict kinds:

* ``crash`` / ``hang``: a backend or converter failed at a stage (exception, dead or silent worker) while
  at least one backend ran the model to the end. ``invalid``: every backend failed, so the model itself
  is at fault (one verdict, backend ``*``), not a library.
* ``unsupported``: a library declined a feature on purpose; kept apart from crashes.
* ``nan``: non-finite values where the reference has none, or NaN/+Inf/-Inf at different positions.
* ``shape``: a different number of outputs, or an output of a different shape, than the reference.
* ``inconsistency``: outputs differ from the reference's. Two checks, either one suffices:
  - element-wise: some finite element with ``|Y - O| > atol + rtol * |O|``;
  - D_MAD (MEMO Eq. 5-6, after CRADLE), with O the reference output: ``delta(Y, O) = mean |Y_i - O_i|``
    and ``D_MAD(O, Y, Y') = |delta(Y,O) - delta(Y',O)| / (delta(Y,O) + delta(Y',O))`` (0 when both
    deltas are 0). For backend Y, Y' is the other backend closest to the reference; Y is flagged when
    ``D_MAD > dmad`` and ``delta(Y, O) > mad_floor`` (so float noise between two near-exact backends,
    where D_MAD is large but meaningless, is not flagged).

Attribution: when every compared backend disagrees with the reference in the same way (they agree with
each other), the verdict is against the reference; when every backend consuming one converted file
(>= 2 of them) disagrees in the same way while others agree, it is against the converter (tf2onnx).
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable

import numpy as np

from memo.backends import PRODUCERS
from memo.backends.result import FAILURES, BackendResult, ExecutionResult

Outputs = dict[str, np.ndarray]
VERDICT_KINDS = ("crash", "hang", "unsupported", "nan", "shape", "inconsistency", "invalid")


@dataclass(frozen=True)
class Thresholds:
    """Tolerances of the numeric checks (float32 libraries differ by ~1e-6 on healthy 10-20 layer models).

    atol, rtol: element-wise tolerance, ``|Y - O| <= atol + rtol * |O|`` must hold for every finite element.
    dmad: D_MAD (0..1) above which a backend's mean deviation is out of line with its closest peer's.
    mad_floor: a mean absolute deviation at or below this is float noise, whatever D_MAD says.
    """

    atol: float = 1e-3
    rtol: float = 1e-3
    dmad: float = 0.9
    mad_floor: float = 1e-4

    def to_json(self) -> dict[str, float]:
        return asdict(self)


@dataclass
class Verdict:
    kind: str
    backend: str
    stage: str
    message: str
    metrics: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> "Verdict":
        return cls(**data)


@dataclass
class Comparison:
    """One backend's outputs against the reference's."""

    backend: str
    shape_problem: str | None = None
    nan_problem: str | None = None
    max_abs_diff: float | None = None
    mad: float | None = None  # delta(Y, O), Eq. 5
    dmad: float | None = None  # Eq. 6 against the closest peer
    dmad_peer: str | None = None
    peer_mad: float | None = None
    mismatched: int = 0  # elements outside atol + rtol * |O|
    elements: int = 0

    def metrics(self) -> dict[str, Any]:
        return {key: value for key, value in asdict(self).items() if key != "backend" and value is not None}


# ---------------------------------------------------------------------------- formulas
def mad(y: np.ndarray, o: np.ndarray) -> float:
    """Eq. 5: mean absolute deviation of Y from O (0 for empty arrays)."""
    if y.size == 0:
        return 0.0
    return float(np.mean(np.abs(y.astype(np.float64) - o.astype(np.float64))))


def d_mad(o: np.ndarray, y: np.ndarray, y_prime: np.ndarray) -> float:
    """Eq. 6: relative difference of the deviations of Y and Y' from O; 0 when both are 0."""
    return d_mad_from_deltas(mad(y, o), mad(y_prime, o))


def d_mad_from_deltas(delta: float, delta_prime: float) -> float:
    total = delta + delta_prime
    return 0.0 if total == 0 else abs(delta - delta_prime) / total


def nonfinite_mask(array: np.ndarray) -> np.ndarray:
    """0 where finite, 1 for NaN, 2 for +Inf, 3 for -Inf."""
    array = np.asarray(array)
    if not np.issubdtype(array.dtype, np.floating) and not np.issubdtype(array.dtype, np.complexfloating):
        return np.zeros(array.shape, dtype=np.int8)
    return (np.isnan(array) * 1 + np.isposinf(array) * 2 + np.isneginf(array) * 3).astype(np.int8)


# ---------------------------------------------------------------------------- comparisons
def _flat(outputs: list[np.ndarray]) -> np.ndarray:
    if not outputs:
        return np.zeros(0)
    return np.concatenate([np.asarray(out, dtype=np.float64).ravel() for out in outputs])


def _shape_problem(outputs: list[np.ndarray], reference: list[np.ndarray]) -> str | None:
    if len(outputs) != len(reference):
        return f"{len(outputs)} outputs, reference has {len(reference)}"
    for index, (out, ref) in enumerate(zip(outputs, reference)):
        if np.shape(out) != np.shape(ref):
            return f"output {index} has shape {tuple(np.shape(out))}, reference {tuple(np.shape(ref))}"
    return None


def _nan_problem(y: np.ndarray, o: np.ndarray) -> str | None:
    y_mask, o_mask = nonfinite_mask(y), nonfinite_mask(o)
    if np.array_equal(y_mask, o_mask):
        return None
    if not o_mask.any():
        return f"{int(np.count_nonzero(y_mask))} non-finite values where the reference has none"
    return f"non-finite values at {int(np.count_nonzero(y_mask != o_mask))} positions differ from the reference's"


def _elementwise(y: np.ndarray, o: np.ndarray, thresholds: Thresholds) -> tuple[float, float, int]:
    """(max |Y-O|, delta(Y,O), number of elements outside tolerance), over positions finite in both."""
    finite = np.isfinite(y) & np.isfinite(o)
    diff = np.abs(y[finite] - o[finite])
    if diff.size == 0:
        return 0.0, 0.0, 0
    bad = diff > thresholds.atol + thresholds.rtol * np.abs(o[finite])
    return float(diff.max()), float(diff.mean()), int(np.count_nonzero(bad))


def agree(a: list[np.ndarray], b: list[np.ndarray], thresholds: Thresholds) -> bool:
    """Whether two backends' outputs match each other (shapes, non-finite masks, element-wise tolerance)."""
    if _shape_problem(a, b):
        return False
    fa, fb = _flat(a), _flat(b)
    return _nan_problem(fa, fb) is None and _elementwise(fa, fb, thresholds)[2] == 0


def compare(outputs: dict[str, list[np.ndarray]], reference: str, thresholds: Thresholds) -> dict[str, Comparison]:
    """Every backend's outputs against the reference's, with D_MAD against the closest peer."""
    ref = outputs[reference]
    o = _flat(ref)
    comparisons: dict[str, Comparison] = {}
    flats: dict[str, np.ndarray] = {}
    for name, outs in outputs.items():
        if name == reference:
            continue
        comparison = Comparison(backend=name, shape_problem=_shape_problem(outs, ref))
        comparisons[name] = comparison
        if comparison.shape_problem:
            continue
        y = _flat(outs)
        flats[name] = y
        comparison.nan_problem = _nan_problem(y, o)
        comparison.max_abs_diff, comparison.mad, comparison.mismatched = _elementwise(y, o, thresholds)
        comparison.elements = int(y.size)
    for name, y in flats.items():
        peers = {peer: comparisons[peer].mad for peer in flats if peer != name}
        if peers:
            closest = min(peers, key=lambda peer: peers[peer])  # type: ignore[arg-type, return-value]
            comparisons[name].dmad = d_mad_from_deltas(comparisons[name].mad or 0.0, peers[closest] or 0.0)
            comparisons[name].dmad_peer = closest
            comparisons[name].peer_mad = peers[closest]
    return comparisons


def _numeric_flags(comparison: Comparison, thresholds: Thresholds) -> list[tuple[str, str]]:
    if comparison.shape_problem:
        return [("shape", comparison.shape_problem)]
    flags = []
    if comparison.nan_problem:
        flags.append(("nan", comparison.nan_problem))
    reasons = []
    if comparison.mismatched:
        reasons.append(f"{comparison.mismatched}/{comparison.elements} elements outside atol={thresholds.atol:g} "
                       f"rtol={thresholds.rtol:g} (max |diff| {comparison.max_abs_diff:.3g})")
    mad_value = comparison.mad or 0.0
    if (comparison.dmad is not None and comparison.dmad > thresholds.dmad and mad_value > thresholds.mad_floor
            and mad_value > (comparison.peer_mad or 0.0)):
        reasons.append(f"D_MAD {comparison.dmad:.3f} against {comparison.dmad_peer} (MAD {mad_value:.3g})")
    if reasons:
        flags.append(("inconsistency", "; ".join(reasons)))
    return flags


# ---------------------------------------------------------------------------- verdicts
def load_outputs(result: ExecutionResult) -> dict[str, list[np.ndarray]]:
    """The outputs each successful backend wrote, in model-output order."""
    out: dict[str, list[np.ndarray]] = {}
    for backend in result.results("backend"):
        if backend.status == "ok" and backend.outputs_path and Path(backend.outputs_path).exists():
            with np.load(backend.outputs_path, allow_pickle=False) as data:
                out[backend.name] = [data[f"out_{i}"] for i in range(len(data.files))]
    return out


def _as_lists(outputs: dict[str, dict[str, np.ndarray]]) -> dict[str, list[np.ndarray]]:
    return {name: list(arrays.values()) for name, arrays in outputs.items()}


def _failure_verdicts(result: ExecutionResult) -> list[Verdict]:
    backends = result.results("backend")
    ran = [b for b in backends if b.status == "ok"]
    failed = [b for b in result.backends.values() if b.status in FAILURES]
    if not ran and failed:
        summary = "; ".join(f"{b.name}: {b.status} at {b.stage_reached}" for b in failed)
        return [Verdict("invalid", "*", "-", f"every backend failed ({summary})",
                        {"failures": {b.name: _failure_metrics(b) for b in failed}})]
    verdicts = []
    for backend in failed:
        stage = backend.failure
        assert stage is not None
        kind = {"error": "crash", "crash": "crash", "hang": "hang", "unsupported": "unsupported"}[stage.status]
        detail = f"{stage.exc_type}: {stage.message}" if stage.exc_type else stage.message
        verdicts.append(Verdict(kind, backend.name, stage.stage, " ".join(detail.split())[:500], _failure_metrics(backend)))
    return verdicts


def _failure_metrics(backend: BackendResult) -> dict[str, Any]:
    stage = backend.failure
    assert stage is not None
    metrics: dict[str, Any] = {"status": stage.status, "exc_type": stage.exc_type, "seconds": round(stage.seconds, 3)}
    if stage.signal is not None:
        metrics["signal"] = stage.signal
    if stage.exit_code is not None:
        metrics["exit_code"] = stage.exit_code
    return metrics


def _attribute(kind: str, flagged: dict[str, str], outputs: dict[str, list[np.ndarray]], result: ExecutionResult,
               thresholds: Thresholds, metrics: Callable[[str], dict[str, Any]]) -> list[Verdict]:
    """Turn per-backend flags of one kind into verdicts, blaming a shared cause where the evidence says so.

    A converter is blamed when all (>= 2) backends on its file differ alike and either some other backend
    agrees with the reference or no other backend ran (then the conversion is the likelier culprit than
    the library it converts from). The reference is blamed when every other backend, on at least two
    different artifacts, agrees on a different result.
    """
    compared = [name for name in outputs if name != result.reference]

    def consistent(names: list[str]) -> bool:
        return all(agree(outputs[names[0]], outputs[name], thresholds) for name in names[1:])

    verdicts: list[Verdict] = []
    for artifact_kind, converter in PRODUCERS.items():
        group = [name for name in compared if result.backends[name].consumes == artifact_kind]
        others = [name for name in compared if name not in group]
        others_agree = any(name not in flagged for name in others)
        if len(group) >= 2 and set(group) <= set(flagged) and (others_agree or not others) and consistent(group):
            verdicts.append(Verdict(kind, converter, "convert",
                                    f"every backend on its conversion ({', '.join(group)}) differs alike: "
                                    + flagged[group[0]], {"backends": {name: metrics(name) for name in group}}))
            flagged = {name: message for name, message in flagged.items() if name not in group}
    kinds = {result.backends[name].consumes for name in compared}
    if len(compared) >= 2 and len(kinds) >= 2 and set(flagged) == set(compared) and consistent(compared):
        return verdicts + [Verdict(kind, result.reference, "execute",
                                   f"every other backend ({', '.join(compared)}) agrees on a different result: "
                                   + flagged[compared[0]], {"backends": {name: metrics(name) for name in compared}})]
    return verdicts + [Verdict(kind, name, "execute", message, metrics(name)) for name, message in flagged.items()]


def judge(result: ExecutionResult, thresholds: Thresholds = Thresholds(),
          outputs: dict[str, dict[str, np.ndarray]] | None = None) -> list[Verdict]:
    """Every verdict on one execution. ``outputs`` (backend -> output name -> array) defaults to the
    ``.npz`` files the backends wrote."""
    verdicts = _failure_verdicts(result)
    if verdicts and verdicts[0].kind == "invalid":
        return verdicts
    arrays = _as_lists(outputs) if outputs is not None else load_outputs(result)
    if result.reference not in arrays:
        return verdicts
    comparisons = compare(arrays, result.reference, thresholds)
    by_kind: dict[str, dict[str, str]] = {}
    for name, comparison in comparisons.items():
        for kind, message in _numeric_flags(comparison, thresholds):
            by_kind.setdefault(kind, {})[name] = message
    for kind in ("shape", "nan", "inconsistency"):
        if kind in by_kind:
            verdicts += _attribute(kind, by_kind[kind], arrays, result, thresholds,
                                   lambda name: comparisons[name].metrics())
    return verdicts
