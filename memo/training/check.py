"""Running the training check on one artifact: every Keras backend that trains, side by side on the executor's warm
workers, judged against the reference, numeric verdicts judged by float64 (``memo run --train``)."""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

import numpy as np

from memo.artifact import Artifact
from memo.backends import REFERENCE, find_spec, load_spec
from memo.backends.executor import DifferentialExecutor
from memo.backends.result import BackendResult, ExecutionResult
from memo.backends.supervisor import WorkerCommand, WorkerProcess
from memo.kinds import TRAINING_KINDS
from memo.oracle import Verdict
from memo.oracle.criterion import Thresholds
from memo.backends.training_optimizers import choose_optimizer
from memo.backends.training_remat import REMAT_KEY
from memo.training.judge import NUMERIC_KINDS, Arrays, Judgement, judge_training, read_arrays, worker_stages
from memo.training.truth import ENGINE, assess_verdict, engine_for
from memo.truth import PERTURBATIONS, perturb

TRUTH_TIMEOUT_S = 120.0
CHECK_FAILED = "the training check itself failed"  # how a check memo could not complete is left out
NUMERIC = NUMERIC_KINDS


@dataclass
class TrainingCheck:
    """The training check of one model: each backend's stages (with seconds) and the judgement."""

    reference: str
    results: dict[str, BackendResult] = field(default_factory=dict)
    judgement: Judgement = field(default_factory=Judgement)
    seconds: float = 0.0
    truth_seconds: float = 0.0
    chosen: str = ""  # why a campaign checked the model (memo.training.selection)

    def summary(self) -> dict[str, object]:
        """What a campaign keeps of the check with the model's execution (``training`` in its result): which
        optimizer entry it stepped, whether it was left out, how many verdicts (the report counts them)."""
        return {"optimizer": self.judgement.optimizer, "left_out": self.judgement.left_out,
                **({REMAT_KEY: self.judgement.remat} if self.judgement.remat else {}),
                "verdicts": len(self.judgement.verdicts), "seconds": round(self.seconds, 3),
                **({"chosen": self.chosen} if self.chosen else {})}

    def to_json(self) -> dict[str, object]:
        return {"reference": self.reference, "seconds": self.seconds, "truth_seconds": self.truth_seconds,
                "stages": {name: [stage.to_json() for stage in result.stages] for name, result in self.results.items()},
                **self.judgement.to_json()}


def trainers(backends: Sequence[str]) -> list[str]:
    """The backends among ``backends`` whose spec has a training check (Keras on TensorFlow, JAX and torch)."""
    return [name for name in backends if (spec := find_spec(name)) is not None and getattr(spec, "train", None)]


def training_reference(backends: Sequence[str], reference: str) -> str:
    """The check's reference: the executor's when it trains, else memo's (TensorFlow), else the first trainer."""
    return reference if reference in backends else REFERENCE if REFERENCE in backends else backends[0]


def run_training_check(executor: DifferentialExecutor, artifact: Artifact, scratch: Path,
                       backends: Sequence[str] | None = None, truth: bool = True,
                       thresholds: Thresholds = Thresholds(), optimizer: str | None = None,
                       stages: Sequence[str] | None = None, remat: str | None = None) -> TrainingCheck:
    """The check of ``artifact`` on ``backends`` (default: every trainer the executor runs); ``truth``: judge each
    numeric verdict by float64 (a worker of its own, started only when there is one); ``optimizer``: the catalogue
    entry of the ``optimizer`` stage (default: the model's, :func:`choose_optimizer` of its folder's name; ``""``:
    no such stage); ``stages``: those worker stages only (default: every one); ``remat``: the layers built as inside
    ``keras.RematScope(mode=remat)`` on every backend (:mod:`memo.backends.training_remat`; the truth without)."""
    names = [name for name in trainers(backends if backends is not None else executor.backend_names)
             if name in executor.backend_names and inference_passed(executor, artifact, name)]
    if not names:
        return TrainingCheck(reference="", judgement=Judgement(left_out="no backend with a training check selected"))
    started = time.perf_counter()
    check = TrainingCheck(reference=training_reference(names, executor.reference))
    converted = any(executor.members[name].consumes != "keras" for name in names)
    chosen = choose_optimizer(artifact.directory.name) if optimizer is None else optimizer or None
    # with a converted module among them, the Keras trainers add the inference-mode stages it is judged by
    check.results = executor.train(artifact, names, scratch,
                                   {**({"optimizer": chosen} if chosen else {}),
                                    **({REMAT_KEY: remat} if remat else {}),
                                    **({"inference": True} if converted else {}),
                                    **({"stages": list(stages)} if stages is not None else {})})
    arrays = {name: read_arrays(result.outputs_path) for name, result in check.results.items()}
    check.judgement = judge_training({name: result.stages for name, result in check.results.items()}, arrays,
                                     check.reference, thresholds)
    check.seconds = time.perf_counter() - started
    numeric = [verdict for verdict in check.judgement.verdicts if verdict.kind in NUMERIC]
    if truth and numeric:
        started = time.perf_counter()
        for engine in dict.fromkeys(engine_for(verdict.backend) for verdict in numeric):
            judged = [verdict for verdict in numeric if engine_for(verdict.backend) == engine]
            runner = TruthTrainer(scratch / "truth" / engine, engine=engine)
            try:
                # the stages the verdicts need only: an optimizer verdict's truth does not depend on the forward pass
                needed = list(dict.fromkeys(stage for verdict in judged for stage in worker_stages(verdict.stage)))
                wide, moved = runner.runs(artifact, needed, chosen)
            finally:
                runner.close()
            for verdict in judged:
                verdict.truth = assess_verdict(verdict, arrays, wide, moved, check.reference, thresholds)
        check.truth_seconds = time.perf_counter() - started
    return check


