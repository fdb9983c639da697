"""The reduction predicate: does a candidate model still show the bug, with the same signature?"""
from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np

from memo.backends.executor import ExecutionAbandoned
from memo.model.ir import ModelIR
from memo.mutation.nan import has_injection
from memo.oracle import judge
from memo.triage.finding import Finding
from memo.triage.localize import localize
from memo.triage.probe import Run, read_inputs, run_model
from memo.triage.session import Session
from memo.triage.signature import NUMERIC_KINDS, signature


class Checker:
    """Runs candidates on the backends the bug involves and compares their verdicts' signatures."""

    def __init__(self, session: Session, bug_id: str, finding: Finding, artifact_dir: Path | None) -> None:
        self.session = session
        self.bug_id = bug_id
        self.kind = finding.kind
        self.backend = finding.verdict.backend
        self.roles = session.roles(finding)
        self.inputs: dict[str, np.ndarray] | None = (read_inputs(artifact_dir / "inputs.npz")
                                                     if artifact_dir is not None else None)
        self.count = 0

    def run(self, ir: ModelIR, directory: Path) -> tuple[bool, Run, str | None]:
        """(same bug?, the run, the localized node)."""
        executor = self.session.executor
        layer = None
        special = has_injection(ir)
        if self.kind in NUMERIC_KINDS:
            found, run = localize(executor, ir, self.kind, self.roles, directory, seed=self.session.seed,
                                  inputs=self.inputs)
            layer = found.layer
            if run.result is None:
                return False, run, layer
            verdicts = judge(run.result, outputs=run.real_outputs(ir.outputs), special_values=special)
        else:
            run = run_model(executor, ir, directory, seed=self.session.seed, inputs=self.inputs,
                            backends=self.roles.backends)
            if run.result is None:
                return False, run, layer
            verdicts = judge(run.result, special_values=special)
        same = any(v.kind == self.kind and v.backend == self.backend
                   and signature(v, run.result, ir, divergent_layer=layer) == self.bug_id for v in verdicts)
        return same, run, layer

    def shows_again(self, ir: ModelIR, directory: Path) -> bool:
        """Whether the bug's own model still shows it when run again as the campaign ran it (the plain
        model, not the probe: exposing every layer as an output may change how a library compiles it)."""
        try:
            run = run_model(self.session.executor, ir, directory, seed=self.session.seed, inputs=self.inputs,
                            backends=self.roles.backends)
            if run.result is None:
                return False
            # a numeric bug's signature needs localization, which reduction checks on every candidate
            return any(v.kind == self.kind and v.backend == self.backend
                       and (self.kind in NUMERIC_KINDS or signature(v, run.result, ir) == self.bug_id)
                       for v in judge(run.result, special_values=has_injection(ir)))
        finally:
            shutil.rmtree(directory, ignore_errors=True)

    def __call__(self, ir: ModelIR) -> bool:
        self.count += 1
        directory = self.session.work / f"{self.bug_id}-c{self.count}"
        try:
            return self.run(ir, directory)[0]
        except ExecutionAbandoned:
            raise  # not a verdict on the candidate: the campaign is stopping
        except Exception as exc:  # a defect while checking one candidate rejects it, never ends triage
            self.session.error(self.bug_id, f"checking candidate {self.count}", exc)
            return False
        finally:
            shutil.rmtree(directory, ignore_errors=True)
