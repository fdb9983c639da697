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
  ``confirmed`` when the accused's error exceeds ``FLOOR`` tolerances and ``FACTOR`` times the witness's; ``contradicted``
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
# ...and this many tolerances: within a few tolerances of float64 a float32 library is rounding over a deep model,
# not wrong (a campaign's "reference is wrong" verdicts at 1.04 to 1.6 tolerances were all such)
FLOOR = 4.0
PERTURBATION_ULPS = 4  # inputs are moved by this many float32 ulps (relative), with random signs
PERTURBATIONS = 2
NEAR_OVERFLOW = 1e30  # |float64 result| above this: float32 arithmetic on the way is at the edge of overflow

# The float64 engines (memo/backends/float64_truth.py) and the library whose kernels each runs: a truth computed
# with the accused's own kernels would inherit its choices (torch's bicubic kernel, its pooling padding rules).
ENGINES: dict[str, str] = {"float64-jax": "jax", "float64-torch": "torch"}
ENGINE_NAMES = {"float64-jax": "Keras on JAX (x64)", "float64-torch": "Keras on torch"}

CONFIRMED, CONTRADICTED, NOISE, UNDECIDED, ILL_CONDITIONED, UNAVAILABLE = (
    "confirmed", "contradicted", "noise", "undecided", "ill-conditioned", "unavailable")
METHOD = "float64: weights and inputs widened from float32"


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
    special_values: bool = False  # ill-conditioned only because special values arise (the operator's contract decides)

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
    """The float inputs moved by ``ulps`` float32 ulps each (random sign, seeded by ``index``), relative to the
    larger of the element and the input's mean magnitude, so that exact zeros move too (a channel of zeros whose
    range a layer divides by); integer inputs (indices) unchanged. Done in float64, so the move is exact."""
    rng = np.random.default_rng(1000 + index)
    step = ulps * float(np.finfo(np.float32).eps)
    moved: dict[str, np.ndarray] = {}
    for name, array in inputs.items():
        array = np.asarray(array)
        if np.issubdtype(array.dtype, np.floating):
            signs = rng.choice(np.array([-1.0, 1.0]), size=array.shape)
            wide = array.astype(np.float64)
            typical = float(np.mean(np.abs(wide[np.isfinite(wide)]))) if np.isfinite(wide).any() else 0.0
            moved[name] = wide + step * signs * np.maximum(np.abs(wide), typical)
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


CANCELLED = 1e-6  # a float64 result within this fraction of the absolute tolerance of zero is a cancellation's zero


def cancellation(truth: Sequence[np.ndarray], errors: dict[str, float], witnesses: Sequence[str],
                 thresholds: Thresholds = Thresholds()) -> str | None:
    """Why a finding whose float64 result is zero everywhere (a cancellation: a convolution's bias gradient
    behind a batch normalization, which subtracts every per-channel constant again) and that the witness misses
    beyond the tolerance too is no defect: what each library returns there is the rounding residue of its
    accumulation, whose size is its precision (long150e's bfloat16 bias gradient, 45 and 3 tolerances off a float64
    zero); None when that is not so. Perturbing the inputs cannot show it: the zero is exact for every input."""
    values = [_float(t) for t in truth]
    if not values or not all(v.size and np.all(np.isfinite(v)) for v in values):
        return None
    if max(float(np.max(np.abs(v))) for v in values) > CANCELLED * thresholds.atol:
        return None
    missed = min((errors[name] for name in witnesses if name in errors), default=0.0)
    if missed <= 1.0:
        return None
    return (f"the float64 result is zero (a cancellation) and the witness misses it by {_text(missed)} tolerances "
            f"too: what the libraries return there is rounding residue, sized by their accumulation precision")


def unpropagated_nan(outputs: dict[str, Sequence[np.ndarray]], truth: Sequence[np.ndarray], accused: Sequence[str],
                     witnesses: Sequence[str]) -> str | None:
    """Where the float64 truth and a witness keep NaN and every accused backend returns finite numbers instead (an
    engine's Clip mapping NaN to its minimum, where the operator's contract propagates it): why the accused is
    wrong, None when that is not so. A NaN the mathematics makes is no precision question: who drops it is wrong."""
    counts: list[int] = []
    for name in accused:
        arrays = outputs.get(name)
        if arrays is None or len(arrays) != len(truth):
            return None
        dropped = 0
        for index, (y, t) in enumerate(zip(arrays, truth)):
            y64, t64 = _float(y), _float(t)
            if y64.shape != t64.shape:
                return None
            lost = np.isnan(t64) & np.isfinite(y64)
            kept = [w for w in witnesses if w in outputs and len(outputs[w]) == len(truth)
                    and np.shape(outputs[w][index]) == t64.shape and np.all(np.isnan(_float(outputs[w][index]))[lost])]
            if lost.any() and not kept:
                return None
            dropped += int(np.count_nonzero(lost))
        counts.append(dropped)
    if not counts or min(counts) == 0:
        return None
    return (f"NaN not propagated: float64 and the witness keep NaN at {min(counts)} positions where the accused "
            f"returns finite numbers")


