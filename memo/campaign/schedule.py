"""The campaign's periodic work between steps: timers (progress, coverage history, disk re-walk), and
triage beside the campaign (started on the first findings, poked on new ones) and after it.
"""
from __future__ import annotations

import time
from pathlib import Path
from typing import Callable

from memo.backends.executor import Executor
from memo.campaign.config import CampaignConfig
from memo.campaign.progress import Reporter
from memo.campaign.stop import StopFlag
from memo.diskspace import is_disk_full
from memo.filing.final_checks import ChecksDone, check_one, newest_by_minimal, reserve_s, run_checks, scripts_to_check
from memo.json_types import JsonObject
from memo.store import CampaignStore
from memo.triage import (MIN_STEP_S, TriageService, TriageSummary, pending_localizations, seconds_for,
                         triage_campaign)
from memo.triage.blame import decide_all
from memo.triage.dedup import update_bugs
from memo.triage.pending import backlog
from memo.triage.truth import TruthRunner
from memo.triage.turns import FINAL_SCRIPTS, IDLE_SCRIPT, SPENT_META, add_spent

PROGRESS_EVERY_S = 0.5
HISTORY_EVERY_S = 10.0
STOP_TRIAGE_WAIT_S = 10.0  # on Ctrl-C, how long the background triage may take to finish its unit of work
WAITING_EVERY_S = 20.0  # how often the progress figures recount the bugs waiting for triage
FINAL_SLICE_S = 60.0  # the final pass runs in slices this long, a progress line between them
TRUTH_LOGS = "truth-logs"  # under the campaign's folder: the float64 workers' stderr
BACKLOG_MARK = 12  # more bugs waiting than this: one model per pipeline in flight, not two (TriageSchedule.fuzz_depth)


class Every:
    """Due at most once every ``seconds`` of the monotonic clock; due at the first check when ``last`` is 0."""

    def __init__(self, seconds: float, last: float = 0.0) -> None:
        self.seconds = seconds
        self.last = last

    def due(self, now: float) -> bool:
        if now - self.last < self.seconds:
            return False
        self.last = now
        return True


