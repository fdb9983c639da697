"""Float64 truth for numeric findings: which library is wrong, and whether the question has an answer at all.

Pure numpy. Inputs: each backend's float32 outputs on one model, the float64 truth T on the same weights and
inputs (:mod:`memo.backends.float64_truth`), and T recomputed on inputs perturbed by a few float32 ulps.

* **Scaled error** of a backend: ``max_i |Y_i - T_i| / (atol * s + rtol * |T_i|)`` over the elements, ``s =
  max(1, mean |T|)``, the oracle's own tolerance (:func:`memo.oracle.tolerances`) around the truth instead of
  around the reference. At most 1: the backend is as close to float64 as the oracle asks two libraries to be.
  A non-finite value where T is finite (or the reverse) is an infinite error.
* **Conditioning**: the largest scaled move of T under the perturbations. A result that moves past the
  tolerance when its inputs move by a few float32 ulps cannot be computed in float32 to that tolerance by any
  library (division by a near-zero range, a large cancellation, a chaotic recurrence, a saturated exponential):
  the finding is ill-conditioned, not a bug. So are outputs that are indices or booleans (decided by float
  comparisons and ties), a float64 result that is itself NaN/Inf, and values near float32's overflow.
* **Decision** for an accused side against a witness side (the reference, or the group the verdict trusted):
  ``confirmed`` when the accused's error exceeds the floor and ``FACTOR`` times the witness's; ``contradicted``
  when the witness's error does that against the accused (float64 sides with the accused: the witness is
  wrong); ``noise`` when both are within the floor (each as close to float64 as the tolerance, their
  difference is rounding); otherwise ``undecided`` (both far from float64).
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Sequence

import numpy as np

from memo.oracle import Thresholds, tolerances

FACTOR = 4.0  # the accused's error must exceed the witness's by this factor...
FLOOR = 1.0  # ...and this many tolerances (1: outside the oracle's own tolerance around float64)
PERTURBATION_ULPS = 4  # inputs are moved by this many float32 ulps (relative), with random signs
PERTURBATIONS = 2
NEAR_OVERFLOW = 1e30  # |float64 result| above this: float32 arithmetic on the way is at the edge of overflow

CONFIRMED, CONTRADICTED, NOISE, UNDECIDED, ILL_CONDITIONED, UNAVAILABLE = (
    "confirmed", "contradicted", "noise", "undecided", "ill-conditioned", "unavailable")
METHOD = "Keras on torch, float64 weights/inputs widened from float32"


@dataclass
class Truth:
    """The float64 verdict on one numeric finding, as stored in ``bug.json`` and ``memo run --json``."""

    method: str = METHOD
    decision: str = UNAVAILABLE
    reason: str = ""
    errors: dict[str, float] = field(default_factory=dict)  # backend -> scaled error against float64
    condition: float | None = None  # largest scaled move of the truth under the perturbations
    accused: list[str] = field(default_factory=list)
    witnesses: list[str] = field(default_factory=list)
    blamed: str | None = None  # the library float64 blames (None: none)

    def to_json(self) -> dict[str, object]:
        data = asdict(self)
        data["errors"] = {name: _finite_or_text(value) for name, value in self.errors.items()}
        return data

    @classmethod
    def from_json(cls, data: dict[str, object]) -> "Truth":
        known = {key: value for key, value in data.items() if key in cls.__dataclass_fields__}
        truth = cls(**known)  # type: ignore[arg-type]
        truth.errors = {name: float(value) for name, value in truth.errors.items()}
        return truth


def _finite_or_text(value: float) -> float | str:
    return value if np.isfinite(value) else "inf"


def _float(array: np.ndarray) -> np.ndarray:
    return np.asarray(array).astype(np.float64)


def scaled_error(y: np.ndarray, truth: np.ndarray, thresholds: Thresholds = Thresholds()) -> float:
    """``max |Y - T| / (atol * s + rtol * |T|)``; infinite where exactly one of them is non-finite (or the
    shapes differ); positions non-finite in both with the same value do not count."""
    y64, t64 = _float(y), _float(truth)
    if y64.shape != t64.shape:
        return float("inf")
    if y64.size == 0:
        return 0.0
    # the oracle's tolerance, with the truth as the scale and the library's dtype as the precision
    atol, rtol, _ = tolerances(np.asarray(y), t64, thresholds)
    finite_y, finite_t = np.isfinite(y64), np.isfinite(t64)
    if np.any(finite_y != finite_t):
        return float("inf")
    both = finite_y & finite_t
    if np.any(~both & (y64 != t64) & ~(np.isnan(y64) & np.isnan(t64))):
        return float("inf")
    if not both.any():
        return 0.0
    diff = np.abs(y64[both] - t64[both])
    return float(np.max(diff / (atol + rtol * np.abs(t64[both]))))


def errors_against(outputs: dict[str, Sequence[np.ndarray]], truth: Sequence[np.ndarray],
                   thresholds: Thresholds = Thresholds()) -> dict[str, float]:
    """Each backend's scaled error (its worst output) against the float64 truth."""
    errors: dict[str, float] = {}
    for name, arrays in outputs.items():
        if len(arrays) != len(truth):
            errors[name] = float("inf")
            continue
        errors[name] = max((scaled_error(y, t, thresholds) for y, t in zip(arrays, truth)), default=0.0)
    return errors


