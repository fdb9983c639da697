"""A triage pass: deduplicate, then spend the time budget on units of work, most useful first.

Units alternate between reducing a bug (never-tried bugs first, then by occurrences) and localizing a
NaN/inconsistency finding (one per library before a second of the same library), so that neither a flood of
numeric findings nor a long list of crashes starves the other. Each reduced bug gets its root-cause key
on the reduced model and is merged with an earlier bug that has the same key; its folder, script and
repro check are written at once, so a pass that runs out of time leaves finished bugs, not half-finished
ones. Idempotent: a finished bug is not redone; a reduction that ran out of time continues from its folder.
"""
from __future__ import annotations

import shutil
import time
from pathlib import Path

from memo.backends.executor import ExecutionAbandoned
from memo.diskspace import is_disk_full
from memo.model.ir import ModelIR
from memo.store import BugRow, CampaignStore
from memo.bugdb import BugDatabase, BugDatabaseVersionError
from memo.triage import dedup, remember
from memo.bug_files import IR_FILE, Reduction, read_bug_file, retried
from memo.triage.bugdir import bug_folder
from memo.triage.checker import Checker
from memo.triage.finding import Finding, load_finding
from memo.triage.localize import localize
from memo.triage.materialize import materialize
from memo.triage.probe import read_inputs
from memo.triage.reassess import pending_truths, reassess, reassess_folder, root_cause_parts
from memo.triage.bug_reduction import finished_passes, mentioned_layers, reduce_bug
from memo.triage.newest import check_and_store, pending_newest
from memo.triage.reduce_order import triage_order
from memo.triage.rerun import rerun_script
from memo.triage.session import Session, TriageSummary
from memo.kinds import NUMERIC_KINDS, TRAINING_KINDS
from memo.triage.signature import FailureDetails, failure_details, reduced_key
from memo.backends.executor import Executor
from memo.json_types import JsonObject
from memo.triage.training_bug import pending_training_truths, training_truth, triage_training_bug
from memo.triage.training_signature import training_key
from memo.newest import FIXED_UPSTREAM

PER_BUG_S = 45.0
HANG_TIMEOUTS = 5  # a hang's reduction may spend this many timeouts (each hanging candidate costs one)
S_PER_PENDING_BUG = 30.0  # time to ask for per bug still to reduce (median reduction is well under this)
S_PER_PENDING_LOCALIZATION = 4.0
# A script check (a fresh process importing the library) starts only with this much of the pass left, so that a
# timed campaign's last pass does not run past its slot for one; a later pass checks the script instead.
SCRIPT_CHECK_S = 15.0
# A pass with a budget starts a bug's triage, a localization or a float64 truth only with at least this much left:
# each begins by running the model on every library involved (two runs for a bug: its check and, after
# reduction, the final one), so one started with a second left overran a 5-minute campaign's slot by 28 s.
MIN_STEP_S = 12.0


# ---------------------------------------------------------------------------- what is left to do
def pending_localizations(store: CampaignStore) -> list[int]:
    """NaN/inconsistency verdicts not yet localized, round-robin over (kind, library): the first finding
    of every library before the second of any."""
    done = store.triage.localizations()
    groups: dict[tuple[str, str], list[int]] = {}
    localized: dict[tuple[str, str], int] = {}
    for row in store.findings(NUMERIC_KINDS):
        key = (row.verdict.kind, row.verdict.backend)
        if row.id in done:
            localized[key] = localized.get(key, 0) + 1
        else:
            groups.setdefault(key, []).append(row.id)
    order: list[int] = []
    depth = 0
    while any(len(ids) > depth for ids in groups.values()):
        for key in sorted(groups, key=lambda k: (localized.get(k, 0), k)):
            if len(groups[key]) > depth:
                order.append(groups[key][depth])
        depth += 1
    return order


def pending_bugs(store: CampaignStore) -> list[BugRow]:
    """Bugs to triage: without a folder, or whose reduction ran out of time; distinct root causes first
    (:func:`memo.triage.reduce_order.triage_order`). Unlocalized numeric buckets are not bugs yet (their findings
    get localized)."""
    every = store.triage.load_bugs()
    todo = [bug for bug in every if not bug.unlocalized and bug.merged_into is None
            and (not (bug.bug_dir and Path(bug.bug_dir).exists()) or retried(bug.reduction))]
    return triage_order(todo, every)


