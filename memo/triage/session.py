"""One triage pass's resources: the store, an executor (the campaign's, or one started on first need), the
clock, a scratch directory, and a way to get a finding's artifact back when the campaign deleted it."""
from __future__ import annotations

import shutil
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from memo.artifact import ensure_artifact
from memo.backends import BACKENDS, default_backends
from memo.backends.cuda import STRICT
from memo.backends.executor import DifferentialExecutor, ExecutionAbandoned, Executor
from memo.defaults import DEFAULT_TIMEOUT_S
from memo.diskspace import is_disk_full
from memo.json_types import JsonObject
from memo.store import CampaignStore
from memo.triage.finding import Finding
from memo.triage.probe import Roles, roles
from memo.newest import is_off
from memo.triage.newest import recorded_next_python
from memo.triage.truth import TruthRunner

WORK_DIR = "triage-work"
TRIAGE_TIMEOUT_S = DEFAULT_TIMEOUT_S
SCRIPT_START_S = 60.0  # a script check's allowance beyond its model runs: a fresh process's imports (12-30 s here)
UNIT_TRUTH_S = 15.0  # a reduced numeric bug's float64 truth, the last step of its unit


@dataclass
class TriageSummary:
    bugs: int = 0
    new: int = 0  # bugs triaged in this pass
    localized: int = 0
    reduced: int = 0
    merged: int = 0
    scripts: int = 0
    reproduced: int = 0
    known: int = 0  # bugs the bug database knew: reduced model copied, not reduced again
    newest: int = 0  # reproducing bugs rerun on the newest code (memo.triage.newest)
    fixed_upstream: int = 0  # of those, how many the newest code no longer shows
    seconds: float = 0.0
    errors: list[str] = field(default_factory=list)

    @property
    def worked(self) -> bool:
        return bool(self.new or self.localized or self.known)

    def add(self, other: "TriageSummary") -> None:
        """Count another pass's work in this total (``bugs``: the latest count)."""
        for name in ("new", "localized", "reduced", "merged", "scripts", "reproduced", "known", "newest",
                     "fixed_upstream"):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        self.bugs = other.bugs or self.bugs
        self.seconds += other.seconds
        self.errors.extend(other.errors)

    def to_json(self) -> JsonObject:
        return dict(self.__dict__)


