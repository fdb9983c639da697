"""The optimizer sweep: every entry of the optimizer catalogue stepped once on a model's weights by precision.

An optimizer's update depends on the variables' shapes, dtypes and values only (the check steps a fixed gradient:
:func:`memo.backends.training.fixed_gradients`), and its defects live in one precision's code path: Nadam's
bfloat16 update, Muon on float64 variables, a global norm over float16 and float32 gradients, Keras on torch
computing an optimizer's scalars in the first variable's dtype. The model-level check steps one catalogue entry per
checked model (:meth:`memo.training.selection.TrainingSelection.optimizer`), so a precision a campaign builds a few
times meets a few of the twenty entries, on large models whose every step costs seconds.

The sweep runs, the first time a campaign executes a model with a new set of weight dtypes, every entry on that
model's precision probe (:func:`memo.triage.precision_probe.precision_probe`: one layer per weight dtype, each on a
fresh input: a few thousand weights), stage ``optimizer`` alone, on every Keras trainer: about 0.3-0.6 s per entry
for the three backends (2026-11-28, the 2-core machine), some 10 s per dtype set. Its verdicts are stored with the
executed model's, each keeping the probe's IR (``model_ir`` in its ``training`` record), which triage reduces and
reproduces (:func:`memo.triage.training_bug.triage_training_bug`) instead of the model's.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

from memo.artifact import prepare_artifact
from memo.backends.executor import DifferentialExecutor
from memo.backends.training_optimizers import CATALOGUE, OPTIMIZER_STAGE
from memo.model.ir import ModelIR
from memo.oracle import Verdict
from memo.training.check import run_training_check, stored_verdicts, trainers
from memo.training.judge import MODEL_IR_KEY
from memo.training.selection import weight_dtypes



@dataclass
class Sweep:
    """The sweeps run beside one executed model: per probe the weight dtypes it covered, the entries stepped and its
    findings; all its findings (stored verdicts), its seconds."""

    sets: list[dict[str, object]] = field(default_factory=list)
    verdicts: list[Verdict] = field(default_factory=list)
    seconds: float = 0.0
    error: str = ""

    def summary(self) -> dict[str, object]:
        """What the campaign keeps with the model's execution (``optimizer_sweep``: the report lists the sets)."""
        return {"sets": self.sets, "seconds": round(self.seconds, 3), **({"error": self.error} if self.error else {})}


def sweep_optimizers(executor: DifferentialExecutor, probes: Sequence[ModelIR], directory: Path, seed: int,
                     entries: Sequence[str] | None = None) -> Sweep:
    """Step every catalogue entry (or ``entries``) on each of ``probes`` on the executor's Keras trainers (stage
    ``optimizer`` only) and judge each; never raises for what a library does."""
    started = time.perf_counter()
    sweep = Sweep()
    names = [name for name in trainers(executor.backend_names) if executor.members[name].consumes == "keras"]
    if len(names) < 2:
        sweep.error = "fewer than two Keras trainers"
        return sweep
    try:
        for index, probe in enumerate(probes):
            found = len(sweep.verdicts)
            stepped = 0
            artifact = prepare_artifact(probe, directory / f"p{index}", seed=seed)
            for entry in entries if entries is not None else sorted(CATALOGUE):
                check = run_training_check(executor, artifact, directory / f"p{index}" / entry, names, truth=False,
                                           optimizer=entry, stages=[OPTIMIZER_STAGE])
                for verdict in stored_verdicts(check):
                    verdict.extra["training"][MODEL_IR_KEY] = probe.dumps()
                    sweep.verdicts.append(verdict)
                stepped += 1
            sweep.sets.append({"dtypes": list(weight_dtypes(probe)), "entries": stepped,
                               "verdicts": len(sweep.verdicts) - found})
    except Exception as exc:  # noqa: BLE001  (a defect of the sweep must not cost the model its inference result)
        sweep.error = f"{type(exc).__name__}: {exc}"[:300]
    sweep.seconds = time.perf_counter() - started
    return sweep


__all__ = ["MODEL_IR_KEY", "Sweep", "sweep_optimizers"]
