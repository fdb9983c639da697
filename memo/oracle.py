"""The test oracle: verdicts on one differential execution, against the reference backend.

Pure numpy (no DL library). Verdict kinds (:mod:`memo.kinds`):

* ``crash`` / ``hang``: a backend or converter failed at a stage (exception, dead or silent worker).
  A signal death or a hang is always a finding against that backend, whatever else happened.
  When every Keras backend (they all consume the same ``.keras`` file) raises at load/execute on a model
  that Keras' symbolic build accepted (every model memo executes was), the shared front end is at fault:
  ONE crash against backend ``keras`` at stage ``execute``, listing each backend's exception; a backend
  whose exception type differs from the others' keeps its own crash.
  A converter failing at stage ``trace`` (memo's Keras load and ``tf.function`` trace before tf2onnx's
  freeze: TensorFlow's graph mode) is ONE finding against keras-tensorflow at stage ``tf-function``, however
  many conversions reported it.
* ``invalid``: memo itself failed (no backend result at all, or none got past starting its worker:
  a setup problem); never a library's bug.
* ``unsupported``: a library declined a feature on purpose (NotImplementedError or a phrase its spec
  declares); kept apart from crashes.
* ``nan``: non-finite values where the reference has none, or NaN/+Inf/-Inf at different positions.
* ``shape``: a different number of outputs, or an output of a different shape, than the reference.
* ``inconsistency``: finite outputs differ from the reference's (below).
* ``special``: with ``judge(..., special_values=True)`` (the model injects NaN/Inf on purpose, see
  :func:`memo.mutation.nan.has_injection`), or when the reference's own outputs hold NaN/Inf, what would be ``nan``/``inconsistency`` is ``special``:
  libraries legitimately differ on special values. Examples: max pooling, ``maximum``/``minimum`` and
  ReLU over NaN (``max(NaN, x)`` is NaN in numpy/TensorFlow's ``tf.maximum`` but x under IEEE 754-2008
  ``maxNum`` semantics, which XLA CPU and some oneDNN/ONNX Runtime kernels follow; ReLU written as
  ``max(x, 0)`` turns NaN into 0 in some and keeps it in others); ``Inf * 0`` and ``Inf - Inf`` (NaN) after
  an algebraic rewrite that folds or reorders them differently; softmax/normalization of a row holding
  Inf (NaN everywhere, or only where the Inf was); sums reordered around Inf and -Inf; the sign of a zero.

Numeric criterion (one, shared by localization, reduction and repro scripts: :func:`mismatch`,
:func:`outputs_agree`, :func:`agree`). Each output is judged separately; a backend is flagged when any
output is, and the verdict names the output. For one output Y against the reference O:

* scale ``s = max(1, mean |O|)`` over O's finite elements. Float arithmetic errs relative to the size of
  the values it adds and cancels, which the output's typical magnitude stands for; a plain absolute
  tolerance calls 1e-7 relative noise on outputs around 1e29 an inconsistency. Below 1 the tolerance
  stays absolute (outputs near 0 are compared to the precision of values around 1).
* precision: ``p = 8 * eps`` of the output's dtype (the lower of Y's and O's); float16 and bfloat16 outputs
  thus get ``rtol = max(rtol, p)`` and ``atol = max(atol, p)`` looser than float32's defaults.
* element-wise: every element finite in both must satisfy ``|Y - O| <= atol * s + rtol * |O|``; except that
  elements past it by at most ``spike`` times ``atol * s`` while ``mean |Y - O|`` stays within ``max(mad_floor,
  p) * s`` are float noise: one element of 627,200 at 1.3 times the tolerance after twenty layers of separable
  convolutions, with a mean deviation of 7e-7, made keras-jax, keras-torch, onnx2pytorch and onnx2torch each
  "disagree" with TensorFlow (12 of the 65 inconsistency verdicts of a 70-minute campaign);
* D_MAD (MEMO Eq. 5-6, after CRADLE): ``delta(Y, O) = mean |Y_i - O_i|`` and
  ``D_MAD(O, Y, Y') = |delta(Y,O) - delta(Y',O)| / (delta(Y,O) + delta(Y',O))`` (0 when both deltas are
  0), Y' being the other backend closest to the reference on that output. D_MAD is reported with an
  inconsistency (when ``D_MAD > dmad``, ``delta(Y, O) > delta(Y', O)`` and ``delta(Y, O) > max(mad_floor, p)
  * s``) but does not make one on its own: an inconsistency needs elements outside the element-wise
  tolerance, the one test that localization, reduction and the repro script (which see two libraries, not
  a third) can apply again. D_MAD alone is about 1 whenever the closest peer is bit-exact, so it would
  also call float noise an inconsistency.

Attribution by agreement (reference included): backends are grouped by :func:`agree`.

* converter: every backend (>= 2) on one converted file differs alike while another backend agrees with
  the reference (or no other backend ran) -> the converter (tf2onnx), stage ``convert``;
* converter, by engine: a backend differs on one converter's file while the same engine (ONNX Runtime) agrees
  with the reference on another converter's file -> that converter (Keras's ONNX export, say);
* reference: no compared backend agrees with the reference and at least two agree with each other ->
  the reference, whichever artifacts they read (keras-jax and keras-torch agreeing on what TensorFlow does
  differently is one TensorFlow finding, not two);
* otherwise each flagged backend. Verdict metrics record the agreement groups used.
"""
from __future__ import annotations

