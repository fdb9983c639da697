"""The campaign: start, generate and execute until the budget is spent or a stop is requested, finish.

The generation loop (:mod:`memo.campaign.loop`) advances one step at a time; the pipelines
(:mod:`memo.campaign.pipeline`) execute, judge and record its mutants beside it; between steps the
campaign does its periodic work (:mod:`memo.campaign.schedule`). A timed campaign fuzzes, then finishes the
models in flight and a final triage pass, all within its slot (:mod:`memo.campaign.slot`). A full disk, or the
``--max-disk`` budget with nothing left to delete, stops the campaign like Ctrl-C does.
"""
from __future__ import annotations

import shutil
import sqlite3
import time
from pathlib import Path
from typing import Callable, TypeVar

from memo.backends.executor import Executor
from memo.campaign.backpressure import PAUSED_META, TriageShare
from memo.campaign.config import CampaignConfig
from memo.campaign.disk import DISK_STOPS, REWALK_EVERY_S, STOP_DISK_FULL, DiskBudget, stored_signatures
from memo.campaign.firsts import FirstShown
from memo.campaign.loop import GenerationLoop
from memo.campaign.pipeline import Pipeline
from memo.campaign.progress import Reporter
from memo.campaign.schedule import HISTORY_EVERY_S, PROGRESS_EVERY_S, STOP_TRIAGE_WAIT_S, Every, TriageSchedule
from memo.campaign.slot import Slot
from memo.campaign.stop import BUDGET_SPENT, StopFlag
from memo.diskspace import is_disk_full
from memo.errors import MemoError
from memo.json_types import JsonObject
from memo.paths import MUTANTS_DIR
from memo.report import REPORTS_DIR, write_report
from memo.store import CampaignStore

T = TypeVar("T")


