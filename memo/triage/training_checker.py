"""Training a candidate model on a training bug's backends and judging it (:class:`TrainingChecker`, the predicate
of a training bug's reduction), and the forward probe built on it (:func:`forward_first`): the layer whose
training-mode output is the first to differ, and the smallest cut of the model to it that still shows it."""
from __future__ import annotations

import shutil
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from memo.artifact import Artifact, prepare_artifact
from memo.backends.executor import DifferentialExecutor, ExecutionAbandoned
from memo.backends.training_remat import REMAT_KEY
from memo.errors import InvalidModelError
from memo.kinds import VerdictKind
from memo.model.ir import ModelIR
from memo.oracle import Verdict
from memo.store import BugRow
from memo.training.check import TrainingCheck, stored_verdicts, trainers
from memo.training.judge import Arrays, judge_training, read_arrays, worker_stages
from memo.triage.probe import _keep_inputs, read_inputs
from memo.triage.session import Session
from memo.triage.training_forward import (AFTER_FORWARD, FORWARD_STAGE, ForwardDifference, culprit_cuts,
                                          first_forward_difference, forward_parts, forward_probe, node_outputs)
from memo.triage.training_signature import training_parts

# Trainers that compile a program per model (Keras on JAX: an XLA program per stage, seconds on a large model):
# the last choice where one witness is enough
COMPILING_TRAINERS = frozenset({"keras-jax"})


@dataclass
class TrainingRun:
    """One training check of a candidate on the bug's backends: the verdict matching the bug (None: not shown)."""

    artifact: Artifact | None = None
    arrays: dict[str, Arrays] = field(default_factory=dict)
    verdict: Verdict | None = None
    error: str | None = None


class TrainingChecker:
    """Trains candidates on the reference and the accused backend; true when the bug's signature comes back."""

    def __init__(self, session: Session, bug: BugRow, reference: str, inputs: dict[str, np.ndarray] | None,
                 optimizer: str | None = None, remat: str | None = None) -> None:
        self.session, self.bug = session, bug
        # the pass's executor, started now where the pass has none yet (``memo report --triage`` whose first unit is
        # a training truth: its checker read "the executor has no training check" as the bug not shown again)
        executor = session.get_executor()
        names = trainers(executor.backend_names) if executor is not None else []
        # a verdict against the reference is judged against the others (a crash: one finishing the stage; a numeric
        # one: two agreeing with each other, memo.training.judge._odd_reference)
        witness = [name for name in names if name != reference] if bug.library == reference else []
        if bug.kind == VerdictKind.TRAINING_CRASH.value:  # one finishing the stage says enough: the cheapest
            witness = sorted(witness, key=lambda name: name in COMPILING_TRAINERS)[:1]
        self.backends = list(dict.fromkeys([reference, bug.library, *witness]))
        self.reference = reference
        self.inputs = inputs
        self.count = 0
        # only the stages that judging the bug's stage needs: one XLA program on JAX, not four; the optimizer stage's
        # catalogue entry the finding's check ran (its record's ``optimizer``)
        self.optimizer, self.remat = optimizer, remat
        self.options: dict[str, Any] = {"stages": worker_stages(str(bug.stage or "")),
                                        **({"optimizer": optimizer} if optimizer else {}),
                                        **({REMAT_KEY: remat} if remat else {})}

    def run(self, ir: ModelIR, directory: Path) -> TrainingRun:
        executor = self.session.get_executor()
        if not isinstance(executor, DifferentialExecutor):
            return TrainingRun(error="the executor has no training check")
        directory = directory.resolve()
        try:
            artifact = prepare_artifact(ir, directory, seed=self.session.seed)
        except InvalidModelError as exc:
            return TrainingRun(error=str(exc))
        if self.inputs:
            _keep_inputs(artifact, self.inputs)
        converted = [name for name in self.backends if executor.members[name].consumes != "keras"]
        if converted:  # a converted module trains on the file its converter writes (tf2onnx's ONNX file)
            executor.run(artifact, converted)
        results = executor.train(artifact, self.backends, directory / "training", self.options)
        arrays = {name: read_arrays(result.outputs_path) for name, result in results.items()}
        judgement = judge_training({name: result.stages for name, result in results.items()}, arrays, self.reference)
        verdicts = stored_verdicts(TrainingCheck(reference=self.reference, judgement=judgement))
        # the remat mode is the run's setting, compared by the request, not by the parts (the bug's without remat)
        wanted = {key: value for key, value in self.bug.parts.items() if key not in ("message", REMAT_KEY)}
        same = next((v for v in verdicts if {key: value for key, value in training_parts(v, ir).items()
                                             if key not in ("message", REMAT_KEY)} == wanted), None)
        return TrainingRun(artifact, arrays, same)

    def __call__(self, ir: ModelIR) -> bool:
        self.count += 1
        directory = self.session.work / f"{self.bug.id}-t{self.count}"
        try:
            return self.run(ir, directory).verdict is not None
        except ExecutionAbandoned:
            raise
        except Exception as exc:  # noqa: BLE001  (a defect while checking one candidate rejects it)
            self.session.error(self.bug.id, f"checking training candidate {self.count}", exc)
            return False
        finally:
            shutil.rmtree(directory, ignore_errors=True)


def forward_first(session: Session, bug: BugRow, reference: str, ir: ModelIR, inputs: dict[str, np.ndarray] | None
                  ) -> tuple[ForwardDifference, tuple[ModelIR, TrainingRun] | None] | None:
    """The layer whose training-mode forward output is the first to differ on ``ir`` (a forward, loss, state or
    gradient bug's reduced model; :mod:`memo.triage.training_forward`: a model output differing in training mode is
    localized so too, t52's 17-layer ConvLSTM2D model blamed its last Activation), and the smallest cut of ``ir`` to it that shows it with
    its run (None: none does); None when every layer's output agrees. One forward-only run of the probe, one or two
    of the cuts: triage's cost, never the campaign's."""
    if str(bug.stage) not in AFTER_FORWARD | {FORWARD_STAGE} or bug.kind == VerdictKind.TRAINING_CRASH.value or bug.library == reference:
        return None
    probe = forward_probe(ir)
    run = TrainingChecker(session, replace(bug, stage=FORWARD_STAGE), reference, inputs).run(
        probe, session.work / f"{bug.id}-tprobe")
    found = first_forward_difference(probe, bug.library, run.arrays.get(bug.library, {}),
                                     run.arrays.get(reference, {})) if run.artifact is not None else None
    if found is None or run.artifact is None:
        return None
    arrays = {**read_inputs(run.artifact.inputs_path), **node_outputs(probe, run.arrays[reference])}
    cutter = TrainingChecker(session, replace(bug, stage=FORWARD_STAGE, parts=forward_parts(bug.parts, found)),
                             reference, inputs)
    for index, (cut, feeds) in enumerate(culprit_cuts(ir, found.layer, arrays)):
        cutter.inputs = feeds or inputs
        shown = cutter.run(cut, session.work / f"{bug.id}-tcut{index}")
        if shown.verdict is not None:
            return found, (cut, shown)
    return found, None
