"""A triage pass: deduplicate, then spend the time budget on units of work, most useful first.

The kinds of unit share the pass's time (:mod:`memo.triage.turns`): reducing a bug (:mod:`memo.triage.reduce_order`),
localizing a NaN/inconsistency finding (one per library before a second of the same library), rerunning a finished
bug on the newest code, a float64 truth, a script check left by an earlier pass; a kind without work passes its turn.
Each kind's time is kept in the store, so the shares go on from one pass to the next (background passes are short)
instead of each pass starting with a bug: that starved the localizations (m40 localized 3 of 39 numeric findings).

A reduced bug is keyed on the reduced model and merged with an earlier bug of the same key; its folder, script and
check are written at once, so a pass out of time leaves finished bugs. Idempotent: a finished bug is not redone; a
cut reduction continues from its folder, as does an older reducer's (:func:`memo.triage.bug_reduction.reduces_further`).
"""
from __future__ import annotations

import shutil
import time
from dataclasses import dataclass
from pathlib import Path

from memo.model.ir import ModelIR
from memo.store import BugRow, CampaignStore
from memo.bugdb import BugDatabase
from memo.triage import dedup, remember
from memo.bug_files import IR_FILE, Reduction, read_bug_file, retried
from memo.triage.bugdir import bug_folder
from memo.triage.checker import Checker
from memo.triage.finding import Finding, load_finding
from memo.triage.localize import localize
from memo.triage.materialize import materialize
from memo.triage.probe import read_inputs
from memo.triage.reassess import pending_truths, reassess, reassess_folder
from memo.triage.rekey import rekey
from memo.triage.blame import decide_all
from memo.triage.bug_reduction import (TRIED_AGAIN, ReductionOutcome, mentioned_layers, reduce_bug,
                                       reduces_further, turn_budget_s)
from memo.triage.newest import check_and_store, pending_newest
from memo.triage.reduce_order import reduce_again
from memo.triage.pending import distinct_waiting, pending_bugs, pending_localizations, unchecked_scripts
from memo.triage.rerun import rerun_script
from memo.triage.session import Session, TriageSummary
from memo.triage.truth import TruthRunner
from memo.triage.turns import SPENT_META, TURN_META, TurnClock, add_spent, timed
from memo.kinds import NUMERIC_KINDS, TRAINING_KINDS
from memo.triage.signature import FailureDetails, failure_details
from memo.backends.executor import Executor
from memo.json_types import JsonObject
from memo.triage.training_bug import pending_training_truths, training_truth, triage_training_bug
from memo.newest import FIXED_UPSTREAM

PER_BUG_S = 45.0
HANG_TIMEOUTS = 5  # a hang's reduction may spend this many timeouts (each hanging candidate costs one)
# A script check (a fresh process importing the library) starts only with this much of the pass left, so that a
# timed campaign's last pass does not run past its slot for one; a later pass checks the script instead.
SCRIPT_CHECK_S = 15.0
# A pass with a budget starts a bug's triage, a localization or a float64 truth only with at least this much left:
# each begins by running the model on every library involved (two runs for a bug: its check and, after
# reduction, the final one), so one started with a second left overran a 5-minute campaign's slot by 28 s.
MIN_STEP_S = 12.0
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
    """The model an unfinished earlier reduction reached, or one adopted to reduce again (and its bug.json), else
    the original model."""
    data = read_bug_file(folder)
    if not data or not (retried(data.get("reduction")) or reduces_further(data.get("reduction"))):
        return original, None
    try:
        return ModelIR.loads((folder / IR_FILE).read_text()), data
    except Exception:  # an unreadable folder is redone from the original model
        return original, None


def _release_artifacts(session: Session, bug: BugRow) -> None:
    """A finished bug folder holds everything its bug needs: its occurrences' artifacts can go."""
    for mutant_id in session.store.triage.bug_mutants(bug.id):
        session.store.release_artifact(mutant_id)


@dataclass
class _Reduced:
    """What one bug's reduction left: the model and artifact its folder gets, the outcome (None: not reduced), the
    folder's extra fields, and the checker that ran (None: none could)."""

    ir: ModelIR
    source: Path
    outcome: ReductionOutcome | None
    extra: JsonObject
    checker: Checker | None


