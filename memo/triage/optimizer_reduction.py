"""Reduction of an optimizer-stage training bug's optimizer configuration, after its model's (docs/training.md,
"Triage").

A campaign steps each model with one catalogue entry (:mod:`memo.backends.training_optimizers`), whose settings are
there to reach code, not because a bug needs them: campaign s50's Keras-on-torch defect on float16 + float32
variables (the optimizer's scalars computed in the first variable's dtype) was found by ``adam-accumulate`` and filed
with ``Adam(gradient_accumulation_steps=2)``, though plain ``Adam`` shows it. So once the model is reduced, triage
tries the entry's simpler forms (:func:`memo.backends.training_optimizers.simpler_forms`): the plain class first, then
each setting dropped in turn, keeping each drop under which the bug still shows with the same signature; the
simplest configuration found is the bug's (bug.json, ``repro.py``, the minimal script, the title). The signature's
optimizer part is the entry's Keras class (or none at all for a mixed-precision defect), which dropping settings never
changes, so the bug's dedup key is the same. A few training runs of the reduced model: seconds, in triage only.
"""
from __future__ import annotations

import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Generic, Protocol, TypeVar

from memo.backends.executor import ExecutionAbandoned
from memo.backends.training_optimizers import derived_name, optimizer_entry, settings


class Shown(Protocol):
    """A training run (:class:`memo.triage.training_bug.TrainingRun`): the verdict matching the bug, None when not."""

    verdict: Any


Run = TypeVar("Run", bound=Shown)


@dataclass
class OptimizerReduction(Generic[Run]):
    """The simplest configuration showing the bug (``name``; the found one when none simpler does), the run that
    showed it under that configuration (None: the found one's, not rerun), and the configurations tried, in order."""

    name: str
    run: Run | None = None
    tried: list[str] = field(default_factory=list)

    def step(self, found: str) -> str:
        """The reduction's step as the bug's ``reduction.steps`` lists it."""
        if self.name == found:
            return (f"optimizer {found}: kept, none of {', '.join(self.tried)} shows the bug" if self.tried
                    else f"optimizer {found}: no setting to drop")
        tried = len(self.tried)
        return f"optimizer {found} -> {self.name}: shows the bug ({tried} configuration{'s' if tried != 1 else ''} tried)"


def reduce_optimizer(found: str, shows: Callable[[str], Run | None]) -> OptimizerReduction[Run]:
    """The simplest form of entry ``found`` under which ``shows`` (a training run of the reduced model under that
    configuration: its run when the bug shows with the same signature, else None) still shows the bug: the plain class
    where it does (one run), else ``found`` without each setting the bug survives losing, one setting at a time in
    the entry's order (at most one run per setting)."""
    keys = settings(optimizer_entry(found))
    reduction: OptimizerReduction[Run] = OptimizerReduction(found)
    if not keys:
        return reduction
    plain = derived_name(found, keys)
    reduction.tried.append(plain)
    run = shows(plain)
    if run is not None:
        return OptimizerReduction(plain, run, reduction.tried)
    for key in keys:
        candidate = derived_name(reduction.name, (key,))
        if candidate in reduction.tried or candidate == reduction.name:
            continue  # the plain class again (the last setting left), already known not to show it
        reduction.tried.append(candidate)
        run = shows(candidate)
        if run is not None:
            reduction.name, reduction.run = candidate, run
    return reduction


def showing_run(check: Callable[[Path], Run], directory: Path, failed: Callable[[Exception], None]) -> Run | None:
    """``check``'s run in ``directory`` where it shows the bug (its folder kept: the bug's folder is written from
    it), else None (the folder removed); a defect while checking (``failed`` records it) rejects the configuration."""
    try:
        run = check(directory)
    except ExecutionAbandoned:
        raise
    except Exception as exc:  # noqa: BLE001  (a defect while checking one configuration rejects it)
        failed(exc)
        run = None
    if run is None or run.verdict is None:
        shutil.rmtree(directory, ignore_errors=True)
        return None
    return run


__all__ = ["OptimizerReduction", "reduce_optimizer", "showing_run"]
