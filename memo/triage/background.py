"""Triage while a campaign runs: a thread that keeps working on the campaign's findings with its workers.

The campaign's pipelines and this thread share one executor (``run`` is thread-safe and each worker serves
one request at a time), so once findings exist triage gets a steady share of every worker it needs, about
one pipeline's worth, instead of waiting for the end of the campaign. Passes are short, so new findings are
deduplicated and picked up within a few minutes; when there is nothing to do the thread sleeps.

Between two passes the thread checks one minimal script (the ``idle`` work: a bug that only needs its check is the
cheapest entry to make ready, and a campaign whose passes always find bugs to reduce would otherwise leave every
check to its final pass). Its share of the cores is not capped: in two 8-minute campaigns its own processes took 1-2 %
of the CPU and its candidates 14-31 runs on 2-3 libraries beside 104-129 models fuzzed on 13 (docs/benchmarks.md,
"Triage backlog and throughput").
"""
from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Callable

from memo.diskspace import is_disk_full
from memo.store import CampaignStore
from memo.triage.passes import MIN_STEP_S, triage_campaign
from memo.triage.session import TriageSummary
from memo.triage.truth import TruthRunner
from memo.backends.executor import Executor

PASS_BUDGET_S = 120.0  # a bug started late in a shorter pass got too little time to reduce (n40: 9 s, 1 run)
IDLE_WAIT_S = 15.0


class TriageService:
    """Runs triage passes in a daemon thread until :meth:`stop`; :attr:`totals` sums what they did."""

    def __init__(self, campaign_dir: Path, executor: Executor, *, pass_budget_s: float = PASS_BUDGET_S,
                 on_disk_full: Callable[[], None] | None = None, ends_by: float | None = None,
                 idle: Callable[[float], bool] | None = None, truth: TruthRunner | None = None) -> None:
        """``on_disk_full``: called (from the thread) when a pass fails for want of disk space. ``ends_by``
        (monotonic clock): no pass is budgeted past it (a timed campaign's slot ends then). ``idle``: work between
        two passes (the campaign's minimal-script checks, one at a time), given the deadline it must end by;
        whether it did some. ``truth``: the campaign's float64 workers, warm across passes (a pass starting its own
        paid a float64 worker's start-up for each training bug's truth)."""
        self.campaign_dir = Path(campaign_dir)
        self.executor = executor
        self.on_disk_full = on_disk_full
        self.pass_budget_s = pass_budget_s
        self.ends_by = ends_by
        self.idle = idle
        self.truth = truth
        self.totals = TriageSummary()
        self._stop = threading.Event()
        self._wake = threading.Event()
        self._thread = threading.Thread(target=self._work, name="memo-triage", daemon=True)

    def start(self) -> "TriageService":
        self._thread.start()
        return self

    def poke(self) -> None:
        """New findings arrived: start the next pass now instead of after the idle wait."""
        self._wake.set()

    def stop(self, timeout_s: float | None = None) -> bool:
        """Finish the current unit of work (a bug's reduction is bounded) and end the thread; whether it ended
        within ``timeout_s``."""
        self._stop.set()
        self._wake.set()
        self._thread.join(timeout_s)
        return not self._thread.is_alive()

    def _budget(self) -> float:
        """The next pass's seconds: :attr:`pass_budget_s`, less if the slot ends sooner."""
        if self.ends_by is None:
            return self.pass_budget_s
        return min(self.pass_budget_s, self.ends_by - time.monotonic())

    def _work(self) -> None:
        while not self._stop.is_set():
            if self._budget() <= MIN_STEP_S:  # the slot's end: the campaign's own end finishes what is left
                self._wake.wait(IDLE_WAIT_S)
                self._wake.clear()
                continue
            summary = self._one_pass()
            checked = self._idle_work()  # between two passes, whether or not this one found work
            if not summary.worked and not checked:
                self._wake.wait(IDLE_WAIT_S)
                self._wake.clear()

    def _idle_work(self) -> bool:
        """The ``idle`` work within the next pass's budget; whether it did some (its failure is recorded)."""
        if self.idle is None or self._stop.is_set() or self._budget() <= MIN_STEP_S:
            return False
        try:
            return self.idle(time.monotonic() + self._budget())
        except Exception as exc:  # noqa: BLE001  (the campaign goes on; the error is kept for the report)
            try:
                with CampaignStore(self.campaign_dir) as store:
                    store.triage.record_error(None, "background idle work", f"{type(exc).__name__}: {exc}")
            except Exception:  # noqa: BLE001
                pass
            return False

    def _one_pass(self) -> TriageSummary:
        try:
            with CampaignStore(self.campaign_dir) as store:
                summary = triage_campaign(store, executor=self.executor, time_budget_s=self._budget(),
                                          truth=self.truth)
        except Exception as exc:  # noqa: BLE001  (the campaign goes on; the error is kept for the report)
            summary = TriageSummary(errors=[f"{type(exc).__name__}: {exc}"])
            if is_disk_full(exc) and self.on_disk_full is not None:
                self.on_disk_full()
                self._stop.set()
                return summary
            try:
                with CampaignStore(self.campaign_dir) as store:
                    store.triage.record_error(None, "background pass", summary.errors[0])
            except Exception:  # noqa: BLE001  (no store to record into; the summary keeps it)
                pass
        self.totals.add(summary)
        return summary


def start_background_triage(campaign_dir: Path, *, executor: Executor | None = None, time_budget_s: float = 120.0) -> threading.Thread:
    """One triage pass in a daemon thread with its own connection; a failure is recorded in the store
    when there is one, never raised into the caller."""
    def work() -> None:
        try:
            with CampaignStore(Path(campaign_dir)) as store:
                try:
                    triage_campaign(store, executor=executor, time_budget_s=time_budget_s)
                except Exception as exc:  # noqa: BLE001
                    store.triage.record_error(None, "background pass", f"{type(exc).__name__}: {exc}")
        except Exception:  # noqa: BLE001  (no campaign there: nothing to triage, nothing to record into)
            pass

    thread = threading.Thread(target=work, name="memo-triage", daemon=True)
    thread.start()
    return thread