def seconds_for(bugs: int, localizations: int) -> float:
    """A time budget that finishes ``bugs`` reductions and ``localizations``: the campaign's final pass asks for
    it, and the report suggests it to continue."""
    return S_PER_PENDING_BUG * bugs + S_PER_PENDING_LOCALIZATION * localizations


def seconds_wanted(store: CampaignStore) -> float:
    """:func:`seconds_for` the triage still to do in ``store``."""
    return seconds_for(len(pending_bugs(store)), len(pending_localizations(store)))


# ---------------------------------------------------------------------------- localization
def _localize_one(session: Session, verdict_id: int) -> None:
    store = session.store
    finding = load_finding(store, verdict_id)
    if finding is None or finding.ir is None:
        store.triage.save_localization(verdict_id, None, None, {"reason": "model not stored"})
        return
    executor = session.get_executor()
    if executor is None:
        return
    artifact = session.artifact_of(finding)
    directory = session.work / f"localize-{verdict_id}"
    try:
        found, _run = localize(executor, finding.ir, finding.kind, session.roles(finding), directory,
                               seed=session.seed,
                               inputs=read_inputs(artifact / "inputs.npz") if artifact is not None else None)
    finally:
        shutil.rmtree(directory, ignore_errors=True)
    store.triage.save_localization(verdict_id, found.layer, found.layer_class, found.to_json())
    session.summary.localized += found.layer is not None


# ---------------------------------------------------------------------------- one bug
def _bug_record(bug: BugRow, finding: Finding, details: FailureDetails) -> JsonObject:
    return {"id": bug.id, "kind": bug.kind, "library": bug.library, "stage": bug.stage or "",
            "signature": bug.parts, "exception": details.exception, "error_message": details.message,
            "message": finding.verdict.message, "layer_class": bug.layer_class}


def _previous_reduction(folder: Path, original: ModelIR) -> tuple[ModelIR, JsonObject | None]:
    """The model an unfinished earlier reduction reached (and its bug.json), else the original model."""
    data = read_bug_file(folder)
    if not data or not retried(data.get("reduction")):
        return original, None
    try:
        return ModelIR.loads((folder / IR_FILE).read_text()), data
    except Exception:  # an unreadable folder is redone from the original model
        return original, None


def _release_artifacts(session: Session, bug: BugRow) -> None:
    """A finished bug folder holds everything its bug needs: its occurrences' artifacts can go."""
    for mutant_id in session.store.triage.bug_mutants(bug.id):
        session.store.release_artifact(mutant_id)