from collections import defaultdict
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping

import numpy as np

from memo.backends import PRODUCERS, REFERENCE, load_spec, producer_of
from memo.backends.result import FAILURES, TRACE_STAGE, BackendResult, ExecutionResult, StageResult
from memo.devices import cpu_twin, judge_by_twins, library_count, per_backend_tolerances, same_on_both_devices
from memo.kinds import VERDICT_KINDS, StageStatus, VerdictKind

Outputs = dict[str, np.ndarray]
__all__ = ["Comparison", "Outputs", "Thresholds", "VERDICT_KINDS", "Verdict", "agree", "agreement_groups", "compare",
           "d_mad", "d_mad_from_deltas", "judge", "load_outputs", "mad", "mismatch", "nonfinite_mask",
           "output_scale", "outputs_agree", "tolerances"]

KERAS_FRONT_END = "keras"  # the backend name of a finding against Keras itself (its shared front end)
TF_FUNCTION_STAGE = "tf-function"
_KIND_OF_STATUS = {StageStatus.ERROR.value: VerdictKind.CRASH.value, StageStatus.CRASH.value: VerdictKind.CRASH.value,
                   StageStatus.HANG.value: VerdictKind.HANG.value,
                   StageStatus.UNSUPPORTED.value: VerdictKind.UNSUPPORTED.value}
_LOW_PRECISION_EPS = {"float16": float(np.finfo(np.float16).eps), "bfloat16": 2.0 ** -7}


@dataclass(frozen=True)
class Thresholds:
    """Tolerances of the numeric checks (float32 libraries differ by ~1e-6 on healthy 10-20 layer models).

    atol, rtol: element-wise tolerance, ``|Y - O| <= atol * s + rtol * |O|`` for every finite element, with
    ``s = max(1, mean |O|)`` the output's scale (see the module docstring).
    dmad: D_MAD (0..1) above which a backend's mean deviation is out of line with its closest peer's.
    mad_floor: a mean absolute deviation at or below ``mad_floor * s`` is float noise, whatever D_MAD says.
    spike: with the mean deviation at or below that floor, elements outside the tolerance by less than ``spike``
    times ``atol * s`` are float noise too.
    eps_factor: tolerances are at least ``eps_factor * eps`` of the output's dtype (matters for float16 and
    bfloat16 only).
    """

    atol: float = 1e-3
    rtol: float = 1e-3
    dmad: float = 0.9
    mad_floor: float = 1e-4
    eps_factor: float = 8.0
    spike: float = 10.0

    def to_json(self) -> dict[str, float]:
        return asdict(self)


@dataclass
class Verdict:
    kind: str
    backend: str
    stage: str
    message: str
    metrics: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.kind = str(self.kind.value if isinstance(self.kind, VerdictKind) else self.kind)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> "Verdict":
        return cls(**data)


