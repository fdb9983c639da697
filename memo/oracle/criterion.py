"""The numeric criterion: whether one output matches the reference's (pure numpy, no memo import).

Repro scripts inline this module's functions verbatim (:mod:`memo.triage.inline`), so it imports only numpy
and the standard library.

One criterion, shared by the oracle, localization, reduction and repro scripts (:func:`mismatch`,
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
  p) * s`` are float noise (a lone element just past the tolerance after many layers, with a tiny mean
  deviation: docs/backends.md);
* D_MAD (MEMO Eq. 5-6, after CRADLE): ``delta(Y, O) = mean |Y_i - O_i|`` and
  ``D_MAD(O, Y, Y') = |delta(Y,O) - delta(Y',O)| / (delta(Y,O) + delta(Y',O))`` (0 when both deltas are
  0), Y' being the other backend closest to the reference on that output. D_MAD is reported with an
  inconsistency (when ``D_MAD > dmad``, ``delta(Y, O) > delta(Y', O)`` and ``delta(Y, O) > max(mad_floor, p)
  * s``) but does not make one on its own: an inconsistency needs elements outside the element-wise
  tolerance, the one test that localization, reduction and the repro script (which see two libraries, not
  a third) can apply again. D_MAD alone is about 1 whenever the closest peer is bit-exact, so it would
  also call float noise an inconsistency.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

Outputs = dict[str, np.ndarray]  # output name -> array
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


# ---------------------------------------------------------------------------- problems of one backend's outputs
def shape_problem(outputs: list[np.ndarray], reference: list[np.ndarray]) -> str | None:
    """What differs in the number or shapes of the outputs (None: nothing)."""
    if len(outputs) != len(reference):
        return f"{len(outputs)} outputs, reference has {len(reference)}"
    for index, (out, ref) in enumerate(zip(outputs, reference)):
        if np.shape(out) != np.shape(ref):
            return f"output {index} has shape {tuple(np.shape(out))}, reference {tuple(np.shape(ref))}"
    return None


def nan_problem(y: np.ndarray, o: np.ndarray) -> str | None:
    """How output Y's NaN/+Inf/-Inf positions differ from O's (None: they do not)."""
    y_mask, o_mask = nonfinite_mask(y), nonfinite_mask(o)
    if np.array_equal(y_mask, o_mask):
        return None
    if not o_mask.any():
        return f"{int(np.count_nonzero(y_mask))} non-finite values where the reference has none"
    return f"non-finite values at {int(np.count_nonzero(y_mask != o_mask))} positions differ from the reference's"


def finite_mad(y: np.ndarray, o: np.ndarray) -> float:
    """Eq. 5 over the positions finite in both."""
    y64, o64 = _as_float64(y), _as_float64(o)
    finite = np.isfinite(y64) & np.isfinite(o64)
    return mad(y64[finite], o64[finite]) if finite.any() else 0.0
