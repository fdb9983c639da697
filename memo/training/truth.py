"""The float64 truth of a training verdict: which backend is wrong, or whether no float32 library can be held to the
tolerance there (pure numpy; :mod:`memo.truth`'s maths on the training check's arrays).

The float64 engine is Keras on torch with the model, its weights and inputs widened to float64
(:mod:`memo.backends.float64_truth`, whose worker runs the same training stages: :mod:`memo.backends.training`). It
runs on the inputs and on two copies moved by a few float32 ulps: a stage whose float64 arrays move past the tolerance
under that move is ill-conditioned (a ReLU at 0, a max-pooling tie broken the other way, a division by a near-zero
variance) and is kept apart from the findings to file, whatever the libraries say.
"""
from __future__ import annotations

from typing import Mapping, Sequence

from memo.oracle.criterion import Thresholds
from memo.training.judge import Arrays, TrainingVerdict, stage_arrays, stage_keys
from memo.truth import UNAVAILABLE, Truth, assess_runs, engine_method

ENGINE = "float64-torch"
# The engine runs torch's kernels: where torch is accused, the truth shares its code (said in the reason).
ENGINE_LIBRARY = "keras-torch"


def assess_verdict(verdict: TrainingVerdict, arrays: Mapping[str, Arrays], truth: Arrays | str,
                   perturbed: Sequence[Arrays], reference: str, thresholds: Thresholds = Thresholds()) -> Truth:
    """The float64 verdict on one numeric training verdict: every backend's error on the verdict's stage against the
    float64 arrays (``truth``; a string: why there are none), conditioning from ``perturbed``, the decision."""
    stage = verdict.stage
    method = engine_method([ENGINE]) + f"; training stage {stage}"
    if isinstance(truth, str):
        return Truth(method=method, decision=UNAVAILABLE, reason=truth)
    keys = stage_keys(truth, stage)
    if not keys or any(stage_keys(run, stage) != keys for run in perturbed):
        return Truth(method=method, decision=UNAVAILABLE, reason=f"the float64 engine computed no {stage} arrays")
    outputs = {name: stage_arrays(own, stage) for name, own in arrays.items() if stage_keys(own, stage) == keys}
    witnesses = [name for name in outputs if name != verdict.backend]
    result = assess_runs(outputs, {ENGINE: (stage_arrays(truth, stage), [stage_arrays(p, stage) for p in perturbed])},
                         [verdict.backend], witnesses, reference, thresholds)
    result.method = method
    if verdict.backend == ENGINE_LIBRARY:
        result.reason += " (the float64 engine runs torch's kernels too)"
    return result