@dataclass
class Comparison:
    """One backend's outputs against the reference's.

    The scalar fields describe the output that decided (the first flagged one, else the one deviating most
    relative to its tolerance; ``output`` is its index); ``per_output`` holds the figures of every output.
    """

    backend: str
    shape_problem: str | None = None
    nan_problem: str | None = None
    max_abs_diff: float | None = None
    mad: float | None = None  # delta(Y, O), Eq. 5
    dmad: float | None = None  # Eq. 6 against the closest peer
    dmad_peer: str | None = None
    peer_mad: float | None = None
    mismatched: int = 0  # elements outside atol * s + rtol * |O|
    elements: int = 0
    output: int | None = None
    scale: float | None = None
    tolerance: float | None = None  # atol * s of that output
    mad_floor: float | None = None  # max(mad_floor, p) * s of that output
    per_output: list[dict[str, Any]] | None = None

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
    if not _is_float(array):
        return np.zeros(array.shape, dtype=np.int8)
    array = _as_float64(array)
    return (np.isnan(array) * 1 + np.isposinf(array) * 2 + np.isneginf(array) * 3).astype(np.int8)


def _is_float(array: np.ndarray) -> bool:
    return (np.issubdtype(array.dtype, np.floating) or np.issubdtype(array.dtype, np.complexfloating)
            or array.dtype.name in _LOW_PRECISION_EPS)


def _as_float64(array: np.ndarray) -> np.ndarray:
    array = np.asarray(array)
    if np.issubdtype(array.dtype, np.complexfloating):
        return np.abs(array).astype(np.float64)
    return array.astype(np.float64)


def _precision(*arrays: np.ndarray) -> float:
    """``eps`` of the least precise floating dtype among ``arrays`` (float32's for non-float outputs)."""
    eps = float(np.finfo(np.float32).eps)
    for array in arrays:
        dtype = np.asarray(array).dtype
        if dtype.name in _LOW_PRECISION_EPS:
            eps = max(eps, _LOW_PRECISION_EPS[dtype.name])
        elif np.issubdtype(dtype, np.floating):
            eps = max(eps, float(np.finfo(dtype).eps))
    return eps


def output_scale(o: np.ndarray) -> float:
    """``max(1, mean |O|)`` over the finite elements of the reference output O."""
    values = _as_float64(o)
    finite = np.abs(values[np.isfinite(values)])
    return max(1.0, float(finite.mean())) if finite.size else 1.0


def tolerances(y: np.ndarray, o: np.ndarray, thresholds: Thresholds) -> tuple[float, float, float]:
    """``(atol * s, rtol, mad floor * s)`` for output Y against reference output O, dtype-aware."""
    precision = thresholds.eps_factor * _precision(y, o)
    scale = output_scale(o)
    return (max(thresholds.atol, precision) * scale, max(thresholds.rtol, precision),
            max(thresholds.mad_floor, precision) * scale)


def mismatch(y: np.ndarray, o: np.ndarray, thresholds: Thresholds) -> tuple[int, float, float]:
    """``(elements outside tolerance, max |Y - O|, atol * s)`` over the positions finite in both.

    An element passes when ``|Y - O| <= atol * s + rtol * |O|`` (see :func:`tolerances`); none counts when all
    are within ``spike * atol * s`` and the mean deviation is within the floor (float noise). Shapes must match.
    """
    y64, o64 = _as_float64(y), _as_float64(o)
    atol, rtol, floor = tolerances(y, o, thresholds)
    finite = np.isfinite(y64) & np.isfinite(o64)
    diff = np.abs(y64[finite] - o64[finite])
    if diff.size == 0:
        return 0, 0.0, atol
    bad = int(np.count_nonzero(diff > atol + rtol * np.abs(o64[finite])))
    largest = float(diff.max())
    if bad and largest <= thresholds.spike * atol and float(diff.mean()) <= floor:
        bad = 0
    return bad, largest, atol


def outputs_agree(y: np.ndarray, o: np.ndarray, thresholds: Thresholds) -> bool:
    """Whether output Y matches output O (O's magnitude sets the scale): same shape, same NaN/+Inf/-Inf
    positions, every element finite in both within tolerance. The test shared by the oracle, layer
    localization, reduction and repro scripts."""
    y, o = np.asarray(y), np.asarray(o)
    if y.shape != o.shape:
        return False
    if not np.array_equal(nonfinite_mask(y), nonfinite_mask(o)):
        return False
    return mismatch(y, o, thresholds)[0] == 0


def agree(a: list[np.ndarray], b: list[np.ndarray], thresholds: Thresholds) -> bool:
    """Whether two backends' outputs match, output by output (:func:`outputs_agree`, ``b`` as the scale)."""
    return len(a) == len(b) and all(outputs_agree(y, o, thresholds) for y, o in zip(a, b))


