"""The float64 truth of a training verdict: which backend is wrong, or whether no float32 library can be held to the
tolerance there (numpy and memo's specs, no library imported; :mod:`memo.truth`'s maths on the training check's
arrays).

The float64 engine is Keras with the model, its weights and inputs widened to float64, on a backend other than the
accused one (:func:`engine_for`: JAX with x64 for Keras on torch, torch for the others;
:mod:`memo.backends.float64_truth`, whose workers run the same training stages: :mod:`memo.backends.training`). It
runs on the inputs and on two copies moved by a few float32 ulps: a stage whose float64 arrays move past the tolerance
under that move is ill-conditioned (a ReLU at 0, a max-pooling tie broken the other way, a division by a near-zero
variance) and is kept apart from the findings to file, whatever the libraries say.
"""
from __future__ import annotations

from typing import Mapping, Sequence

import numpy as np

from memo.oracle.criterion import Thresholds
from memo.kinds import VerdictKind
from memo.training.judge import UPDATE_STAGES, Arrays, TrainingVerdict, stage_keys, thresholds_for
from memo.backends import kernels_of
from memo.truth import CONFIRMED, ENGINES, UNAVAILABLE, Truth, assess_runs, engine_method, truth_engines

ENGINE = "float64-torch"  # preferred where several engines share no kernels with the accused (TensorFlow)
ENGINE_JAX = "float64-jax"


def engine_for(accused: str) -> str:
    """The float64 engine that judges a training verdict against ``accused``: one sharing no kernels with it
    (:func:`memo.truth.truth_engines`; Keras on JAX with x64 for Keras on torch), Keras on torch where both do."""
    independent = truth_engines([kernels_of(accused)])
    return ENGINE if ENGINE in independent else independent[0]


def assess_verdict(verdict: TrainingVerdict, arrays: Mapping[str, Arrays], truth: Arrays | str,
                   perturbed: Sequence[Arrays], reference: str, thresholds: Thresholds = Thresholds()) -> Truth:
    """The float64 verdict on one numeric training verdict: every backend's error on the array the verdict names (the
    whole stage for a verdict without one) against the float64 arrays (``truth``; a string: why there are none),
    conditioning from ``perturbed``, the decision; each array with the tolerance of the precision the libraries
    computed it in (:func:`memo.training.judge.thresholds_for`: a float16 layer's rounding is no defect)."""
    stage = verdict.stage
    engine = engine_for(verdict.backend)
    method = engine_method([engine]) + f"; training stage {stage}"
    if isinstance(truth, str):
        return Truth(method=method, decision=UNAVAILABLE, reason=truth)
    keys = stage_keys(truth, stage)
    if not keys or any(stage_keys(run, stage) != keys for run in perturbed):
        return Truth(method=method, decision=UNAVAILABLE, reason=f"the float64 engine computed no {stage} arrays")
    keys = [verdict.array] if verdict.array in keys else keys
    ref = arrays.get(reference, {})
    # the loosest tolerance of the judged arrays (the verdict's own array: its own)
    own = max((thresholds_for(ref, key, thresholds) for key in keys), key=lambda t: (t.atol, t.rtol))
    outputs = {name: [np.asarray(own_arrays[key]) for key in keys] for name, own_arrays in arrays.items()
               if all(key in own_arrays for key in keys)}
    witnesses = [name for name in outputs if name != verdict.backend]
    runs = {engine: ([np.asarray(truth[key]) for key in keys], [[np.asarray(p[key]) for key in keys]
                                                                for p in perturbed])}
    result = assess_runs(outputs, runs, [verdict.backend], witnesses, reference, own)
    result.method = method
    if verdict.kind == VerdictKind.TRAINING_NAN.value and stage in UPDATE_STAGES and result.decision != CONFIRMED \
            and all(np.all(np.isfinite(np.asarray(truth[key], dtype=np.float64))) for key in keys) \
            and verdict.backend in outputs \
            and not all(np.all(np.isfinite(np.asarray(a, dtype=np.float64))) for a in outputs[verdict.backend]):
        # an optimizer step of fixed, finite gradients: float64's finite update says the NaN is wrong, whoever else
        # makes it too (the witnesses share Keras's generic update code)
        result.decision, result.blamed = CONFIRMED, "accused"
        result.reason = f"float64 computes a finite update; {verdict.backend} does not ({result.reason})"
    if ENGINES[engine] in kernels_of(verdict.backend):
        result.reason += " (the float64 engine runs the accused backend's kernels too)"
    return result
