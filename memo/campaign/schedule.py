"""The campaign's periodic work between steps: timers (progress, coverage history, disk re-walk), and
triage beside the campaign (started on the first findings, poked on new ones) and after it.
"""
from __future__ import annotations

from pathlib import Path

from memo.backends.executor import Executor
from memo.campaign.config import CampaignConfig
from memo.campaign.progress import Reporter
from memo.campaign.stop import StopFlag
from memo.diskspace import is_disk_full
from memo.json_types import JsonObject
from memo.store import CampaignStore
from memo.triage import TriageService, seconds_wanted, triage_campaign
from memo.triage.dedup import update_bugs

PROGRESS_EVERY_S = 0.5
HISTORY_EVERY_S = 10.0
STOP_TRIAGE_WAIT_S = 10.0  # on Ctrl-C, how long the background triage may take to finish its unit of work
FINAL_TRIAGE_CEILING_S = 1800.0  # for campaigns bounded by iterations only


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

    def keep_up(self, findings: int, executor: Executor | None) -> None:
        """Start the background triage on the first findings, and wake it on each new one."""
        if findings <= self.triaged_findings or executor is None:
            return
        if self.service is None:
            self.service = TriageService(self.directory, executor, on_disk_full=self.stop_flag.disk_full).start()
        else:
            self.service.poke()
        self.triaged_findings = findings

    def stop(self, timeout_s: float | None) -> None:
        """Stop the background triage (``None``: let it finish its unit of work, however long)."""
        if self.service is not None:
            self.service.stop(timeout_s)

    def figures(self) -> JsonObject:
        """What the background triage did so far, for progress lines."""
        if self.service is None:
            return {}
        totals = self.service.totals
        return {"reduced": totals.reduced, "scripts": totals.scripts, "reproduced": totals.reproduced,
                "merged": totals.merged, "errors": len(totals.errors)}

    def final_budget(self) -> float:
        """Sized to the bugs still to triage (a short campaign's final pass finishes them), within the
        configured floor and half the campaign's own length."""
        update_bugs(self.store)
        wanted = seconds_wanted(self.store)
        ceiling = max(self.config.triage_budget_s, 0.5 * (self.config.budget.seconds or FINAL_TRIAGE_CEILING_S))
        return min(ceiling, max(self.config.triage_budget_s, wanted))

    def final_pass(self, executor: Executor | None) -> None:
        """The final triage pass, on the campaign's warm workers; its failure loses nothing stored."""
        if executor is None:
            return
        try:
            budget = self.final_budget()
            self.reporter.finding({"mutant_id": "-", "kind": "triage", "backend": "memo",
                                   "stage": "final", "message": f"final triage pass, up to {budget:.0f} s"})
            triage_campaign(self.store, executor=executor, time_budget_s=budget)
        except Exception as exc:  # triage is best effort; the findings are stored already
            if is_disk_full(exc):
                self.stop_flag.disk_full()
                return
            self.store.triage.record_error(None, "final pass", f"{type(exc).__name__}: {exc}")
            self.reporter.finding({"mutant_id": "-", "kind": "triage-error", "backend": "memo",
                                   "message": f"{type(exc).__name__}: {exc}"})