def agreement_groups(outputs: dict[str, list[np.ndarray]], thresholds: Thresholds) -> list[list[str]]:
    """Backends partitioned into groups that agree (each member agrees with the group's first member, in
    both directions), in the order of ``outputs``; the largest groups first."""
    groups: list[list[str]] = []
    for name, outs in outputs.items():
        for group in groups:
            first = outputs[group[0]]
            if agree(outs, first, thresholds) and agree(first, outs, thresholds):
                group.append(name)
                break
        else:
            groups.append([name])
    return sorted(groups, key=len, reverse=True)


# ---------------------------------------------------------------------------- comparisons
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


def _finite_mad(y: np.ndarray, o: np.ndarray) -> float:
    y64, o64 = _as_float64(y), _as_float64(o)
    finite = np.isfinite(y64) & np.isfinite(o64)
    return mad(y64[finite], o64[finite]) if finite.any() else 0.0


def compare(outputs: dict[str, list[np.ndarray]], reference: str, thresholds: Thresholds,
            per_backend: Mapping[str, Thresholds] | None = None) -> dict[str, Comparison]:
    """Every backend's outputs against the reference's, output by output, with D_MAD against the closest peer.
    ``per_backend``: the thresholds of backends whose results were computed in a relaxed precision (GPU, tf32)."""
    ref = outputs[reference]
    own = dict(per_backend or {})
    comparisons: dict[str, Comparison] = {}
    per: dict[str, list[dict[str, Any]]] = {}
    for name, outs in outputs.items():
        if name == reference:
            continue
        comparisons[name] = Comparison(backend=name, shape_problem=_shape_problem(outs, ref))
        if comparisons[name].shape_problem:
            continue
        rows = []
        mine = own.get(name, thresholds)
        for index, (y, o) in enumerate(zip(outs, ref)):
            count, max_abs, atol = mismatch(y, o, mine)
            rows.append({"output": index, "nan_problem": _nan_problem(y, o), "mismatched": count,
                         "max_abs_diff": max_abs, "mad": _finite_mad(y, o), "elements": int(np.size(y)),
                         "scale": output_scale(o), "tolerance": atol, "mad_floor": tolerances(y, o, mine)[2]})
        per[name] = rows
    for name, rows in per.items():
        for row in rows:
            peers = {peer: per[peer][row["output"]]["mad"] for peer in per if peer != name}
            if peers:
                closest = min(peers, key=lambda peer: peers[peer])
                row.update(dmad=d_mad_from_deltas(row["mad"], peers[closest]), dmad_peer=closest,
                           peer_mad=peers[closest])
            row["flags"] = [kind for kind, _ in _row_flags(row, own.get(name, thresholds))]
        comparison = comparisons[name]
        comparison.per_output = [{key: value for key, value in row.items() if value is not None} for row in rows]
        if not rows:
            continue
        decisive = next((row for row in rows if row["flags"]), None) or max(
            rows, key=lambda row: row["max_abs_diff"] / max(row["tolerance"], 1e-300))
        comparison.nan_problem = next((f"output {row['output']}: {row['nan_problem']}" if len(rows) > 1
                                       else row["nan_problem"] for row in rows if row["nan_problem"]), None)
        comparison.output = decisive["output"]
        comparison.max_abs_diff = decisive["max_abs_diff"]
        comparison.mad = decisive["mad"]
        comparison.dmad = decisive.get("dmad")
        comparison.dmad_peer = decisive.get("dmad_peer")
        comparison.peer_mad = decisive.get("peer_mad")
        comparison.mismatched = decisive["mismatched"]
        comparison.elements = decisive["elements"]
        comparison.scale = decisive["scale"]
        comparison.tolerance = decisive["tolerance"]
        comparison.mad_floor = decisive["mad_floor"]
    return comparisons