def _triage_bug(session: Session, bug: BugRow) -> None:
    """Reduce one bug (continuing an earlier reduction), write its folder and script, merge it by its root-cause
    key; a training bug is trained, not run (:mod:`memo.triage.training_bug`)."""
    store = session.store
    if bug.kind in TRAINING_KINDS:
        if session.remaining() > MIN_STEP_S:
            with timed(store, "training bug"):
                triage_training_bug(session, bug)
            rekey(store, store.triage.load_bug(bug.id))
        return
    finding = load_finding(store, bug.first_verdict)
    if finding is None or finding.ir is None:
        store.triage.update_bug(bug.id, reduction={"status": Reduction.MODEL_NOT_STORED})
        return
    can_run = session.remaining() > 1 and session.get_executor() is not None
    hang = bug.kind == "hang"  # its folder needs the model's files, not a run (that would hang again)
    folder = bug_folder(store.directory.resolve(), bug.id)
    start, previous = _previous_reduction(folder, finding.ir)
    has_source = can_run or hang or finding.artifact_dir is not None
    if previous and not can_run and has_source:
        return  # keep the folder of the earlier pass; a pass with time continues it (no artifact rebuilt for that)
    source = session.artifact_of(finding, execute=not hang) if has_source else None
    if source is None:
        store.triage.update_bug(bug.id, reduction={"status": Reduction.NOT_REDUCED})
        return
    details = failure_details(finding.verdict, finding.result)
    reduced = _reduce(session, bug, finding, source, start, previous, details, can_run)
    if reduces_further((previous or {}).get("reduction")) and not _confirmed(reduced.outcome):
        # the adopted model is kept as it was: a reduction again that did not confirm it never replaces it
        why = reduced.outcome.status.value if reduced.outcome else "not run"
        store.triage.update_bug(bug.id, reduction={**bug.reduction, TRIED_AGAIN: why})
        return
    known = {key: previous[key] for key in ("known_as", "copied_from") if previous and key in previous}
    _write_folder(session, bug, finding, folder, reduced, {**_bug_record(bug, finding, details), **known})


def _confirmed(outcome: ReductionOutcome | None) -> bool:
    """Whether a reduction's model showed the bug on its last run (finished or to continue)."""
    return outcome is not None and outcome.status in (Reduction.DONE, Reduction.TIMEOUT)


def _reduce(session: Session, bug: BugRow, finding: Finding, source: Path, start: ModelIR,
            previous: JsonObject | None, details: FailureDetails, can_run: bool) -> _Reduced:
    """Reduce ``start`` within the bug's share of the pass (a hang: once it hung again) and run the reduced model
    once more (the model the folder gets is one that showed the bug on its last run)."""
    located = session.store.triage.localizations().get(bug.first_verdict)
    localized = (previous or {}).get("layer") or (located.layer if located else None)
    extra: JsonObject = {"layer": located.layer if located else None, "timeout_s": session.timeout_s,
                         "plugins": session.plugins, "localization": located.details if located else {}}
    reduced = _Reduced(finding.ir, source, None, extra, Checker(session, bug.id, finding, source) if can_run else None)
    checker = reduced.checker
    if checker is None:
        return reduced
    # a hang is confirmed before its reduction (a timeout per candidate); any other bug's reduction shows it, or its
    # final check on the unreduced model tells "not shown again" (t62: start checks took twice the reductions' time)
    hang = bug.kind == "hang"
    if previous is None and hang:  # a continued reduction's model showed the bug on its last run
        with timed(session.store, "start check"):
            shows = checker.shows_again(start, session.work / f"{bug.id}-start")
        if not shows:
            extra["reduction_note"] = Reduction.NOT_AGAIN  # reducing would search for a symptom no longer shown
            return reduced
    turn = HANG_TIMEOUTS * session.timeout_s if hang else turn_budget_s(PER_BUG_S, previous)
    budget = min(turn, session.remaining())
    hints = mentioned_layers(start, " ".join((details.message, details.traceback, details.stderr)))
    with timed(session.store, "reduction"):
        outcome = reduced.outcome = reduce_bug(start, checker, budget_s=budget, localized=localized, hints=hints,
                                               numeric=bug.kind in NUMERIC_KINDS, previous=previous)
    kept = checker.shown_run(outcome.ir)  # a failure's last showing candidate is the reduced model: its run
    if kept is not None:
        same, (run, layer) = True, kept
    else:
        with timed(session.store, "final check"):
            same, run, layer = checker.run(outcome.ir, session.work / f"{bug.id}-final", recheck=True)
    if not same or run.artifact is None:
        # no step was taken: the original model itself did not show the bug on this last run (a hang that
        # was a slow compile under load, a flaky result), which is what the report calls unconfirmed
        outcome.status = Reduction.FINAL_CHECK_FAILED if outcome.steps else Reduction.NOT_AGAIN
        return reduced
    reduced.ir, reduced.source = outcome.ir, run.artifact.directory
    extra["layer"] = layer
    if bug.kind in NUMERIC_KINDS:
        located_now = checker.localization
        extra["localization"] = {"layer": layer, "layer_class": outcome.ir.get(layer).class_name if layer else None,
                                 "reason": "in the reduced model",
                                 "alone": located_now.alone if located_now else None,
                                 "together": located_now.together if located_now else []}
    session.summary.reduced += len(outcome.ir.body) < outcome.original_layers
    return reduced


