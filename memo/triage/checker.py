"""The reduction predicate: does a candidate model still show the bug, with the same signature?

Also the check before a bug is reduced (:meth:`Checker.shows_again`). A hang is confirmed the hard way: the
model runs again on the hanging library alone (a fresh worker, no other library in the run) with twice the
per-model limit (memo.defaults.HANG_CONFIRM_FACTOR; no first-model grace on top). A model that finishes
then was a slow run on a loaded machine, not a hang: triage records it as not shown again ("unconfirmed").
"""
from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np

from memo.backends import load_spec
from memo.backends.executor import DifferentialExecutor, ExecutionAbandoned
from memo.defaults import HANG_CONFIRM_FACTOR
from memo.model.ir import ModelIR
from memo.mutation.nan import has_injection
from memo.oracle import judge
from memo.triage.finding import Finding
from memo.triage.localize import Localization, localize
from memo.triage.materialize import find_plugin
from memo.triage.probe import Run, alone, failure_backends, read_inputs, run_model
from memo.triage.session import Session
from memo.kinds import NUMERIC_KINDS
from memo.triage.signature import signature


class Checker:
    """Runs candidates on the backends the bug involves and compares their verdicts' signatures."""

    def __init__(self, session: Session, bug_id: str, finding: Finding, artifact_dir: Path | None) -> None:
        self.session = session
        self.bug_id = bug_id
        self.kind = finding.kind
        self.backend = finding.verdict.backend
        self.roles = session.roles(finding)
        # what a candidate runs on: a numeric bug's roles (the blame needs them), a failure's own library
        self.backends = (self.roles.backends if self.kind in NUMERIC_KINDS
                         else failure_backends(str(self.backend), finding.reference, self.roles))
        self.inputs: dict[str, np.ndarray] | None = (read_inputs(artifact_dir / "inputs.npz")
                                                     if artifact_dir is not None else None)
        self.count = 0
        self.localization: Localization | None = None  # the numeric localization of the last run
        # the last candidate that showed a failure bug, its run kept (:meth:`shown_run`): the reduction's result is
        # that candidate, so its run is the final check's (t63: final checks 99 s of a 40-minute campaign's triage)
        self.shown: tuple[ModelIR, Run, str | None, Path] | None = None

    def run(self, ir: ModelIR, directory: Path, *, recheck: bool = False) -> tuple[bool, Run, str | None]:
        """(same bug?, the run, the localized node). ``recheck``: re-check a numeric culprit alone (the final
        model's localization, kept in ``localization``; reduction's candidates skip it)."""
        executor = self.session.executor
        layer = None
        special = has_injection(ir)
        if self.kind in NUMERIC_KINDS:
            found, run = localize(executor, ir, self.kind, self.roles, directory, seed=self.session.seed,
                                  inputs=self.inputs, recheck=recheck)
            self.localization = found
            layer = found.layer
            if run.result is None:
                return False, run, layer
            verdicts = judge(run.result, outputs=run.real_outputs(ir.outputs), special_values=special)
        else:
            run = run_model(executor, ir, directory, seed=self.session.seed, inputs=self.inputs,
                            backends=self.backends)
            if run.result is None:
                return False, run, layer
            verdicts = judge(run.result, special_values=special)
        same = any(v.kind == self.kind and v.backend == self.backend
                   and signature(v, run.result, ir, divergent_layer=layer) == self.bug_id for v in verdicts)
        return same, run, layer

    def hang_limit_s(self) -> float:
        """Twice the limit the hanging library ran under (its spec's own limit where that is longer)."""
        try:
            own = load_spec(self.backend).timeout_s or 0.0
        except KeyError:  # a plugin
            own = 0.0
        return HANG_CONFIRM_FACTOR * max(own, self.session.timeout_s)

    def hangs_alone(self, ir: ModelIR, directory: Path) -> bool:
        """Whether the model still hangs on the bug's library alone, given :meth:`hang_limit_s`."""
        names = alone(self.backend, self.roles)
        plugin = find_plugin(self.backend, self.session.plugins)
        registered = [name for name in names if plugin is None or name != plugin.name]
        with DifferentialExecutor(backends=registered, plugins=[plugin.path] if plugin else [],
                                  timeout_s=self.hang_limit_s(), first_model_grace=1.0) as executor:
            run = run_model(executor, ir, directory, seed=self.session.seed, inputs=self.inputs, backends=names)
        return run.result is not None and any(
            result.status == "hang" for name, result in run.result.backends.items() if name == self.backend)

    def shows_again(self, ir: ModelIR, directory: Path) -> bool:
        """Whether the bug's own model still shows it when run again as the campaign ran it (the plain
        model, not the probe: exposing every layer as an output may change how a library compiles it); a
        hang: when it hangs again alone with twice the limit (:meth:`hangs_alone`)."""
        try:
            if self.kind == "hang" and alone(self.backend, self.roles):
                return self.hangs_alone(ir, directory)
            run = run_model(self.session.executor, ir, directory, seed=self.session.seed, inputs=self.inputs,
                            backends=self.backends)
            if run.result is None:
                return False
            # a numeric bug's signature needs localization, which reduction checks on every candidate
            return any(v.kind == self.kind and v.backend == self.backend
                       and (self.kind in NUMERIC_KINDS or signature(v, run.result, ir) == self.bug_id)
                       for v in judge(run.result, special_values=has_injection(ir)))
        finally:
            shutil.rmtree(directory, ignore_errors=True)

    def keeps_runs(self) -> bool:
        """Whether a showing candidate's run stands for the final check: a failure's, run as the final check runs it
        (a numeric bug's final run re-checks its culprit alone; a hang's candidates run with a shorter limit)."""
        return self.kind not in NUMERIC_KINDS and self.kind != "hang"

    def shown_run(self, ir: ModelIR) -> tuple[Run, str | None] | None:
        """The kept run of candidate ``ir`` when it was the last to show the bug (its folder stays until
        :meth:`release`), else None: the final check runs it again."""
        if self.shown is None or self.shown[0] != ir:
            return None
        return self.shown[1], self.shown[2]

    def release(self) -> None:
        """Remove the kept run's folder (once the bug's folder is written from it)."""
        if self.shown is not None:
            shutil.rmtree(self.shown[3], ignore_errors=True)
            self.shown = None

    def __call__(self, ir: ModelIR) -> bool:
        self.count += 1
        directory = self.session.work / f"{self.bug_id}-c{self.count}"
        kept = False
        try:
            same, run, layer = self.run(ir, directory)
            if same and self.keeps_runs() and run.artifact is not None:
                self.release()
                self.shown, kept = (ir, run, layer, directory), True
            return same
        except ExecutionAbandoned:
            raise  # not a verdict on the candidate: the campaign is stopping
        except Exception as exc:  # a defect while checking one candidate rejects it, never ends triage
            self.session.error(self.bug_id, f"checking candidate {self.count}", exc)
            return False
        finally:
            if not kept:
                shutil.rmtree(directory, ignore_errors=True)
