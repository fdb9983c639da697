"""Bug triage: deduplicate findings into bugs, localize numeric bugs, reduce every new bug to a minimal
model and write a standalone reproduction script for it.

``triage_campaign`` is idempotent: a bug that already has its folder is left alone, a localized finding
is not localized again. It never raises for anything a library or a model does, and stops starting new
work once ``time_budget_s`` is spent (dedup and scripts for the remaining bugs still happen, without
reduction). ``start_background_triage`` runs it in a thread with its own database connection.
"""
from __future__ import annotations

import json
import shutil
import threading
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memo.model.ir import ModelIR
from memo.store import CampaignStore
from memo.triage import db, dedup
from memo.triage.bugdir import bug_folder
from memo.triage.signature import NUMERIC_KINDS, failure_details, signature, signature_parts

WORK_DIR = "triage-work"
PER_BUG_S = 90.0
NOT_REDUCED = "not reduced (no time or no executor)"
RETRY_STATUSES = ("timeout", NOT_REDUCED)  # a later pass continues these from the folder's model
TRIAGE_TIMEOUT_S = 30.0


@dataclass
class TriageSummary:
    bugs: int = 0
    new: int = 0  # bugs triaged in this pass (those without a folder yet)
    localized: int = 0
    reduced: int = 0
    scripts: int = 0
    reproduced: int = 0
    seconds: float = 0.0
    errors: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass
class Finding:
    """The first occurrence of a bug (or one numeric finding): verdict, result, model and artifact."""

    verdict: dict[str, Any]
    result: dict[str, Any] | None
    ir: ModelIR | None
    artifact_dir: Path | None

    @property
    def reference(self) -> str:
        return str((self.result or {}).get("reference") or "keras-tensorflow")


def _resolve(path: str | None, store: CampaignStore) -> Path | None:
    """Artifact directories are stored relative to where the campaign ran (normally the project root)."""
    if not path:
        return None
    candidate = Path(path)
    for base in (Path.cwd(), store.directory.resolve().parent.parent):
        full = candidate if candidate.is_absolute() else base / candidate
        if (full / "model.keras").exists():
            return full
    return None


def load_finding(store: CampaignStore, verdict_id: int) -> Finding | None:
    rows = store.rows("SELECT v.*, e.result, e.artifact_dir, m.ir FROM verdicts v LEFT JOIN executions e"
                      " ON e.mutant_id = v.mutant_id LEFT JOIN mutants m ON m.id = v.mutant_id WHERE v.id = ?",
                      (verdict_id,))
    if not rows:
        return None
    row = rows[0]
    verdict = {**row, "metrics": json.loads(row["metrics"] or "{}")}
    ir = None
    if row.get("ir"):
        try:
            ir = ModelIR.loads(row["ir"])
        except Exception:  # an unreadable IR leaves the finding unreducible, nothing worse
            ir = None
    return Finding(verdict, json.loads(row["result"]) if row.get("result") else None, ir,
                   _resolve(row.get("artifact_dir"), store))