class Session:
    """One triage pass: the store, an executor created on first need, the clock."""

    def __init__(self, store: CampaignStore, executor: Executor | None, time_budget_s: float,
                 next_python: str | None = None, hard_end: float | None = None,
                 truth: TruthRunner | None = None) -> None:
        """``hard_end`` (monotonic clock): a time no step of the pass may run past (a timed campaign's final pass); the
        budget then ends :meth:`unit_tail_s` before it, and a script starts only if its own limit fits. ``truth``: the
        caller's float64 workers, kept warm across passes (a campaign's), else the pass starts its own."""
        self.store = store
        self.executor = executor
        self.own_executor = False
        self.started = time.monotonic()
        config = store.get_meta("config", {}) or {}
        self.seed = int(config.get("seed", 0) or 0)
        self.timeout_s = float(config.get("timeout_s", TRIAGE_TIMEOUT_S) or TRIAGE_TIMEOUT_S)
        self.hard_end = hard_end
        self.deadline = self.started + max(0.0, time_budget_s)
        if hard_end is not None:
            self.deadline = min(self.deadline, hard_end - self.unit_tail_s())
        self.available = list(config.get("backends") or default_backends())
        self.reference: str | None = config.get("reference")
        self.gpu_precision = str(config.get("gpu_precision") or STRICT)
        self.plugins: list[str] = list(config.get("plugins") or [])
        # the newest-code interpreter: the caller's (``memo report --next-python``), else the campaign's
        self.next_python: str | None = None if is_off(next_python) else next_python or recorded_next_python(config)
        self.work = store.directory.resolve() / WORK_DIR  # absolute: workers do not share our cwd
        self.summary = TriageSummary()
        self.executor_failed = False
        self.needed: set[str] = set()  # the backends the pending work involves (set before any execution)
        self._truth: TruthRunner | None = truth
        self._own_truth = truth is None

    def remaining(self) -> float:
        return self.deadline - time.monotonic()

    def unit_tail_s(self) -> float:
        """How far a unit of work may run past the budget it started within: a reduction's last candidate and its
        final check (a model run each, at most the per-model limit) and the folder's float64 truth. long150c's final
        pass ended 15 s past its end that way, and the campaign 4 s past its slot."""
        return 2 * self.timeout_s + UNIT_TRUTH_S

    def script_limit_s(self, runs: int = 1) -> float:
        """The wall-clock limit of a script check in a fresh process (its imports, then ``runs`` model runs)."""
        return runs * self.timeout_s + SCRIPT_START_S

    def script_fits(self, least_s: float, runs: int = 1) -> bool:
        """Whether a script check of ``runs`` model runs may start (:meth:`has_room` with :meth:`script_limit_s`)."""
        return self.has_room(least_s, self.script_limit_s(runs))

    def has_room(self, least_s: float, limit_s: float) -> bool:
        """Whether a step may start that needs at least ``least_s`` of the pass's budget and may run ``limit_s``: a
        pass with a hard end starts it only when it ends by then too."""
        now = time.monotonic()
        return self.deadline - now > least_s and (self.hard_end is None or self.hard_end - now > limit_s)

    def error(self, bug_id: str | None, step: str, exc: BaseException) -> None:
        """Record a failure of triage itself, in the summary and in the store (the report shows it)."""
        text = f"{type(exc).__name__}: {exc}"
        self.summary.errors.append(f"{bug_id or '-'}: {step}: {text}")
        # the innermost frames: where it arose (long150f's parse race was cut off by the outermost six)
        self.store.triage.record_error(bug_id, step, f"{text}\n{traceback.format_exc(limit=-8)}")

    def attempt(self, bug_id: str | None, step: str, work: Callable[[], object],
                on_failure: Callable[[Exception], object] | None = None) -> bool:
        """Run one unit of work with triage's one failure policy: a stopping campaign (:class:`ExecutionAbandoned`)
        ends the pass (False; the work stays pending for the next one); a full disk is raised (not the bug's fault:
        the campaign stops cleanly); any other failure is recorded as triage's (:meth:`error`), then
        ``on_failure`` is told, and the pass goes on (True)."""
        try:
            work()
        except ExecutionAbandoned:
            return False
        except Exception as exc:  # noqa: BLE001  (one unit failing must not lose the others; the report lists it)
            if is_disk_full(exc):
                raise
            self.error(bug_id, step, exc)
            if on_failure is not None:
                on_failure(exc)
        return True

    def get_executor(self) -> Executor | None:
        """The caller's executor, or one started now for just the libraries the pending bugs involve."""
        if self.executor is not None or self.executor_failed:
            return self.executor
        names = sorted(name for name in self.needed if name in BACKENDS)
        try:
            self.executor = DifferentialExecutor(backends=names, timeout_s=min(self.timeout_s, TRIAGE_TIMEOUT_S),
                                                 reference=self.reference if self.reference in names else None,
                                                 gpu_precision=self.gpu_precision)
            self.own_executor = True
        except Exception as exc:  # no execution possible: triage continues without localization/reduction
            self.executor_failed = True
            self.error(None, "starting the executor", exc)
        return self.executor

    def truth_runner(self) -> TruthRunner:
        """The float64 worker of this pass (started on its first request)."""
        if self._truth is None:
            self._truth = TruthRunner(self.work / "truth-logs")
        return self._truth

    def close(self) -> None:
        if self._truth is not None and self._own_truth:
            self._truth.close()
        if self.own_executor and self.executor is not None:
            try:
                self.executor.close()
            except Exception as exc:  # closing dead workers may fail; nothing is lost
                self.summary.errors.append(f"closing executor: {exc}")
        shutil.rmtree(self.work, ignore_errors=True)

    def roles(self, finding: Finding) -> Roles:
        return roles(finding.verdict, finding.reference, self.available)

    def artifact_of(self, finding: Finding, *, execute: bool = True) -> Path | None:
        """The finding's artifact directory; rebuilt from its IR (and, with ``execute``, re-run on the
        backends the bug involves, so that the outputs the bug folder copies exist) when the campaign
        deleted it."""
        if finding.artifact_dir is not None or finding.ir is None:
            return finding.artifact_dir
        directory = self.work / f"artifact-{finding.mutant_id}"
        artifact = ensure_artifact(finding.ir, directory, seed=self.seed)
        if execute and not (directory / "outputs").exists():
            executor = self.get_executor()
            if executor is None:
                return None
            wanted = [name for name in self.roles(finding).backends if name in executor.backend_names]
            executor.run(artifact, wanted)
        finding.artifact_dir = directory
        return directory