def _write_folder(session: Session, bug: BugRow, finding: Finding, folder: Path, reduced: _Reduced,
                  record: JsonObject) -> None:
    """The bug's folder (model, files, script) from what its reduction left; its float64 truth, its key, its script
    check; the occurrences' artifacts released once it is finished."""
    store, ir, outcome, extra = session.store, reduced.ir, reduced.outcome, reduced.extra
    assert finding.ir is not None  # a finding without a model is not reduced (_triage_bug)
    shutil.rmtree(folder, ignore_errors=True)
    reduction = outcome.to_json() if outcome else {"status": extra.pop("reduction_note", Reduction.NOT_REDUCED)}
    reduction.update(original_layers=len(finding.ir.body), reduced_layers=len(ir.body))
    extra["reduction"] = reduction
    with timed(store, "folder"):
        data = materialize(folder, reduced.source, ir, record, session.roles(finding), extra)
    shutil.rmtree(session.work / f"{bug.id}-final", ignore_errors=True)
    checker = reduced.checker
    if checker is not None:
        checker.release()
    if bug.kind in NUMERIC_KINDS and _confirmed(outcome) and checker is not None and session.remaining() > 0:
        with timed(store, "float64 and engines"):  # only on a model a reduction ran and confirmed
            data.update(reassess(session, bug, finding, ir, folder, checker.inputs))
    has_script = (folder / "repro.py").exists()
    session.summary.scripts += has_script
    store.triage.update_bug(bug.id, bug_dir=str(folder), original_layers=len(finding.ir.body),
                            reduced_layers=len(ir.body), reduction=reduction, layer=extra.get("layer"),
                            repro=str(folder / "repro.py") if has_script else None,
                            newest={})  # a new folder: an earlier check on the newest code is void
    merged = False  # into an earlier bug by its key: that entry's script is the one checked
    if outcome is not None and not outcome.status.retried and outcome.status is not Reduction.NOT_AGAIN:
        rekey(store, store.triage.load_bug(bug.id))
        merged = (store.triage.load_bug(bug.id) or bug).merged_into is not None
        session.summary.merged += merged
    if has_script and not merged and not retried(reduction) and session.script_fits(SCRIPT_CHECK_S):
        _check_script(session, bug.id, folder, data)  # an unfinished reduction's script: its next folder's is checked
    if not retried(reduction):
        _release_artifacts(session, bug)


def _check_script(session: Session, bug_id: str, folder: Path, data: JsonObject) -> None:
    """Run the bug's repro.py in a fresh process; one that reproduces is rerun on the newest code right away."""
    with timed(session.store, "script check"):
        check = rerun_script(folder, data, timeout_s=session.script_limit_s(), remember=True)
    session.store.triage.update_bug(bug_id, reproduces=check.reproduces, checked=time.time())
    session.summary.reproduced += bool(check.reproduces)
    if check.reproduces and session.next_python and session.script_fits(SCRIPT_CHECK_S):
        bug = session.store.triage.load_bug(bug_id)
        if bug is not None:
            _check_newest(session, bug)


def _check_newest(session: Session, bug: BugRow) -> None:
    """The bug's script on the newest code (:mod:`memo.triage.newest`); a failure of the check itself is triage's."""
    def check() -> None:
        with timed(session.store, "newest rerun"):
            outcome = check_and_store(session.store, bug, str(session.next_python), timeout_s=session.script_limit_s())
        session.summary.newest += 1
        session.summary.fixed_upstream += outcome.get("result") == FIXED_UPSTREAM

    session.attempt(bug.id, "newest-code check", check)  # the bug stays as it is; the report lists why