def _row_flags(row: dict[str, Any], thresholds: Thresholds) -> list[tuple[str, str]]:
    flags = []
    if row["nan_problem"]:
        flags.append((VerdictKind.NAN.value, row["nan_problem"]))
    reasons = []
    if row["mismatched"]:
        reasons.append(f"{row['mismatched']}/{row['elements']} elements outside atol={thresholds.atol:g}*scale "
                       f"rtol={thresholds.rtol:g} (scale {row['scale']:.3g}, max |diff| {row['max_abs_diff']:.3g})")
    dmad_value = row.get("dmad")
    if (dmad_value is not None and dmad_value > thresholds.dmad and row["mad"] > row["mad_floor"]
            and row["mad"] > (row.get("peer_mad") or 0.0)):
        reasons.append(f"D_MAD {dmad_value:.3f} against {row['dmad_peer']} (MAD {row['mad']:.3g}, "
                       f"floor {row['mad_floor']:.3g})")
    if row["mismatched"]:  # D_MAD supports a flag, never makes one: a two-library repro must confirm it
        flags.append((VerdictKind.INCONSISTENCY.value, "; ".join(reasons)))
    return flags


def _numeric_flags(comparison: Comparison, thresholds: Thresholds,
                   output_names: list[str]) -> list[tuple[str, str, int | None]]:
    """(kind, message, output index) per kind, for the first output flagged with that kind."""
    if comparison.shape_problem:
        return [(VerdictKind.SHAPE.value, comparison.shape_problem, None)]
    flags: dict[str, tuple[str, str, int | None]] = {}
    rows = comparison.per_output or []
    for row in rows:
        row = {"nan_problem": None, **row}
        for kind, message in _row_flags(row, thresholds):
            if kind not in flags:
                index = row["output"]
                if len(rows) > 1:
                    name = output_names[index] if index < len(output_names) else str(index)
                    message = f"output {index} ({name}): {message}"
                flags[kind] = (kind, message, index)
    return list(flags.values())


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


def _detail(stage: StageResult) -> str:
    detail = f"{stage.exc_type}: {stage.message}" if stage.exc_type else stage.message
    return " ".join(detail.split())[:500]


def _failure_metrics(backend: BackendResult) -> dict[str, Any]:
    stage = backend.failure
    assert stage is not None
    metrics: dict[str, Any] = {"status": str(stage.status), "exc_type": stage.exc_type,
                               "seconds": round(stage.seconds, 3)}
    if stage.signal is not None:
        metrics["signal"] = stage.signal
    if stage.exit_code is not None:
        metrics["exit_code"] = stage.exit_code
    return metrics


def _own_verdict(backend: BackendResult) -> Verdict:
    stage = backend.failure
    assert stage is not None
    return Verdict(_KIND_OF_STATUS[str(stage.status)], backend.name, stage.stage, _detail(stage),
                   _failure_metrics(backend))


def _keras_front_end(result: ExecutionResult) -> tuple[Verdict | None, set[str], str | None]:
    """The one Keras finding when every Keras backend raised at load/execute, the backends it covers, and
    their (most common) exception type."""
    keras = [b for b in result.results("backend") if b.consumes == "keras"]
    if len(keras) < 2 or not all(b.status in FAILURES and b.stage_reached in ("load", "execute") for b in keras):
        return None, set(), None
    raised = [b for b in keras if b.status == StageStatus.ERROR.value]
    if len(raised) < 2:
        return None, set(), None
    types = [b.failure.exc_type for b in raised if b.failure]
    common = max(dict.fromkeys(types), key=types.count)
    covered = [b for b in raised if b.failure and b.failure.exc_type == common]
    if len(covered) < 2:
        return None, set(), None
    first = covered[0].failure
    assert first is not None
    message = ("symbolic build accepted the model, every Keras backend failed at run time: " + _detail(first))[:500]
    metrics = {"backends": {b.name: {**_failure_metrics(b), "stage": b.stage_reached,
                                     "message": _detail(b.failure)} for b in keras if b.failure},
               "exc_type": common}
    return Verdict(VerdictKind.CRASH.value, KERAS_FRONT_END, "execute", message, metrics), {b.name for b in covered}, common


