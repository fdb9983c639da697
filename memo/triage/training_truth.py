"""The float64 truth of a reduced training bug, and what follows when it blames the reference.

The training check judges every backend against the reference (Keras on TensorFlow); where the other backends do not
agree among themselves (one crashed, or only one other trains), a difference is pinned on the one that differs from
the reference, whichever is wrong. The float64 truth then says which: when it sides with the accused and puts the
reference off by more than its tolerance (``contradicted``, the witness blamed), the defect is the reference's.
Measured 2026-11-29: under ``keras.RematScope(mode="full")`` an activity regularizer's gradient on TensorFlow is 500
tolerances off float64 while Keras on torch is within 1e-4 of it and Keras on JAX fails; the verdict accused torch,
and the bug sat under "float64 blames another library". Such a bug is turned round once (:func:`turned`): the
reference becomes the accused, the former accused its reference, the same model is trained again with those roles,
and the folder, scripts and texts follow. Gradient, forward, loss and state stages only: an optimizer step is Keras's
shared code whichever backend ran it (:func:`memo.triage.training_signature.shared_code_parts`).
"""
from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any

from memo.json_types import JsonObject
from memo.store import BugRow
from memo.training.check import NUMERIC, TruthTrainer
from memo.training.judge import UPDATE_STAGES, TrainingVerdict, worker_stages
from memo.training.truth import assess_verdict, engine_for
from memo.truth import CONTRADICTED

if TYPE_CHECKING:
    from memo.triage.session import Session

WITNESS = "witness"  # a truth's ``blamed`` when float64 sides with the accused


def training_truth_of(session: "Session", run: Any, reference: str, optimizer: str | None) -> JsonObject:
    """The float64 truth of ``run``'s numeric verdict (a :class:`memo.triage.training_bug.TrainingRun`; bug.json's
    ``truth``), {} for a crash."""
    verdict = run.verdict
    if verdict is None or verdict.kind not in NUMERIC or run.artifact is None:
        return {}
    record = verdict.extra.get("training") or {}
    own = TrainingVerdict(verdict.kind, verdict.backend, str(verdict.stage), verdict.message,
                          record.get("array"), record.get("name"))
    engine = engine_for(verdict.backend)
    runner = TruthTrainer(session.work / "training-truth", worker=session.truth_runner().worker(engine), engine=engine)
    try:
        wide, moved = runner.runs(run.artifact, worker_stages(str(verdict.stage)), optimizer)
    finally:
        runner.close()
    return assess_verdict(own, run.arrays, wide, moved, reference).to_json()


def reference_wrong(data: JsonObject) -> bool:
    """Whether a training bug's float64 truth (its bug.json as ``data``) blames the reference alone: contradicted, the
    witness blamed, the reference its only witness off float64, at a stage that is not an optimizer step."""
    truth = data.get("truth") or {}
    reference, accused = str(data.get("reference") or ""), str(data.get("library") or "")
    if truth.get("decision") != CONTRADICTED or truth.get("blamed") != WITNESS or not reference \
            or reference == accused or str(data.get("stage") or "") in UPDATE_STAGES:
        return False
    errors = truth.get("errors") or {}
    off = [name for name, error in errors.items() if name != accused and _tolerances(error) > 1.0]
    return off == [reference]


def _tolerances(error: object) -> float:
    try:
        return float(error)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return float("inf")  # "inf": stored for a non-finite error


def turned(bug: BugRow, reference: str) -> BugRow:
    """``bug`` with the roles turned: the reference accused (its parts name it), ``bug.library`` the new reference."""
    return replace(bug, library=reference, parts={**bug.parts, "library": reference})


__all__ = ["reference_wrong", "training_truth_of", "turned"]