def _triage_bug(session: Session, bug: BugRow) -> None:
    store = session.store
    if bug.kind in TRAINING_KINDS:  # trained, not run: memo.triage.training_bug
        if session.remaining() > MIN_STEP_S:
            triage_training_bug(session, bug)
            _merge_training(store, store.triage.load_bug(bug.id))
        return
    finding = load_finding(store, bug.first_verdict)
    if finding is None or finding.ir is None:
        store.triage.update_bug(bug.id, reduction={"status": Reduction.MODEL_NOT_STORED})
        return
    can_run = session.remaining() > 1 and session.get_executor() is not None
    hang = bug.kind == "hang"  # its folder needs the model's files, not a run (that would hang again)
    source = (session.artifact_of(finding, execute=not hang) if can_run or hang or finding.artifact_dir is not None
              else None)
    if source is None:
        store.triage.update_bug(bug.id, reduction={"status": Reduction.NOT_REDUCED})
        return
    details = failure_details(finding.verdict, finding.result)
    record = _bug_record(bug, finding, details)
    located = store.triage.localizations().get(bug.first_verdict)
    localized = located.layer if located else None
    roles = session.roles(finding)
    ir, outcome = finding.ir, None
    extra: JsonObject = {"layer": localized, "timeout_s": session.timeout_s, "plugins": session.plugins,
                             "localization": located.details if located else {}}
    folder = bug_folder(store.directory.resolve(), bug.id)
    start, previous = _previous_reduction(folder, finding.ir)
    if previous and not can_run:
        return  # keep the folder of the earlier pass; a pass with time continues it
    if previous:
        localized = previous.get("layer") or localized
    checker = Checker(session, bug.id, finding, source) if can_run else None
    if checker is not None and previous is None and not checker.shows_again(start, session.work / f"{bug.id}-start"):
        can_run = False  # reducing would search for a symptom the model no longer shows
        extra["reduction_note"] = Reduction.NOT_AGAIN
    if can_run and checker is not None:
        budget = min(HANG_TIMEOUTS * session.timeout_s if hang else PER_BUG_S, session.remaining())
        hints = mentioned_layers(start, " ".join((details.message, details.traceback, details.stderr)))
        outcome = reduce_bug(start, checker, budget_s=budget, localized=localized, hints=hints,
                             numeric=bug.kind in NUMERIC_KINDS, finished=finished_passes(previous))
        final = session.work / f"{bug.id}-final"
        same, run, layer = checker.run(outcome.ir, final, recheck=True)
        if same and run.artifact is not None:
            ir, source = outcome.ir, run.artifact.directory
            extra["layer"] = layer
            if bug.kind in NUMERIC_KINDS:
                located_now = checker.localization
                extra["localization"] = {"layer": layer, "layer_class": outcome.ir.get(layer).class_name
                                         if layer else None, "reason": "in the reduced model",
                                         "alone": located_now.alone if located_now else None,
                                         "together": located_now.together if located_now else []}
            session.summary.reduced += len(outcome.ir.body) < outcome.original_layers
        else:
            # no step was taken: the original model itself did not show the bug on this last run (a hang that
            # was a slow compile under load, a flaky result), which is what the report calls unconfirmed
            outcome.status = Reduction.FINAL_CHECK_FAILED if outcome.steps else Reduction.NOT_AGAIN
            ir = finding.ir
    shutil.rmtree(folder, ignore_errors=True)
    reduction = outcome.to_json() if outcome else {
        "status": extra.pop("reduction_note", Reduction.NOT_REDUCED)}
    reduction.update(original_layers=len(finding.ir.body), reduced_layers=len(ir.body))
    extra["reduction"] = reduction
    data = materialize(folder, source, ir, record, roles, extra)
    shutil.rmtree(session.work / f"{bug.id}-final", ignore_errors=True)
    if bug.kind in NUMERIC_KINDS and can_run and session.remaining() > 0:
        data.update(reassess(session, bug, finding, ir, folder, checker.inputs if checker else None))
    has_script = (folder / "repro.py").exists()
    session.summary.scripts += has_script
    store.triage.update_bug(bug.id, bug_dir=str(folder), original_layers=len(finding.ir.body),
                            reduced_layers=len(ir.body), reduction=reduction, layer=extra.get("layer"),
                            repro=str(folder / "repro.py") if has_script else None,
                            newest={})  # a new folder: an earlier check on the newest code is void
    if outcome is not None and not outcome.status.retried:
        merged = store.triage.merge_bug(bug.id, reduced_key(root_cause_parts(bug.parts, folder), ir))
        session.summary.merged += merged is not None
    if has_script and not retried(reduction) and session.remaining() > SCRIPT_CHECK_S:
        _check_script(session, bug.id, folder, data)  # an unfinished reduction's script: its next folder's is checked
    if not retried(reduction):
        _release_artifacts(session, bug)


def _check_script(session: Session, bug_id: str, folder: Path, data: JsonObject) -> None:
    """Run the bug's repro.py in a fresh process; one that reproduces is rerun on the newest code right away."""
    check = rerun_script(folder, data, timeout_s=session.timeout_s + 60)
    session.store.triage.update_bug(bug_id, reproduces=check.reproduces, checked=time.time())
    session.summary.reproduced += bool(check.reproduces)
    if check.reproduces and session.next_python and session.remaining() > SCRIPT_CHECK_S:
        bug = session.store.triage.load_bug(bug_id)
        if bug is not None:
            _check_newest(session, bug)


def _check_newest(session: Session, bug: BugRow) -> None:
    """The bug's script on the newest code (:mod:`memo.triage.newest`); a failure of the check itself is triage's."""
    try:
        outcome = check_and_store(session.store, bug, str(session.next_python), timeout_s=session.timeout_s + 60)
    except Exception as exc:  # noqa: BLE001  (the bug stays as it is; the report lists why)
        if is_disk_full(exc):
            raise
        session.error(bug.id, "newest-code check", exc)
        return
    session.summary.newest += 1
    session.summary.fixed_upstream += outcome.get("result") == FIXED_UPSTREAM