class _Session:
    """One triage pass: the store, an executor created on first need, the clock."""

    def __init__(self, store: CampaignStore, executor: Any, time_budget_s: float) -> None:
        self.store = store
        self.executor = executor
        self.own_executor = False
        self.started = time.monotonic()
        self.deadline = self.started + max(0.0, time_budget_s)
        config = store.get_meta("config", {}) or {}
        self.seed = int(config.get("seed", 0) or 0)
        self.timeout_s = float(config.get("timeout_s", 60.0) or 60.0)
        from memo.backends import DEFAULT_BACKENDS  # noqa: PLC0415

        self.available = list(config.get("backends") or DEFAULT_BACKENDS)
        self.work = store.directory.resolve() / WORK_DIR  # absolute: workers do not share our cwd
        self.summary = TriageSummary()
        self.executor_failed = False
        self.needed: set[str] = set()  # the backends the pending work involves (set before any execution)

    def remaining(self) -> float:
        return self.deadline - time.monotonic()

    def get_executor(self) -> Any:
        """The caller's executor, or one started now for just the libraries the pending bugs involve."""
        if self.executor is not None or self.executor_failed:
            return self.executor
        from memo.backends import BACKENDS  # noqa: PLC0415
        from memo.backends.executor import DifferentialExecutor  # noqa: PLC0415

        names = sorted(name for name in self.needed if name in BACKENDS)
        try:
            self.executor = DifferentialExecutor(backends=names, timeout_s=min(self.timeout_s, TRIAGE_TIMEOUT_S))
            self.own_executor = True
        except Exception as exc:  # no execution possible: triage continues without localization/reduction
            self.executor_failed = True
            self.summary.errors.append(f"executor: {type(exc).__name__}: {exc}")
        return self.executor

    def close(self) -> None:
        if self.own_executor and self.executor is not None:
            try:
                self.executor.close()
            except Exception as exc:  # closing dead workers may fail; nothing is lost
                self.summary.errors.append(f"closing executor: {exc}")
        shutil.rmtree(self.work, ignore_errors=True)

    def roles(self, finding: Finding) -> Any:
        from memo.triage.probe import roles  # noqa: PLC0415

        return roles(finding.verdict, finding.reference, self.available)


# ---------------------------------------------------------------------------- localization
def _localize_pending(session: _Session) -> None:
    store = session.store
    for verdict_id in _pending_localizations(store):
        if session.remaining() <= 0:
            return
        finding = load_finding(store, verdict_id)
        if finding is None or finding.ir is None or finding.artifact_dir is None:
            db.save_localization(store, verdict_id, None, None, {"reason": "artifact not kept"})
            continue
        roles = session.roles(finding)
        executor = session.get_executor()
        if executor is None:
            return
        from memo.triage.localize import localize  # noqa: PLC0415
        from memo.triage.probe import read_inputs  # noqa: PLC0415

        directory = session.work / f"localize-{verdict_id}"
        try:
            found, _run = localize(executor, finding.ir, finding.verdict["kind"], roles, directory, seed=session.seed,
                                   inputs=read_inputs(finding.artifact_dir / "inputs.npz"))
        finally:
            shutil.rmtree(directory, ignore_errors=True)
        db.save_localization(store, verdict_id, found.layer, found.layer_class, found.to_json())
        session.summary.localized += found.layer is not None


# ---------------------------------------------------------------------------- reduction
class Checker:
    """The reduction predicate: does this candidate still show the bug, with the same signature?"""

    def __init__(self, session: _Session, bug_id: str, finding: Finding) -> None:
        from memo.triage.probe import read_inputs  # noqa: PLC0415

        self.session = session
        self.bug_id = bug_id
        self.kind = finding.verdict["kind"]
        self.backend = finding.verdict["backend"]
        self.roles = session.roles(finding)
        self.inputs = read_inputs(finding.artifact_dir / "inputs.npz") if finding.artifact_dir else None
        self.count = 0

    def run(self, ir: ModelIR, directory: Path) -> tuple[bool, Any, str | None]:
        """(same bug?, the run, the localized node)."""
        from memo.oracle import judge  # noqa: PLC0415
        from memo.triage.localize import localize  # noqa: PLC0415
        from memo.triage.probe import run_model  # noqa: PLC0415

        executor = self.session.executor
        layer = None
        if self.kind in NUMERIC_KINDS:
            found, run = localize(executor, ir, self.kind, self.roles, directory, seed=self.session.seed,
                                  inputs=self.inputs)
            layer = found.layer
            if run.result is None:
                return False, run, layer
            verdicts = judge(run.result, outputs=run.real_outputs(ir.outputs))
        else:
            run = run_model(executor, ir, directory, seed=self.session.seed, inputs=self.inputs,
                            backends=self.roles.backends)
            if run.result is None:
                return False, run, layer
            verdicts = judge(run.result)
        result = run.result.to_json()
        same = any(v.kind == self.kind and v.backend == self.backend
                   and signature(v.to_json(), result, ir, divergent_layer=layer) == self.bug_id for v in verdicts)
        return same, run, layer

    def __call__(self, ir: ModelIR) -> bool:
        self.count += 1
        directory = self.session.work / f"{self.bug_id}-c{self.count}"
        try:
            return self.run(ir, directory)[0]
        except Exception as exc:  # a defect while checking one candidate rejects it, never ends triage
            self.session.summary.errors.append(f"{self.bug_id}: candidate {self.count}: {type(exc).__name__}: {exc}")
            return False
        finally:
            shutil.rmtree(directory, ignore_errors=True)