class Campaign:
    """A campaign bound to its store; :meth:`run` fuzzes until the budget or a signal stops it."""

    def __init__(self, directory: Path, config: CampaignConfig, reporter: Reporter, *, resume: bool = False,
                 executor: Executor | None = None, stop: StopFlag | None = None, started: float | None = None) -> None:
        """``executor``: the one executor every pipeline uses (a cluster's, :mod:`memo.cluster`) instead of
        local worker sets; the campaign closes it. ``stop``: the flag that executor watches. ``started``: when
        the command began (monotonic clock), where the time budget's slot starts; default now."""
        self.started = time.monotonic() if started is None else started
        self.directory = Path(directory)
        self.executor = executor
        self.config = config
        self.report_error: str | None = None  # why the end-of-campaign report could not be written
        self.reporter = reporter
        fresh = not resume and not self.directory.exists()
        self.store = CampaignStore(self.directory, create=not resume)
        self.artifacts_root = (MUTANTS_DIR / config.name).resolve()  # workers run in other directories
        self.stop = stop or StopFlag()
        self.pipeline: Pipeline | None = None
        self.share: TriageShare[Executor] | None = None  # the pipelines paused while triage falls behind
        self.progress_every = Every(PROGRESS_EVERY_S)
        self.loop = GenerationLoop(config, self.store)
        self.triage = TriageSchedule(self.directory, self.store, config, reporter, self.stop)
        try:
            if resume:
                self.loop.restore()
            else:
                self.loop.initialize()
            self.disk = DiskBudget(self.store, self.artifacts_root, limit=config.max_disk_bytes,
                                   per_signature=config.keep_per_signature)
            stored = list(stored_signatures(self.store))  # one walk of the stored results, for both
            self.disk.load(stored)
            self.firsts = FirstShown.of(stored)
            self.slot = Slot(self.started, config.budget.remaining(self.loop.elapsed_before), config.triage_budget_s)
        except BaseException:
            self.store.close()
            if fresh:  # a campaign that could not start leaves nothing behind
                shutil.rmtree(self.directory, ignore_errors=True)
            raise

    def run(self) -> JsonObject:
        """Fuzz, then finish: the summary (also given to the reporter's ``end``), with the report's path.
        A stopped campaign leaves its in-flight mutants to be executed again on ``--resume``."""
        self.loop.start_clock()
        self.stop.install()
        pipeline = Pipeline(self.config, self.store, self.disk, self.stop, self.reporter, self.loop.counters,
                            self.loop.findings, self.artifacts_root, executor=self.executor, firsts=self.firsts,
                            fuzzing_ends=self.slot.fuzzing_ends())
        self.pipeline = pipeline
        pipeline.on_wait = self._progress  # a step waiting for a slow model still shows progress
        stopped_because = BUDGET_SPENT
        try:
            pipeline.start()
            self._start(pipeline)
            stopped_because = self._fuzz(pipeline)
            self.loop.stop_clock()
            if not self.stop:
                self._final_phase(pipeline)
        except KeyboardInterrupt:
            stopped_because = "interrupted"
        except (OSError, sqlite3.Error) as exc:
            if not is_disk_full(exc):
                raise
            stopped_because = STOP_DISK_FULL  # the failed transaction rolled back: the store stays consistent
        finally:
            self.loop.stop_clock()
            pipeline.cancel()
            self.triage.stop(timeout_s=STOP_TRIAGE_WAIT_S)
            self.triage.close()
            pipeline.close()
            self._quietly_on_full_disk(self.loop.checkpoint)  # on a full disk the state saved before stands
            self.stop.restore()
        return self._end(stopped_because)

    def _final_phase(self, pipeline: Pipeline) -> None:
        """The models in flight, then the final triage pass, all before the slot's final deadline (less the time
        closing takes). Models still running then are left to ``--resume``; a background triage pass still
        running then means no final pass: what is left goes to ``memo report NAME --triage``."""
        if pipeline.executor is None:  # --no-execute: nothing in flight, nothing to triage
            return
        until = self.slot.final_deadline(time.monotonic()) - self.slot.closing_s()

        def tick() -> None:  # the final phase shows its progress too (a nightly log is not silent for its last part)
            self._progress(final={"in_flight": len(pipeline.in_flight), "left_s": max(0.0, until - time.monotonic())})

        self.reporter.finding({"mutant_id": "-", "kind": "final", "backend": "memo", "stage": "final",
                               "message": f"fuzzing over: {len(pipeline.in_flight)} models in flight to finish, then "
                                          f"final triage, for up to {max(0.0, until - time.monotonic()):.0f} s"})
        while pipeline.in_flight and time.monotonic() < until:
            pipeline.drain(until=min(until, time.monotonic() + 1.0))
            tick()
        while not self.triage.stop(timeout_s=min(1.0, max(0.0, until - time.monotonic()))):
            if time.monotonic() >= until:
                return
            tick()
        self.triage.final_pass(pipeline.executor, until=until, tick=tick)

    def _start(self, pipeline: Pipeline) -> None:
        executor = pipeline.executor
        if executor is not None:
            self.store.set_meta("versions", executor.versions())
        else:
            self.loop.pending_seed_runs = []
        self.store.set_meta("artifacts_root", str(self.artifacts_root))
        self.reporter.start({"name": self.config.name, "seeds": list(self.loop.seed_pool), "seed": self.config.seed,
                             "backends": executor.backend_names if executor is not None else [],
                             "search": self.config.search, "directory": str(self.directory),
                             "plan": self.slot.plan(), "iterations": self.config.budget.iterations,
                             "next_python": self.config.next_python})
        pipeline.resubmit_unexecuted()

    def _fuzz(self, pipeline: Pipeline) -> str:
        """Step until the budget is spent (:data:`BUDGET_SPENT`) or a stop is requested (its reason)."""
        self.share = share = TriageShare(pipeline.worker_sets, max(1, self.config.jobs))
        try:
            return self._steps(pipeline, share)
        finally:
            share.release()  # the models in flight, the final phase's, never wait for triage
            self._quietly_on_full_disk(lambda: self.store.set_meta(
                PAUSED_META, round(self.store.get_meta(PAUSED_META, 0.0) + share.paused_s, 1)))

    def _steps(self, pipeline: Pipeline, share: TriageShare[Executor]) -> str:
        """:meth:`_fuzz`'s steps, pausing pipelines while triage falls behind (``share``)."""
        history = Every(HISTORY_EVERY_S)
        rewalk = Every(REWALK_EVERY_S, last=time.monotonic())
        while True:
            if self.stop:
                return self.stop.reason or "stopped"
            if (self.config.budget.exhausted(self.loop.elapsed(), self.loop.counters["generated"])
                    or self.slot.fuzzing_over(time.monotonic())):
                return BUDGET_SPENT
            share.follow(self.triage.distinct)
            pipeline.collect(limit=self.triage.fuzz_depth(self.config.jobs))
            self.loop.advance(pipeline.submit, pipeline.outcome)
            now = time.monotonic()
            self._progress()
            if history.due(now):
                self._history_point()
            if rewalk.due(now):
                self.disk.rewalk()
                pipeline.enforce_disk()
            self.triage.keep_up(sum(self.loop.findings.values()), pipeline.executor, ends_by=self._triage_ends_by())

    def _progress(self, final: JsonObject | None = None) -> None:
        """Give the reporter a snapshot when one is due (``final``: the final phase's models in flight and time
        left)."""
        if self.progress_every.due(time.monotonic()):
            self.reporter.progress(self.snapshot() if final is None else {**self.snapshot(), "final": final})

    def _triage_ends_by(self) -> float | None:
        """When background triage passes must be over: at the end of the fuzzing time, so that the one running
        then has the final phase to finish its unit of work, and the final pass the workers to itself."""
        return self.slot.fuzzing_ends()

    def _end(self, stopped_because: str) -> JsonObject:
        self._quietly_on_full_disk(self._history_point)
        self._quietly_on_full_disk(self.disk.rewalk)  # the last line's disk figure: after what triage freed
        summary = self.snapshot()
        summary.update({"name": self.config.name, "stopped_because": stopped_because,
                        "directory": str(self.directory)})
        left = self._quietly_on_full_disk(self.triage.left)  # it deduplicates: before the report, which reads the bugs
        if left:
            summary["triage_left"] = left
        summary["report"] = self._write_report()
        if summary["report"] is None and self.report_error:
            summary["report_error"] = self.report_error
        if self.stop.reason in DISK_STOPS and stopped_because == BUDGET_SPENT:  # the last writes found it full
            summary["stopped_because"] = self.stop.reason
        self.reporter.end(summary)
        self.store.close()
        return summary

    # ------------------------------------------------------------------ figures
    def snapshot(self) -> JsonObject:
        """The figures of a progress line."""
        loop = self.loop
        elapsed = loop.elapsed()
        active = max(1e-9, time.monotonic() - loop.started)
        return {"elapsed_s": round(elapsed, 1), "remaining_s": self.config.budget.remaining(elapsed),
                **loop.counters, "iteration": loop.iteration,
                "generated_per_s": loop.counters["generated"] / max(1e-9, elapsed),
                "executed_per_s": loop.counters["executed"] / active,
                "coverage": loop.tracker.counts(), "coverage_inert": loop.tracker.inert_counts(),
                "findings": dict(loop.findings), "disk": self.disk.figures(),
                "triage": self.triage.figures(), "cluster": self._cluster(),
                **({"paused": len(self.share.held), "pipelines": self.share.pipelines} if self.share else {})}

    def _cluster(self) -> JsonObject | None:
        return self.pipeline.cluster_status() if self.pipeline is not None else None

    def _history_point(self) -> None:
        loop = self.loop
        cluster = self._cluster()
        if cluster is not None:  # the nodes this run used, for the report
            self.store.set_meta("cluster", cluster)
        if self.pipeline is not None and self.config.train_share > 0:  # the check's CPU budget, for the report
            self.store.set_meta("training_budget", self.pipeline.training.figures())
        self.store.add_coverage_point(loop.elapsed(), loop.iteration, loop.counters["generated"],
                                      loop.counters["executed"], loop.tracker.counts())

    # ------------------------------------------------------------------ last writes
    def _quietly_on_full_disk(self, write: Callable[[], T]) -> T | None:
        """Run a last write (history point, report) that a full disk may refuse; nothing depends on it."""
        try:
            return write()
        except (OSError, sqlite3.Error) as exc:
            if not is_disk_full(exc):
                raise
            self.stop.disk_full()
            return None

    def _write_report(self) -> str | None:
        """Write the HTML report; a failure here never loses the campaign's data."""
        try:
            REPORTS_DIR.mkdir(parents=True, exist_ok=True)
            return str(write_report(self.directory, REPORTS_DIR / f"{self.config.name}.html"))
        except Exception as exc:  # the data is stored; `memo report NAME` writes the report later
            if is_disk_full(exc):
                self.stop.disk_full()
            message = str(exc) if isinstance(exc, MemoError) else f"{type(exc).__name__}: {exc}"
            self.reporter.finding({"mutant_id": "-", "kind": "report-error", "backend": "memo", "message": message})
            self.report_error = message.splitlines()[0] if message else type(exc).__name__
            return None