# ---------------------------------------------------------------------------- the pass
def _needed_backends(session: Session, localizations: list[int], bugs: list[BugRow]) -> set[str]:
    needed: set[str] = set()
    for verdict_id in localizations[:20] + [bug.first_verdict for bug in bugs[:20]]:
        finding = load_finding(session.store, verdict_id)
        if finding is not None:
            needed.update(session.roles(finding).backends)
    return needed


def _unchecked_scripts(store: CampaignStore) -> list[BugRow]:
    """Finished bugs whose script was written but never run (the pass ran out of time in between)."""
    return [bug for bug in store.triage.load_bugs() if bug.merged_into is None and bug.reproduces is None
            and bug.repro and Path(bug.repro).exists() and bug.bug_dir
            and not retried(bug.reduction)]


def rekey_reduced(store: CampaignStore) -> int:
    """Recompute every reduced bug's root-cause key from its folder's model, merging anew where it changed (memo
    learnt a new root-cause rule since the bug was reduced); returns how many changed."""
    changed = 0
    for bug in store.triage.load_bugs():
        # a reduction that ran out of time has a folder too: its model so far already names the root cause
        path = Path(bug.bug_dir) / IR_FILE if bug.bug_dir else None
        if path is None or not path.exists() or Reduction.of(bug.reduction) is Reduction.NOT_AGAIN:
            continue
        if bug.kind in TRAINING_KINDS:
            changed += _merge_training(store, bug)
            continue
        key = reduced_key(root_cause_parts(bug.parts, path.parent), ModelIR.loads(path.read_text()))
        if key != bug.final_key:
            store.triage.merge_bug(bug.id, key)
            changed += 1
    return changed


def _merge_training(store: CampaignStore, bug: BugRow | None) -> bool:
    """Merge a training bug with folder by :func:`training_key`; whether its key changed."""
    path = Path(bug.bug_dir) / IR_FILE if bug is not None and bug.bug_dir else None
    if bug is None or path is None or not path.exists():
        return False
    decision = str((read_bug_file(path.parent).get("truth") or {}).get("decision") or "")
    key = training_key(bug.parts, ModelIR.loads(path.read_text()), decision)
    if key == bug.final_key:
        return False
    store.triage.merge_bug(bug.id, key)
    return True


def _drop_stale(store: CampaignStore, stale: list[str]) -> None:
    for bug_id in stale:
        shutil.rmtree(bug_folder(store.directory, bug_id), ignore_errors=True)


def _fits(session: Session, bug: BugRow) -> bool:
    """Whether ``bug``'s triage can start within the pass's time: a hang's first check waits a whole timeout."""
    return session.remaining() > MIN_STEP_S + (session.timeout_s if bug.kind == "hang" else 0.0)


def _open_bug_database(session: Session, path: Path | None) -> BugDatabase | None:
    where = remember.database_path(session.store, path)
    if where is None:
        return None
    try:
        return BugDatabase(where)
    except BugDatabaseVersionError:
        raise  # another memo's format: the command stops with its one line (never mixing two formats)
    except Exception as exc:  # noqa: BLE001  (triage goes on without it; the report lists why)
        session.error(None, "bug database", exc)
        return None


def _adopt(session: Session, db: BugDatabase, bug: BugRow) -> bool:
    """Copy a known bug's reduced model and script instead of reducing it (see :mod:`memo.triage.remember`)."""
    try:
        known = remember.adopt_known(db, session.store, bug)
    except Exception as exc:  # noqa: BLE001  (the bug is reduced as if the database did not know it)
        session.error(bug.id, "bug database", exc)
        return False
    if known is not None:
        session.summary.known += 1
        _release_artifacts(session, bug)
    return known is not None


def _remember(session: Session, db: BugDatabase) -> None:
    try:
        remember.record_campaign(db, session.store)
    except Exception as exc:  # noqa: BLE001  (the campaign's own bugs are safe in its store)
        session.error(None, "bug database", exc)