class TriageSchedule:
    """Triage on the campaign's warm workers: in the background while it runs (no extra processes or
    memory, so bugs are reduced and checked during the campaign, not only at its end), then a final pass."""

    def __init__(self, directory: Path, store: CampaignStore, config: CampaignConfig, reporter: Reporter,
                 stop: StopFlag) -> None:
        self.directory = directory
        self.store = store
        self.config = config
        self.reporter = reporter
        self.stop_flag = stop
        self.service: TriageService | None = None
        self.triaged_findings = 0
        self.waiting: int | None = None  # bugs waiting for triage, as last counted
        self.distinct: int | None = None  # of those, the distinct fileable ones (memo.triage.reduce_order.Backlog)
        self.counted = Every(WAITING_EVERY_S)
        self.final_totals = TriageSummary()  # what the final pass did
        self.final_checks = ChecksDone()  # the minimal scripts the final pass checked
        # the float64 workers of every pass, started on the first truth and warm until :meth:`close` (each pass
        # had started its own: 5.7 s for float64-jax's, measured under load, on every truth a pass computed)
        self.truth = TruthRunner(directory / TRUTH_LOGS)

    def keep_up(self, findings: int, executor: Executor | None, ends_by: float | None = None) -> None:
        """Start the background triage on the first findings, and wake it on each new one. ``ends_by``
        (monotonic clock): no background pass is budgeted past it (a timed campaign's fuzzing time)."""
        if findings <= self.triaged_findings or executor is None:
            return
        if self.service is None:
            self.service = TriageService(self.directory, executor, on_disk_full=self.stop_flag.disk_full,
                                         ends_by=ends_by, idle=self.check_when_idle, truth=self.truth).start()
        else:
            self.service.poke()
        self.triaged_findings = findings

    def fuzz_depth(self, jobs: int) -> int:
        """How many models the fuzzing keeps in flight: two per pipeline, one while more than :data:`BACKLOG_MARK`
        bugs wait for triage. Triage's runs queue at the same workers behind the fuzzing's; with half as many ahead
        of them, reductions finish sooner (long150b, on two per pipeline throughout: 4 bugs waiting after the first
        hour, 16 at the end of fuzzing). Below the mark, fuzzing keeps its throughput."""
        pipelines = max(1, jobs)
        return pipelines if (self.waiting or 0) > BACKLOG_MARK else 2 * pipelines

    def check_when_idle(self, deadline: float) -> bool:
        """Between two background passes: check one minimal script (the most frequent bug that would be ready to
        file) by ``deadline``; whether one was checked. Called from the triage thread."""
        with CampaignStore(self.directory) as store:
            todos = scripts_to_check(store)
        if not todos:
            return False
        started = time.monotonic()
        checked = check_one(todos[0], deadline) is not None
        with CampaignStore(self.directory) as store:  # where triage's time went (bench_long_campaign.py)
            store.set_meta(SPENT_META, add_spent(store.get_meta(SPENT_META), IDLE_SCRIPT, time.monotonic() - started))
        return checked

    def stop(self, timeout_s: float | None) -> bool:
        """Stop the background triage (``None``: let it finish its unit of work, however long); whether it is
        over (a pass still running after ``timeout_s`` still uses the workers and the bug folders)."""
        return self.service is None or self.service.stop(timeout_s)

    def close(self) -> None:
        """Stop the float64 workers (after the final pass; a request after this starts them again)."""
        self.truth.close()

    def figures(self) -> JsonObject:
        """What the background triage did so far, and the bugs waiting for it (recounted now and then), for
        progress lines."""
        if self.service is None:
            return {}
        if self.counted.due(time.monotonic()):
            waiting = backlog(self.store)
            self.waiting, self.distinct = waiting.total, waiting.distinct
        totals = (self.service.totals, self.final_totals)
        figures: JsonObject = {name: sum(getattr(part, name) for part in totals)
                               for name in ("reduced", "scripts", "reproduced", "merged")}
        return {**figures, "errors": sum(len(part.errors) for part in totals), "waiting": self.waiting,
                "distinct": self.distinct}

    def left(self) -> JsonObject | None:
        """The triage this campaign leaves undone (None: nothing), and the budget that finishes it, for the
        summary: ``memo report NAME --triage --budget S`` does it. It settles the bugs the report reads first: their
        deduplication and whom each entry is filed against."""
        update_bugs(self.store)
        decide_all(self.store)
        waiting, localizations = backlog(self.store), len(pending_localizations(self.store))
        bugs, scripts = waiting.total, len(scripts_to_check(self.store))
        if not bugs and not localizations and not scripts:
            return None
        return {"bugs": bugs, "distinct": waiting.distinct, "localizations": localizations, "scripts": scripts,
                "budget_s": round(seconds_for(bugs, localizations))}

    def final_pass(self, executor: Executor | None, until: float, tick: Callable[[], None] | None = None) -> None:
        """The final triage pass, on the campaign's warm workers, until ``until`` (monotonic clock; it ends sooner
        when nothing is left), in slices of at most :data:`FINAL_SLICE_S` with a ``tick`` after each (the
        campaign's progress line), between the minimal-script checks of every bug that would be ready to file: first
        those ready now, last those its reductions made (they keep a share of the pass while bugs wait for
        reduction: :func:`memo.filing.final_checks.reserve_s`); its failure loses nothing stored."""
        if executor is None or until - time.monotonic() <= MIN_STEP_S:
            return  # too little time to start a step: the summary leaves the bugs to ``memo report --triage``
        pass_s = until - time.monotonic()
        try:
            self.reporter.finding({"mutant_id": "-", "kind": "triage", "backend": "memo", "stage": "final",
                                   "message": f"final triage pass, up to {pass_s:.0f} s"})
            first = run_checks(scripts_to_check(self.store), until)  # the cheapest entries to make ready
            while (left := until - time.monotonic() - reserve_s(len(scripts_to_check(self.store)), pass_s)) \
                    > MIN_STEP_S:
                summary = triage_campaign(self.store, executor=executor, time_budget_s=min(FINAL_SLICE_S, left),
                                          hard_end=until, truth=self.truth)
                self.final_totals.add(summary)
                if tick is not None:
                    tick()
                if not summary.worked and summary.seconds < min(FINAL_SLICE_S, left) - 1:
                    break  # nothing left that this pass could do
            self.final_checks = done = first.then(run_checks(scripts_to_check(self.store), until))
            self.store.set_meta(SPENT_META, add_spent(self.store.get_meta(SPENT_META), FINAL_SCRIPTS, done.seconds,
                                                      done.checked))
            newest_by_minimal(self.store, until)  # a repro.py the newest code could not run: the script
            if done.checked or done.left:
                self.reporter.finding({"mutant_id": "-", "kind": "triage", "backend": "memo", "stage": "final",
                                       "message": f"minimal scripts: {done.checked} checked, {done.reproducing} "
                                                  f"reproduce, {len(done.left)} left, {done.seconds:.0f} s"})
            if tick is not None:
                tick()
        except Exception as exc:  # triage is best effort; the findings are stored already
            if is_disk_full(exc):
                self.stop_flag.disk_full()
                return
            self.store.triage.record_error(None, "final pass", f"{type(exc).__name__}: {exc}")
            self.reporter.finding({"mutant_id": "-", "kind": "triage-error", "backend": "memo",
                                   "message": f"{type(exc).__name__}: {exc}"})