def _bug_record(bug: db.BugRow, finding: Finding) -> dict[str, Any]:
    details = failure_details(finding.verdict, finding.result)
    return {"id": bug.id, "kind": bug.kind, "library": bug.library, "stage": bug.stage or "",
            "signature": bug.parts, "exception": details["exception"], "error_message": details["message"],
            "message": finding.verdict.get("message", ""), "layer_class": bug.layer_class}


def _triage_bug(session: _Session, bug: db.BugRow) -> None:
    from memo.triage.materialize import materialize  # noqa: PLC0415
    from memo.triage.reduce import reduce_bug  # noqa: PLC0415

    store = session.store
    finding = load_finding(store, bug.first_verdict)
    if finding is None or finding.ir is None or finding.artifact_dir is None:
        db.update_bug(store, bug.id, reduction={"status": "artifact not kept"})
        return
    record = _bug_record(bug, finding)
    located = db.localizations(store).get(bug.first_verdict) or {}
    localized = located.get("layer")
    roles = session.roles(finding)
    ir, source, outcome = finding.ir, finding.artifact_dir, None
    extra: dict[str, Any] = {"layer": localized, "timeout_s": session.timeout_s,
                             "localization": json.loads(located["details"]) if located.get("details") else {}}
    folder = bug_folder(store.directory.resolve(), bug.id)
    budget = min(PER_BUG_S, session.remaining())
    can_run = bug.kind != "hang" and budget > 1 and session.get_executor() is not None
    start, previous = _previous_reduction(folder, finding.ir)
    if previous and not can_run:
        return  # keep the folder of the earlier pass; a pass with time continues it
    if previous:
        localized = previous.get("layer") or localized
    if can_run:
        checker = Checker(session, bug.id, finding)
        outcome = reduce_bug(start, checker, budget_s=budget, localized=localized)
        final = session.work / f"{bug.id}-final"
        same, run, layer = checker.run(outcome.ir, final)
        if same and run.artifact is not None:
            ir, source = outcome.ir, run.artifact.directory
            extra["layer"] = layer
            if bug.kind in NUMERIC_KINDS:
                extra["localization"] = {"layer": layer, "layer_class": outcome.ir.get(layer).class_name
                                         if layer else None, "reason": "in the reduced model"}
            session.summary.reduced += len(outcome.ir.body) < outcome.original_layers
        else:
            outcome.status = "final check failed; original model kept"
            ir = finding.ir
    shutil.rmtree(folder, ignore_errors=True)
    reduction = outcome.to_json() if outcome else {"status": NOT_REDUCED}
    reduction.update(original_layers=len(finding.ir.body), reduced_layers=len(ir.body))
    extra["reduction"] = reduction
    data = materialize(folder, source, ir, record, roles, extra)
    shutil.rmtree(session.work / f"{bug.id}-final", ignore_errors=True)
    has_script = (folder / "repro.py").exists()
    session.summary.scripts += has_script
    db.update_bug(store, bug.id, bug_dir=str(folder), original_layers=len(finding.ir.body),
                  reduced_layers=len(ir.body), reduction=reduction, layer=extra.get("layer"),
                  repro=str(folder / "repro.py") if has_script else None)
    if has_script and session.remaining() > 0:
        from memo.triage.rerun import rerun_script  # noqa: PLC0415

        check = rerun_script(folder, data, timeout_s=session.timeout_s + 60)
        db.update_bug(store, bug.id, reproduces=check.reproduces, checked=time.time())
        session.summary.reproduced += bool(check.reproduces)