def triage_campaign(store: CampaignStore, *, executor: Executor | None = None, time_budget_s: float = 120.0,
                    bugs_db: Path | None = None, next_python: str | None = None) -> TriageSummary:
    """Dedup, then localize and reduce (bounded by ``time_budget_s``), write folders and scripts. Idempotent.

    ``executor``: a :class:`memo.backends.executor.DifferentialExecutor` to reuse; without one, triage
    starts its own (for the libraries its bugs involve) only when there is work that needs execution.
    Every failure of triage itself is recorded in the store (the report lists them) and in the summary.
    ``bugs_db``: the bug database (default: the one the campaign was started with, if any); a bug it knows,
    reduced, is adopted instead of reduced, and every finished bug is recorded in it at the end of the pass.
    ``next_python``: the newest-code interpreter a reproducing bug is rerun with before it is ready to file
    (default: the campaign's; ``none``: no such check), :mod:`memo.triage.newest`.
    """
    session = Session(store, executor, time_budget_s, next_python)
    known_db = _open_bug_database(session, bugs_db)
    try:
        update = dedup.update_bugs(store)
        _drop_stale(store, update.stale)
        rekey_reduced(store)
        localizations, bugs = pending_localizations(store), pending_bugs(store)
        if session.remaining() > 0:
            session.needed = _needed_backends(session, localizations, bugs + pending_truths(store))
        # a pass without a budget (``memo report``) writes folders from the kept artifacts; a pass whose
        # budget ran out leaves the remaining bugs to the next one instead of marking them "not reduced"
        quick = time_budget_s <= 0
        turn, tried, tried_truth, tried_newest = 0, set(), set(), set()
        while quick or session.remaining() > MIN_STEP_S:
            bugs = [bug for bug in pending_bugs(store) if bug.id not in tried and (quick or _fits(session, bug))]
            if bugs and (turn % 2 == 0 or not localizations or session.remaining() <= 0):
                bug = bugs[0]
                tried.add(bug.id)
                if known_db is not None and _adopt(session, known_db, bug):
                    turn += 1
                    continue
                session.summary.new += 1
                try:
                    _triage_bug(session, bug)
                except ExecutionAbandoned:  # the campaign is stopping: the bug stays pending for the next pass
                    break
                except Exception as exc:  # one bug's triage failing must not lose the others
                    if is_disk_full(exc):
                        raise  # not the bug's fault: the campaign stops cleanly (see TriageService)
                    session.error(bug.id, "triage", exc)
                    store.triage.update_bug(bug.id, reduction={"status": Reduction.TRIAGE_FAILED.saying(
                        f"{type(exc).__name__}: {exc}")})
            elif session.next_python and session.remaining() > SCRIPT_CHECK_S and (
                    on_release := [b for b in pending_newest(store) if b.id not in tried_newest]):
                # a finished bug is ready only once rerun on the newest code (a few seconds): before localizations
                bug = on_release[0]
                tried_newest.add(bug.id)  # never rerun on the newest code (adopted, or its pass ran out of time)
                _check_newest(session, bug)
            elif localizations and session.remaining() > 0:
                verdict_id = localizations.pop(0)
                try:
                    _localize_one(session, verdict_id)
                except ExecutionAbandoned:
                    break
                except Exception as exc:
                    session.error(None, f"localizing verdict {verdict_id}", exc)
                    store.triage.save_localization(verdict_id, None, None, {"reason": f"failed: {exc}"})
                update = dedup.update_bugs(store)
                _drop_stale(store, update.stale)
            elif session.remaining() > 0 and (truths := [b for b in pending_truths(store) + pending_training_truths(store)
                                                         if b.id not in tried_truth]):
                bug = truths[0]
                tried_truth.add(bug.id)  # once per pass, whatever the outcome
                try:
                    training_truth(session, bug) if bug.kind in TRAINING_KINDS else reassess_folder(session, bug)
                except ExecutionAbandoned:
                    break
                except Exception as exc:
                    if is_disk_full(exc):
                        raise
                    session.error(bug.id, "float64 truth", exc)
            elif session.remaining() > SCRIPT_CHECK_S and (unchecked := [b for b in _unchecked_scripts(store)
                                                                   if b.id not in tried]):
                bug = unchecked[0]
                tried.add(bug.id)  # a script whose check ran out of time in an earlier pass
                folder = Path(str(bug.bug_dir))
                _check_script(session, bug.id, folder, read_bug_file(folder))
            else:
                break
            turn += 1
        # the pass ends where the next one starts (its first step is this rekey): a bug whose folder was written
        # without a reduction (no time, no executor) is merged by its model's key now, not only by the next pass,
        # so a report written right after this pass lists the same bugs as any later ``memo report``
        rekey_reduced(store)
        session.summary.bugs = len(dedup.update_bugs(store).all)
        if known_db is not None:
            _remember(session, known_db)
    finally:
        if known_db is not None:
            known_db.close()
        session.close()
        session.summary.seconds = time.monotonic() - session.started
    return session.summary