def condition(truth: Sequence[np.ndarray], perturbed: Sequence[Sequence[np.ndarray]],
              thresholds: Thresholds = Thresholds()) -> float:
    """The largest scaled move of the truth under the perturbed inputs (0: none given)."""
    moves = [scaled_error(p, t, thresholds) for run in perturbed for p, t in zip(run, truth)]
    return max(moves, default=0.0)


def perturb(inputs: dict[str, np.ndarray], index: int, ulps: int = PERTURBATION_ULPS) -> dict[str, np.ndarray]:
    """The float inputs moved by ``ulps`` float32 ulps each (relative, random sign, seeded by ``index``);
    integer inputs (indices) unchanged. Done in float64, so the move is exact."""
    rng = np.random.default_rng(1000 + index)
    step = ulps * float(np.finfo(np.float32).eps)
    moved: dict[str, np.ndarray] = {}
    for name, array in inputs.items():
        array = np.asarray(array)
        if np.issubdtype(array.dtype, np.floating):
            signs = rng.choice(np.array([-1.0, 1.0]), size=array.shape)
            moved[name] = array.astype(np.float64) * (1.0 + step * signs)
        else:
            moved[name] = array
    return moved


def ill_conditioned(truth: Sequence[np.ndarray], reference: Sequence[np.ndarray], moved: float,
                    thresholds: Thresholds = Thresholds()) -> str | None:
    """Why no float32 library can be judged on this model (None: it can be)."""
    for index, (t, o) in enumerate(zip(truth, reference)):
        dtype = np.asarray(o).dtype
        if np.issubdtype(dtype, np.integer) or dtype == np.bool_:
            return f"output {index} holds {dtype.name} values (indices or booleans decided by float comparisons)"
        values = _float(t)
        if not np.all(np.isfinite(values)):
            return f"output {index} is NaN/Inf in float64 too ({int(np.count_nonzero(~np.isfinite(values)))} " \
                   f"elements): the special-value rule applies, not a precision verdict"
        if values.size and float(np.max(np.abs(values))) > NEAR_OVERFLOW:
            return f"output {index} reaches {float(np.max(np.abs(values))):.3g} in float64: float32 arithmetic " \
                   f"on the way is at the edge of overflow"
    if moved > 1.0:
        return (f"the float64 result moves by {moved:.3g} tolerances when the inputs move by "
                f"{PERTURBATION_ULPS} float32 ulps: no float32 library can be held to the tolerance")
    return None


def decide(errors: dict[str, float], accused: Sequence[str], witnesses: Sequence[str],
           factor: float = FACTOR, floor: float = FLOOR) -> tuple[str, str]:
    """(decision, reason) for the accused side against the witness side (each side's best backend counts)."""
    accused_error = min((errors[name] for name in accused if name in errors), default=None)
    witness_error = min((errors[name] for name in witnesses if name in errors), default=None)
    if accused_error is None or witness_error is None:
        return UNAVAILABLE, "no outputs of the accused or of its witness to compare with float64"
    figures = f"error against float64: accused {_text(accused_error)}, witness {_text(witness_error)} tolerances"
    if accused_error > floor and accused_error > factor * witness_error:
        return CONFIRMED, figures
    if witness_error > floor and witness_error > factor * accused_error:
        return CONTRADICTED, figures + ": float64 sides with the accused"
    if accused_error <= floor and witness_error <= floor:
        return NOISE, figures + ": both within the tolerance of float64"
    return UNDECIDED, figures + ": neither is close to float64"


def _text(value: float) -> str:
    return f"{value:.3g}" if np.isfinite(value) else "inf"


def assess(outputs: dict[str, Sequence[np.ndarray]], truth: Sequence[np.ndarray],
           perturbed: Sequence[Sequence[np.ndarray]], accused: Sequence[str], witnesses: Sequence[str],
           reference: str, thresholds: Thresholds = Thresholds()) -> Truth:
    """The whole verdict: errors of every backend, conditioning, decision and the library blamed."""
    errors = errors_against(outputs, truth, thresholds)
    moved = condition(truth, perturbed, thresholds)
    result = Truth(errors=errors, condition=moved, accused=list(accused), witnesses=list(witnesses))
    why = ill_conditioned(truth, outputs.get(reference) or next(iter(outputs.values()), []), moved, thresholds)
    if why is not None:
        result.decision, result.reason = ILL_CONDITIONED, why
        return result
    result.decision, result.reason = decide(errors, accused, witnesses)
    if result.decision == CONFIRMED:
        result.blamed = "accused"
    elif result.decision == CONTRADICTED:
        result.blamed = "witness"
    return result