# ---------------------------------------------------------------------------- the pass
def _pending_localizations(store: CampaignStore) -> list[int]:
    done = db.localizations(store)
    return [row["id"] for row in dedup.finding_rows(store, NUMERIC_KINDS) if row["id"] not in done]


def _pending_bugs(store: CampaignStore) -> list[db.BugRow]:
    """Bugs without a folder, and those whose reduction ran out of time (continued where it stopped)."""
    return [bug for bug in db.load_bugs(store)
            if not (bug.bug_dir and Path(bug.bug_dir).exists()) or bug.reduction.get("status") in RETRY_STATUSES]


def _previous_reduction(folder: Path, original: ModelIR) -> tuple[ModelIR, dict[str, Any] | None]:
    """The model an unfinished earlier reduction reached (and its bug.json), else the original model."""
    from memo.triage.bugdir import IR_FILE, read_bug_file  # noqa: PLC0415

    data = read_bug_file(folder)
    if not data or (data.get("reduction") or {}).get("status") not in RETRY_STATUSES:
        return original, None
    try:
        return ModelIR.loads((folder / IR_FILE).read_text()), data
    except Exception:  # an unreadable folder is redone from the original model
        return original, None


def _needed_backends(session: _Session) -> set[str]:
    verdict_ids = _pending_localizations(session.store) + [bug.first_verdict for bug in _pending_bugs(session.store)]
    needed: set[str] = set()
    for verdict_id in verdict_ids:
        finding = load_finding(session.store, verdict_id)
        if finding is not None and finding.artifact_dir is not None:
            needed.update(session.roles(finding).backends)
    return needed


def _drop_stale(store: CampaignStore, stale: list[str]) -> None:
    for bug_id in stale:
        shutil.rmtree(bug_folder(store.directory, bug_id), ignore_errors=True)


def triage_campaign(store: CampaignStore, *, executor: Any = None, time_budget_s: float = 120.0) -> TriageSummary:
    """Dedup, localize, reduce new bugs (bounded by ``time_budget_s``), write their scripts. Idempotent.

    ``executor``: a :class:`memo.backends.executor.DifferentialExecutor` to reuse; without one, triage
    starts its own (for the libraries its bugs involve) only when there is work that needs execution.
    """
    session = _Session(store, executor, time_budget_s)
    try:
        _drop_stale(store, dedup.update_bugs(store).stale)
        if session.remaining() > 0:
            session.needed = _needed_backends(session)
        _localize_pending(session)
        update = dedup.update_bugs(store)
        _drop_stale(store, update.stale)
        for bug in _pending_bugs(store):
            session.summary.new += 1
            try:
                _triage_bug(session, bug)
            except Exception as exc:  # one bug's triage failing must not lose the others
                session.summary.errors.append(f"{bug.id}: {type(exc).__name__}: {exc}\n{traceback.format_exc(limit=4)}")
                db.update_bug(store, bug.id, reduction={"status": f"triage failed: {type(exc).__name__}: {exc}"})
        session.summary.bugs = len(update.all)
    finally:
        session.close()
        session.summary.seconds = time.monotonic() - session.started
    return session.summary


def start_background_triage(campaign_dir: Path, *, executor: Any = None, time_budget_s: float = 120.0) -> threading.Thread:
    """Run :func:`triage_campaign` in a daemon thread with its own connection (and ``executor``, which may
    be the campaign's own: its ``run`` is thread-safe); errors are swallowed (and printed to nothing):
    triage must never disturb the campaign that started it."""
    def work() -> None:
        try:
            with CampaignStore(Path(campaign_dir)) as store:
                triage_campaign(store, executor=executor, time_budget_s=time_budget_s)
        except Exception:  # noqa: BLE001  (the campaign goes on; the next pass retries)
            pass

    thread = threading.Thread(target=work, name="memo-triage", daemon=True)
    thread.start()
    return thread


__all__ = ["Checker", "TriageSummary", "load_finding", "signature", "signature_parts", "start_background_triage",
           "triage_campaign"]