# ---------------------------------------------------------------------------- the pass
def _needed_backends(session: Session, localizations: list[int], bugs: list[BugRow]) -> set[str]:
    needed: set[str] = set()
    for verdict_id in localizations[:20] + [bug.first_verdict for bug in bugs[:20]]:
        finding = load_finding(session.store, verdict_id)
        if finding is not None:
            needed.update(session.roles(finding).backends)
    return needed


def rekey_reduced(store: CampaignStore, only: set[str] | None = None) -> int:
    """:func:`rekey` every bug with a folder model (``only``: of these bugs; a reduction that ran out of time has one
    too: its model so far already names the root cause), but those whose model no longer showed the bug; how many
    changed."""
    return sum(rekey(store, bug) for bug in store.triage.load_bugs()
               if (only is None or bug.id in only) and Reduction.of(bug.reduction) is not Reduction.NOT_AGAIN)


def _drop_stale(store: CampaignStore, stale: list[str]) -> None:
    for bug_id in stale:
        shutil.rmtree(bug_folder(store.directory, bug_id), ignore_errors=True)


def _fits(session: Session, bug: BugRow) -> bool:
    """Whether ``bug``'s triage can start within the pass's time: a hang's first check waits a whole timeout."""
    return session.remaining() > MIN_STEP_S + (session.timeout_s if bug.kind == "hang" else 0.0)


class _Units:
    """The units of work of one pass, most useful first (see the module docstring), and what each has tried."""

    def __init__(self, session: Session, known_db: BugDatabase | None, localizations: list[int],
                 quick: bool) -> None:
        self.session, self.store, self.known_db = session, session.store, known_db
        self.localizations = localizations
        self.quick = quick  # a pass without a budget (``memo report``): folders from the kept artifacts
        self.tried: set[str] = set()
        self.tried_truth: set[str] = set()
        self.tried_newest: set[str] = set()
        self.touched: set[str] = set()  # the bugs whose folder this pass wrote or judged: their key may change
        self.waiting: dict[str, int] = {}  # each kind's units waiting when its last unit started (turns.weight)

    def step(self) -> bool:
        """Do the next unit, of the kind with work that has had the least triage time (:mod:`memo.triage.turns`);
        False when the pass is over (nothing left it could do, or the campaign stops)."""
        units = {"bug": self._bug, "newest": self._newest, "localization": self._localization, "truth": self._truth,
                 "script": self._script}
        clock = TurnClock(self.store.get_meta(TURN_META))
        idle: list[str] = []
        for kind in clock.order():
            started = time.monotonic()
            done = units[kind]()
            if done is not None:
                took = time.monotonic() - started
                clock.ran(kind, took, idle, self.waiting.get(kind, 0))
                self.store.set_meta(TURN_META, clock.as_meta())
                self.store.set_meta(SPENT_META, add_spent(self.store.get_meta(SPENT_META), kind, took))
                return done
            idle.append(kind)
        return False

    def _bug(self) -> bool | None:
        """Reduce the next pending bug (or adopt it from the bug database)."""
        session, every = self.session, self.store.triage.load_bugs()  # read once: what waits, how much is distinct
        bugs = [bug for bug in pending_bugs(self.store, every) if bug.id not in self.tried
                and (self.quick or _fits(session, bug))]
        if not bugs:
            return None
        bug = bugs[0]
        self.waiting["bug"] = distinct_waiting(bugs, every)
        self.tried.add(bug.id)
        self.touched.add(bug.id)
        if self.known_db is not None and not remember.adopted(bug):
            known = remember.adopt(session, self.known_db, bug)
            if known is not None and reduce_again(self.store.triage.load_bug(bug.id) or bug):
                self.tried.discard(bug.id)  # reduced again when its turn comes, in this pass too
            elif known is not None:
                _release_artifacts(session, bug)  # adopted as it is: its folder holds what it needs
            if known is not None:
                return True
        again = reduce_again(bug)
        session.summary.new += not again
        def failed(exc: Exception) -> None:  # a reduction again that fails keeps the adopted folder
            why = Reduction.TRIAGE_FAILED.saying(f"{type(exc).__name__}: {exc}")
            self.store.triage.update_bug(bug.id, reduction={**bug.reduction, TRIED_AGAIN: why} if again
                                         else {"status": why})

        return session.attempt(bug.id, "triage", lambda: _triage_bug(session, bug), failed)

    def _newest(self) -> bool | None:
        """A finished bug is ready only once rerun on the newest code (a few seconds): before localizations."""
        session = self.session
        if not session.next_python or not session.script_fits(SCRIPT_CHECK_S):
            return None
        on_release = [bug for bug in pending_newest(self.store) if bug.id not in self.tried_newest]
        if not on_release:
            return None
        self.tried_newest.add(on_release[0].id)  # never rerun on the newest code (adopted, or its pass ran out)
        _check_newest(session, on_release[0])
        return True

    def _localization(self) -> bool | None:
        session = self.session
        if not self.localizations or session.remaining() <= 0:
            return None
        self.waiting["localization"] = len(self.localizations)
        verdict_id = self.localizations.pop(0)
        going_on = session.attempt(None, f"localizing verdict {verdict_id}", lambda: _localize_one(session, verdict_id),
                                   lambda exc: self.store.triage.save_localization(verdict_id, None, None,
                                                                                    {"reason": f"failed: {exc}"}))
        if going_on:
            _drop_stale(self.store, dedup.update_bugs(self.store).stale)
        return going_on

    def _truth(self) -> bool | None:
        session = self.session
        if session.remaining() <= 0:
            return None
        truths = [bug for bug in pending_truths(self.store) + pending_training_truths(self.store)
                  if bug.id not in self.tried_truth]
        if not truths:
            return None
        bug = truths[0]
        self.tried_truth.add(bug.id)  # once per pass, whatever the outcome
        self.touched.add(bug.id)
        decide = training_truth if bug.kind in TRAINING_KINDS else reassess_folder
        return session.attempt(bug.id, "float64 truth", lambda: decide(session, bug))

    def _script(self) -> bool | None:
        """A script whose check ran out of time in an earlier pass."""
        if not self.session.script_fits(SCRIPT_CHECK_S):
            return None
        unchecked = [bug for bug in unchecked_scripts(self.store) if bug.id not in self.tried]
        if not unchecked:
            return None
        bug = unchecked[0]
        self.tried.add(bug.id)
        folder = Path(str(bug.bug_dir))
        _check_script(self.session, bug.id, folder, read_bug_file(folder))
        return True