def truth_engines(accused_kernels: Sequence[frozenset[str]]) -> list[str]:
    """The float64 engines that share no kernels with any accused backend (each accused backend given as the
    distributions it runs); every engine when none is independent of all of them."""
    independent = [engine for engine, library in ENGINES.items()
                   if not any(library in kernels for kernels in accused_kernels)]
    return independent or list(ENGINES)


def engine_method(engines: Sequence[str]) -> str:
    """How the truth was computed, in words for the report."""
    return f"{METHOD}, computed by " + " and ".join(ENGINE_NAMES.get(e, e) for e in engines)


def engines_apart(first: Sequence[np.ndarray], second: Sequence[np.ndarray],
                  thresholds: Thresholds = Thresholds()) -> float:
    """How far two float64 engines' results are apart, in tolerances (infinite for other shapes or counts)."""
    if len(first) != len(second):
        return float("inf")
    return max((scaled_error(a, b, thresholds) for a, b in zip(first, second)), default=0.0)


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
        return NOISE, figures + f": both within {floor:g} tolerances of float64 (a float32 library's rounding)"
    return UNDECIDED, figures + ": neither is close to float64"


def _text(value: float) -> str:
    return f"{value:.3g}" if np.isfinite(value) else "inf"


Run = tuple[Sequence[np.ndarray], Sequence[Sequence[np.ndarray]]]  # (float64 outputs, perturbed float64 outputs)


def assess(outputs: dict[str, Sequence[np.ndarray]], truth: Sequence[np.ndarray],
           perturbed: Sequence[Sequence[np.ndarray]], accused: Sequence[str], witnesses: Sequence[str],
           reference: str, thresholds: Thresholds = Thresholds()) -> Truth:
    """The whole verdict from one float64 engine: errors of every backend, conditioning, decision, blame."""
    return assess_runs(outputs, {"float64": (truth, perturbed)}, accused, witnesses, reference, thresholds)


def assess_runs(outputs: dict[str, Sequence[np.ndarray]], runs: dict[str, Run], accused: Sequence[str],
                witnesses: Sequence[str], reference: str, thresholds: Thresholds = Thresholds(), *,
                special_inside: bool = False) -> Truth:
    """The verdict from one or more float64 engines (``runs``: engine -> its run).

    Where an operation leaves a choice open (a bicubic kernel's coefficient), two float64 engines may each be
    right for their own semantics: a backend's error is its distance to the NEAREST engine's result, so a
    library wrong under every semantics is confirmed, and one that follows another engine's semantics than the
    witness is not a precision verdict (``undecided``: an implementation choice). The conditioning is the
    largest move of any engine. ``special_inside``: the float64 computation makes NaN/Inf somewhere inside the
    model (then removes it): libraries legitimately differ in how special values propagate (the ONNX spec leaves
    Clip, Max and Min of NaN open), so the finding is judged by the special-value rule, not by precision."""
    per_engine = {engine: errors_against(outputs, run[0], thresholds) for engine, run in runs.items()}
    errors = {name: min(found[name] for found in per_engine.values()) for name in outputs}
    moved = max(condition(run[0], run[1], thresholds) for run in runs.values())
    result = Truth(errors=errors, condition=moved, accused=list(accused), witnesses=list(witnesses))
    first = next(iter(runs.values()))[0]
    dropped = unpropagated_nan(outputs, first, accused, witnesses)
    if dropped is not None:
        result.decision, result.reason, result.blamed = CONFIRMED, dropped, "accused"
        return result
    why = ill_conditioned(first, outputs.get(reference) or next(iter(outputs.values()), []), moved, thresholds)
    result.special_values = why is not None and not all(np.all(np.isfinite(_float(t))) for t in first)
    if why is None and special_inside:
        result.special_values = True
        why = ("the float64 computation makes NaN or Inf inside the model (and removes it again): how special values "
               "propagate is left open, so the special-value rule applies, not a precision verdict")
    why = why or cancellation(first, errors, witnesses, thresholds)
    if why is not None:
        result.decision, result.reason = ILL_CONDITIONED, why
        return result
    result.decision, result.reason = decide(errors, accused, witnesses)
    apart = engines_apart(*[run[0] for run in list(runs.values())[:2]], thresholds) if len(runs) > 1 else 0.0
    if apart > FLOOR:
        result.reason += f" (the float64 engines differ by {_text(apart)} tolerances here: each error is to the nearest)"
        if result.decision == NOISE:
            result.decision = UNDECIDED
            result.reason = ("each side is close to a different float64 engine: the operation's result is an "
                             "implementation choice; " + result.reason)
    if result.decision == CONFIRMED:
        result.blamed = "accused"
    elif result.decision == CONTRADICTED:
        result.blamed = "witness"
    return result