def inference_passed(executor: DifferentialExecutor, artifact: Artifact, name: str) -> bool:
    """Whether trainer ``name`` is checked on ``artifact``: a Keras backend always; a converted module (onnx2torch,
    onnx2pytorch) where its inference run wrote outputs (a conversion or forward failure is the inference check's
    finding, not reported twice; its ONNX file exists then)."""
    return executor.members[name].consumes == "keras" or artifact.outputs_path(name).exists()


class TruthTrainer:
    """The float64 engine's worker (:mod:`memo.backends.float64_truth`) answering ``train`` requests: its own, or
    ``worker`` (triage's warm one, which answers its inference truths too; then ``close`` leaves it running)."""

    def __init__(self, scratch: Path, timeout_s: float = TRUTH_TIMEOUT_S, worker: WorkerProcess | None = None,
                 engine: str = ENGINE) -> None:
        self.scratch = scratch
        self.timeout_s = timeout_s
        self.owned = worker is None
        self.engine = engine
        spec = load_spec(engine)
        self.worker = worker if worker is not None else WorkerProcess(
            WorkerCommand(group=engine, args=["--spec", engine], env=dict(spec.env)), scratch / "logs",
            startup_timeout_s=180.0)

    def arrays(self, artifact: Artifact, inputs: dict[str, np.ndarray], tag: str,
               perturb: int | None = None, stages: list[str] | None = None,
               optimizer: str | None = None) -> Arrays | str:
        """The float64 arrays of every stage (``stages``: those worker stages only) on ``inputs`` (``perturb``: with
        the weights moved, seeded by it; ``optimizer``: the catalogue entry of the ``optimizer`` stage), or why there
        are none."""
        self.scratch.mkdir(parents=True, exist_ok=True)
        options: dict[str, object] = {"stages": stages} if stages is not None else {}
        if optimizer:
            options["optimizer"] = optimizer
        inputs_path, out = self.scratch / f"{tag}.inputs.npz", self.scratch / f"{tag}.train.npz"
        np.savez(inputs_path, **inputs)
        reply = self.worker.request({"op": "train", "backend": self.engine, "model": str(artifact.keras_path.resolve()),
                                     "inputs": str(inputs_path.resolve()), "input_names": list(inputs),
                                     "out": str(out.resolve()), "options": {"perturb": perturb, **options}},
                                    self.timeout_s)
        failed = next((stage for stage in reply.stages if stage.status != "ok"), None)
        if failed is not None or not reply.outputs:
            return f"{self.engine} failed at {failed.stage} ({failed.status}): " \
                f"{' '.join(failed.message.split())[:300]}" if failed is not None else f"{self.engine} wrote nothing"
        return read_arrays(reply.outputs)

    def runs(self, artifact: Artifact, stages: list[str] | None = None,
             optimizer: str | None = None) -> tuple[Arrays | str, list[Arrays]]:
        """(the float64 arrays on the artifact's inputs or why there are none, those with the inputs and the weights
        perturbed); ``stages``: those worker stages only; ``optimizer``: the catalogue entry of the ``optimizer``
        stage (none without it)."""
        names = [layer.name for layer in artifact.read_ir().input_layers]
        with np.load(artifact.inputs_path, allow_pickle=False) as data:
            inputs = {name: data[name] for name in names}
        wide = self.arrays(artifact, inputs, "truth", stages=stages, optimizer=optimizer)
        if isinstance(wide, str):
            return wide, []
        moved = [self.arrays(artifact, perturb(inputs, index), f"perturbed{index}", index, stages, optimizer)
                 for index in range(PERTURBATIONS)]
        failed = next((run for run in moved if isinstance(run, str)), None)
        if failed is not None:
            return failed, []
        return wide, [run for run in moved if not isinstance(run, str)]

    def close(self) -> None:
        if self.owned:
            self.worker.stop()



def train_if_chosen(executor: object, artifact: Artifact, result: ExecutionResult, chosen: str,
                    optimizer: str | None = None, remat: str | None = None) -> TrainingCheck | None:
    """The check of a model a campaign executed, when it was ``chosen`` (why: :class:`memo.training.selection.
    TrainingSelection`, kept in the check's summary) and the reference ran it, stepping catalogue entry ``optimizer``
    (default: the model's hashed one), under ``keras.RematScope`` mode ``remat`` (the campaign's choice:
    :meth:`memo.training.selection.TrainingSelection.remat`; None: without); None otherwise,
    and on an executor without a training check (a cluster's). No float64 truth: that is triage's."""
    reference = result.backends.get(result.reference)
    if not chosen or reference is None or reference.status != "ok" \
            or not isinstance(executor, DifferentialExecutor):
        return None
    try:
        check = run_training_check(executor, artifact, artifact.directory / "training", truth=False,
                                   optimizer=optimizer, remat=remat)
        check.chosen = chosen
        return check
    except Exception as exc:  # noqa: BLE001  (a defect of the check must not cost the model its inference result)
        return TrainingCheck(reference=result.reference, judgement=Judgement(
            left_out=f"{CHECK_FAILED}: {type(exc).__name__}: {exc}"[:500]))


def stored_verdicts(check: TrainingCheck | None) -> list[Verdict]:
    """The check's findings (:data:`memo.kinds.TRAINING_KINDS`) as the store keeps verdicts: the training verdict's
    own fields (array, weight, figures) under ``training`` in the metrics."""
    if check is None:
        return []
    return [Verdict(verdict.kind, verdict.backend, verdict.stage, verdict.message,
                    extra={"training": {key: value for key, value in verdict.to_json().items()
                                        if key not in ("kind", "backend", "stage", "message")}})
            for verdict in check.judgement.verdicts if verdict.kind in TRAINING_KINDS]