def triage_campaign(store: CampaignStore, *, executor: Executor | None = None, time_budget_s: float = 120.0,
                    bugs_db: Path | None = None, next_python: str | None = None,
                    hard_end: float | None = None, truth: TruthRunner | None = None) -> TriageSummary:
    """Dedup, then localize and reduce (bounded by ``time_budget_s``), write folders and scripts. Idempotent.

    ``executor``: a :class:`memo.backends.executor.DifferentialExecutor` to reuse; without one, triage starts its own
    (for the libraries its bugs involve) only when there is work that needs execution. Every failure of triage itself
    is recorded in the store (the report lists them) and in the summary. ``bugs_db``: the bug database (default: the
    campaign's); a bug it knows, reduced, is adopted instead of reduced, and every finished bug is recorded in it.
    ``next_python``: the newest-code interpreter a reproducing bug is rerun with before it is ready to file (default:
    the campaign's; ``none``: no such check). ``hard_end``, ``truth``: :class:`memo.triage.session.Session`'s.
    """
    session = Session(store, executor, time_budget_s, next_python, hard_end, truth)
    known_db = remember.open_database(session, bugs_db)
    try:
        _drop_stale(store, dedup.update_bugs(store).stale)
        rekey_reduced(store)
        localizations, bugs = pending_localizations(store), pending_bugs(store)
        if session.remaining() > 0:
            session.needed = _needed_backends(session, localizations,
                                              bugs + pending_truths(store) + pending_training_truths(store))
        # a pass whose budget ran out leaves the remaining bugs to the next one instead of marking them "not reduced"
        quick = time_budget_s <= 0
        units = _Units(session, known_db, localizations, quick)
        while (quick or session.remaining() > MIN_STEP_S) and units.step():
            pass
        # the pass ends where the next one starts (its first step is a rekey): a bug whose folder this pass wrote
        # without a reduction (no time, no executor), or judged by its float64 truth, is merged by its model's key
        # now, not only by the next pass, so a report written right after this pass lists the same bugs as any
        # later ``memo report``; the others' keys were settled by the rekey this pass began with
        rekey_reduced(store, units.touched)
        session.summary.bugs = len(dedup.update_bugs(store).all)
        decide_all(store)  # whom each entry is filed against, once its merges are settled: the report reads it
        if known_db is not None:
            remember.remember_campaign(session, known_db)
    finally:
        if known_db is not None:
            known_db.close()
        session.close()
        session.summary.seconds = time.monotonic() - session.started
    return session.summary