def _failure_verdicts(result: ExecutionResult) -> list[Verdict]:
    backends = result.results("backend")
    if not backends or all(b.status == StageStatus.SKIPPED.value or b.stage_reached == "start" for b in backends):
        # nothing reached the model: memo's setup (a backend that cannot start, none selected), not a library
        summary = "; ".join(f"{b.name}: {_detail(b.failure) if b.failure else 'no stage'}" for b in backends)
        return [Verdict(VerdictKind.INVALID.value, "*", "-",
                        f"no backend ran the model: memo produced no result ({summary or 'no backends'})"[:500],
                        {"backends": [b.name for b in backends]})]
    verdicts: list[Verdict] = []
    front_end, covered, front_type = _keras_front_end(result)
    if front_end is not None:
        verdicts.append(front_end)
    reference = result.backends.get(result.reference)
    eager_type = (reference.failure.exc_type if reference is not None and reference.failure is not None
                  and reference.status in FAILURES else None)
    also: dict[str, list[str]] = defaultdict(list)
    traced: list[BackendResult] = []
    keras_failures = {(b.failure.exc_type, b.failure.message): b.name for b in result.results("backend")
                      if b.consumes == "keras" and b.status in FAILURES and b.failure is not None}
    for backend in result.results():
        if backend.status not in FAILURES or backend.name in covered:
            continue
        stage = backend.failure
        assert stage is not None
        if backend.role == "converter" and stage.stage == TRACE_STAGE:
            traced.append(backend)
        elif backend.role == "converter" and backend.consumes == "keras" \
                and (stage.exc_type, stage.message) in keras_failures:
            # a converter that runs Keras itself (Keras's ONNX export calls the model on torch) failing as a Keras
            # backend does: the same failure, not a second finding
            also[keras_failures[(stage.exc_type, stage.message)]].append(backend.name)
        elif _same_failure(result, base := _spec_field(backend.name, "builds_on", None), stage):
            # the exception of the backend whose code this one runs first (torch.compile converts with
            # onnx2torch): one finding, that backend's
            also[base].append(backend.name)
        elif _same_failure(result, twin := cpu_twin(backend.name), stage):
            also[twin].append(backend.name)  # the library fails alike on the CPU: the CPU backend's finding
        else:
            verdicts.append(_own_verdict(backend))
    for verdict in verdicts:
        names = [*also.get(verdict.backend, []),
                 *(n for name in (verdict.metrics.get("backends") or {}) for n in also.get(name, []))]
        if names:
            verdict.metrics["also_in"] = names
    if traced:
        stage = traced[0].failure
        assert stage is not None
        names = [b.name for b in traced]
        if front_end is not None and stage.exc_type == front_type:
            front_end.metrics["also_in_tf_function"] = names  # the same failure, traced: not a second finding
        elif eager_type is not None and stage.exc_type == eager_type and any(
                v.backend == result.reference for v in verdicts):
            eager = next(v for v in verdicts if v.backend == result.reference)
            eager.metrics["also_in_tf_function"] = names  # TensorFlow fails eagerly already: one finding
        else:
            metrics = {**_failure_metrics(traced[0]), "converters": names}
            verdicts.append(Verdict(_KIND_OF_STATUS[str(stage.status)], REFERENCE, TF_FUNCTION_STAGE,
                                    _detail(stage), metrics))
    return verdicts


def _attribute(kind: str, flagged: dict[str, str], outputs: dict[str, list[np.ndarray]], result: ExecutionResult,
               thresholds: Thresholds, metrics: Callable[[str], dict[str, Any]],
               flagged_any: set[str], groups: list[list[str]]) -> list[Verdict]:
    """Turn per-backend flags of one kind into verdicts, blaming a shared cause where agreement says so.

    ``flagged_any``: the backends flagged with any kind (they do not agree with the reference); ``groups``:
    the agreement groups of every backend with outputs, reference included (recorded in the metrics).
    """
    compared = [name for name in outputs if name != result.reference]
    recorded = {"agreement": groups}

    def consistent(names: list[str]) -> bool:
        return all(agree(outputs[name], outputs[names[0]], thresholds) for name in names[1:])

    flagged, cpu_twins = judge_by_twins(flagged, flagged_any, lambda name: name in outputs)
    verdicts: list[Verdict] = []
    for artifact_kind in PRODUCERS:
        converter = producer_of(artifact_kind, result.backends)
        group = [name for name in compared if result.backends[name].consumes == artifact_kind]
        others = [name for name in compared if name not in group]
        others_agree = any(name not in flagged_any for name in others)
        if len(group) >= 2 and set(group) <= set(flagged) and (others_agree or not others) and consistent(group):
            verdicts.append(Verdict(kind, converter, "convert",
                                    f"every backend on its conversion ({', '.join(group)}) differs alike: "
                                    + flagged[group[0]],
                                    {"backends": {name: metrics(name) for name in group}, **recorded}))
            flagged = {name: message for name, message in flagged.items() if name not in group}
    engines = {name: _spec_field(name, "engine_name", name) for name in compared}
    for name in list(flagged):  # one engine on two converters' files: right on one, wrong on the other
        kind_read = result.backends[name].consumes
        twins = [other for other in compared if other != name and engines[other] == engines[name]
                 and result.backends[other].consumes != kind_read and other not in flagged_any]
        if kind_read in PRODUCERS and twins:
            converter = producer_of(kind_read, result.backends)
            verdicts.append(Verdict(kind, converter, "convert",
                                    f"{name} differs on {converter}'s file while the same engine agrees with the "
                                    f"reference on another conversion ({twins[0]}): " + flagged[name],
                                    {"backends": {name: metrics(name)}, "same_engine": twins[0], **recorded}))
            del flagged[name]
    if len(compared) >= 2 and set(compared) <= flagged_any:  # none agrees with the reference
        majority = next((group for group in groups if library_count(group) >= 2 and result.reference not in group
                         and set(group) <= set(flagged)), None)
        if majority is not None:
            verdicts.append(Verdict(kind, result.reference, "execute",
                                    f"{len(majority)} backends ({', '.join(majority)}) agree with each other on a "
                                    f"different result: " + flagged[majority[0]],
                                    {"backends": {name: metrics(name) for name in majority}, **recorded}))
            flagged = {name: message for name, message in flagged.items() if name not in majority}
    return verdicts + [Verdict(kind, name, "execute", message,
                               {**metrics(name), **recorded, **({"cpu_twin": cpu_twins[name]} if name in cpu_twins else {})})
                       for name, message in flagged.items()]


def _spec_field(backend: str, name: str, default: Any) -> Any:
    """A field of ``backend``'s registered spec (``default`` for a plugin, a converter without it, or a name
    from another version of memo)."""
    try:
        return getattr(load_spec(backend), name, default)
    except (KeyError, ImportError):
        return default


def _same_failure(result: ExecutionResult, other: str | None, stage: StageResult) -> bool:
    """Whether backend ``other`` failed in ``result`` at the same stage with the same exception as ``stage``."""
    entry = result.backends.get(other) if other else None
    failure = entry.failure if entry is not None and entry.status in FAILURES else None
    return failure is not None and (failure.stage, failure.exc_type) == (stage.stage, stage.exc_type) and (
        same_on_both_devices(stage.message, failure.message))


def judge(result: ExecutionResult, thresholds: Thresholds = Thresholds(),
          outputs: dict[str, dict[str, np.ndarray]] | None = None, *, special_values: bool = False) -> list[Verdict]:
    """Every verdict on one execution. ``outputs`` (backend -> output name -> array) defaults to the
    ``.npz`` files the backends wrote. ``special_values``: the model makes NaN/Inf on purpose (see
    :func:`memo.mutation.nan.has_injection`), so numeric disagreements are ``special``, not bugs."""
    verdicts = _failure_verdicts(result)
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
        for kind, message, index in _numeric_flags(comparison, own.get(name, thresholds), result.output_names):
            by_kind.setdefault(kind, {})[name] = message
            outputs_of[(kind, name)] = index
    if not by_kind:
        return verdicts
    flagged_any = {name for flagged in by_kind.values() for name in flagged}
    groups = agreement_groups(arrays, thresholds)
    for kind in (VerdictKind.SHAPE.value, VerdictKind.NAN.value, VerdictKind.INCONSISTENCY.value):
        if kind not in by_kind:
            continue

        def metrics(name: str, kind: str = kind) -> dict[str, Any]:
            data = comparisons[name].metrics()
            index = outputs_of.get((kind, name))
            if index is not None:
                data["output"] = index
                if index < len(result.output_names):
                    data["output_name"] = result.output_names[index]
            return data

        for verdict in _attribute(kind, by_kind[kind], arrays, result, thresholds, metrics, flagged_any, groups):
            if special_values and kind in (VerdictKind.NAN.value, VerdictKind.INCONSISTENCY.value):
                verdict.metrics["numeric_kind"] = verdict.kind
                verdict.kind = VerdictKind.SPECIAL.value
            verdicts.append(verdict)
    return verdicts
