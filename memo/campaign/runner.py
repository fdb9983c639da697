"""The coverage-guided campaign: MEMO's Algorithm 2 with execution, oracle, storage and resume.

One iteration: select a seed <slot, operator> (search strategy), mutate the slot's model, measure its
coverage delta (Eq. 1), feed the delta back to the strategy, replace the slot's model when the mutant
is diverse (UpdateSeeds), store the mutant together with the new campaign state (one transaction),
and, for a diverse mutant (or every valid one with ``--execute-all``), run it on every backend and
store the verdicts. Execution never influences generation, so the same ``--seed`` gives the same
mutants whatever the libraries do, and a resumed campaign continues the very same sequence.

An executed artifact stays on disk only while triage may need it (:mod:`memo.campaign.disk`); a full
disk, or the ``--max-disk`` budget with nothing left to delete, stops the campaign like Ctrl-C does.
"""
from __future__ import annotations

import queue
import random
import shutil
import signal
import sqlite3
import threading
import time
import traceback
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from memo.campaign.config import (MUTANTS_DIR, PIPELINES_PER_WORKER_SET, REPORTS_DIR, CampaignConfig,
                                  worker_replicas)
from memo.campaign.disk import (DISK_STOPS, REWALK_EVERY_S, STOP_DISK_BUDGET, STOP_DISK_FULL, DiskBudget,
                                is_disk_full, mentions_disk_full)
from memo.campaign.progress import Reporter
from memo.coverage import CRITERIA
from memo.errors import InvalidModelError, MemoError, UsageError
from memo.kinds import NON_FINDINGS
from memo.model.ir import ModelIR
from memo.mutation.nan import has_injection
from memo.store import CampaignStore, MutantRecord, VerdictRecord

PROGRESS_EVERY_S = 0.5
HISTORY_EVERY_S = 10.0
STOP_TRIAGE_WAIT_S = 10.0  # on Ctrl-C, how long the background triage may take to finish its unit of work
FINAL_S_PER_BUG = 30.0  # final pass budget per bug still to reduce (median reduction is well under this)
FINAL_S_PER_LOCALIZATION = 4.0
FINAL_TRIAGE_CEILING_S = 1800.0  # for campaigns bounded by iterations only
BUDGET_SPENT = "budget spent"


@dataclass
class PoolEntry:
    """The model currently held by a slot of the seed pool, and where it came from."""

    ir: ModelIR
    ident: str   # "seed:<name>" or "m<iteration>"
    seed: str    # the seed this lineage started from


@dataclass
class Execution:
    mutant_id: int
    ident: str
    artifact_dir: Path
    future: Future[Any]
    special_values: bool = False  # the model injects NaN/Inf on purpose (the NaN operator)


class StopFlag:
    """Set by SIGINT/SIGTERM (or :meth:`request`); the loop checks it between steps and stops cleanly
    within seconds."""

    def __init__(self) -> None:
        self.reason: str | None = None
        self._previous: dict[int, Any] = {}

    def install(self) -> None:
        if threading.current_thread() is not threading.main_thread():
            return
        for sig in (signal.SIGINT, signal.SIGTERM):
            self._previous[sig] = signal.signal(sig, self._handle)

    def restore(self) -> None:
        for sig, handler in self._previous.items():
            signal.signal(sig, handler)
        self._previous.clear()

    def request(self, reason: str) -> None:
        """Stop for ``reason`` (a full disk, say), unless a stop is under way already."""
        if self.reason is None:
            self.reason = reason

    def _handle(self, signum: int, _frame: Any) -> None:
        if self.reason is not None:  # a second Ctrl-C: stop waiting for executions too
            raise KeyboardInterrupt
        self.reason = "interrupted" if signum == signal.SIGINT else "terminated"

    def __bool__(self) -> bool:
        return self.reason is not None


class Campaign:
    """A campaign bound to its store; :meth:`run` fuzzes until the budget or a signal stops it."""

    def __init__(self, directory: Path, config: CampaignConfig, reporter: Reporter, *, resume: bool = False,
                 executor_factory: Callable[[], Any] | None = None) -> None:
        self.directory = Path(directory)
        self.config = config
        self.reporter = reporter
        fresh = not resume and not self.directory.exists()
        self.store = CampaignStore(self.directory, create=not resume)
        self.artifacts_root = (MUTANTS_DIR / config.name).resolve()  # workers run in other directories
        self.executor_factory = executor_factory or self._default_executor
        self.stop = StopFlag()
        self.pool: dict[str, PoolEntry] = {}
        self.iteration = 0
        self.elapsed_before = 0.0
        self.counters = {"generated": 0, "valid": 0, "diverse": 0, "executed": 0, "internal_errors": 0}
        self.findings: dict[str, int] = {}
        self.triage_service: Any = None  # a memo.triage.TriageService once findings exist
        try:
            if resume:
                self._restore()
            else:
                self._initialize()
            self.disk = DiskBudget(self.store, self.artifacts_root, limit=config.max_disk_bytes,
                                   per_signature=config.keep_per_signature)
            self.disk.load()
        except BaseException:
            self.store.close()
            if fresh:  # a campaign that could not start leaves nothing behind
                shutil.rmtree(self.directory, ignore_errors=True)
            raise

    # ------------------------------------------------------------------ set-up
    def _initialize(self) -> None:
        from memo.coverage import CoverageTracker, model_coverage  # noqa: PLC0415
        from memo.mutation import EXTRA_OPERATORS, MEMO_OPERATORS, OPERATORS  # noqa: PLC0415
        from memo.search import make_strategy  # noqa: PLC0415

        operators = self.config.operators or [*MEMO_OPERATORS, *EXTRA_OPERATORS]
        unknown = [op for op in operators if op not in OPERATORS]
        if unknown:
            raise UsageError(f"unknown mutation operator(s) {', '.join(unknown)} (choose from {', '.join(OPERATORS)})")
        self.config.operators = list(operators)
        self.tracker = CoverageTracker()
        for name, ir in self._load_seeds():
            self.pool[name] = PoolEntry(ir=ir, ident=f"seed:{name}", seed=name)
            self.tracker.add(model_coverage(ir))
        self.strategy = make_strategy(self.config.search, list(self.pool), self.config.operators)
        self.store.set_meta("config", self.config.to_json())
        self.store.set_meta("campaign_name", self.config.name)
        self.store.set_meta("started", time.time())
        self.store.set_meta("seeds", {name: entry.ir.dumps() for name, entry in self.pool.items()})
        self.pending_seed_runs = list(self.pool)

    def _load_seeds(self) -> list[tuple[str, ModelIR]]:
        from memo.seeds import discover_seeds, reduced_seed  # noqa: PLC0415

        seeds = discover_seeds(Path(self.config.seeds_dir), safe_mode=self.config.safe_mode)
        if not seeds:
            raise UsageError(f"no usable seed models in {self.config.seeds_dir}")
        return [(seed.name, reduced_seed(seed) if self.config.reduce_seeds else seed.ir) for seed in seeds]

    def _restore(self) -> None:
        from memo.coverage import CoverageTracker  # noqa: PLC0415
        from memo.search import restore_strategy  # noqa: PLC0415

        saved = self.store.load_state()
        if saved is None:
            raise UsageError(f"campaign {self.directory} has no saved state to resume")
        self.iteration, data = saved
        self.iteration += 1
        self.strategy = restore_strategy(data["search"])
        self.tracker = CoverageTracker.from_json(data["coverage"])
        self.pool = {slot: PoolEntry(ModelIR.loads(entry["ir"]), entry["ident"], entry["seed"])
                     for slot, entry in data["pool"].items()}
        self.elapsed_before = float(data.get("elapsed", 0.0))
        self.counters.update(data.get("counters", {}))
        self.findings = dict(data.get("findings", {}))
        self.pending_seed_runs = list(data.get("pending_seed_runs", []))

    def _state(self) -> dict[str, Any]:
        return {"search": self.strategy.to_json(), "coverage": self.tracker.to_json(),
                "pool": {slot: {"ir": e.ir.dumps(), "ident": e.ident, "seed": e.seed} for slot, e in self.pool.items()},
                "elapsed": self._elapsed(), "counters": self.counters, "findings": self.findings,
                "pending_seed_runs": self.pending_seed_runs}

    def _default_executor(self) -> Any:
        from memo.backends.executor import DifferentialExecutor  # noqa: PLC0415

        return DifferentialExecutor(backends=self.config.backends, plugins=[Path(p) for p in self.config.plugins],
                                    timeout_s=self.config.timeout_s, replicas=worker_replicas(self.config.jobs))

    # ------------------------------------------------------------------ the loop
    def _elapsed(self) -> float:
        return self.elapsed_before + (time.monotonic() - self.started)

    def run(self) -> dict[str, Any]:
        self.started = time.monotonic()
        self.stop.install()
        executors: queue.Queue[Any] = queue.Queue()
        in_flight: list[Execution] = []
        created: list[Any] = []
        pool = ThreadPoolExecutor(max_workers=max(1, self.config.jobs), thread_name_prefix="memo-exec")
        stopped_because = BUDGET_SPENT
        try:
            jobs = max(1, self.config.jobs) if self.config.execute else 0
            for _ in range(-(-jobs // PIPELINES_PER_WORKER_SET)):
                created.append(self.executor_factory())
            for job in range(jobs):  # each pipeline borrows a worker set; a set serves several pipelines
                executors.put(created[job // PIPELINES_PER_WORKER_SET])
            if created:
                self.store.set_meta("versions", created[0].versions())
            else:
                self.pending_seed_runs = []
            self.store.set_meta("artifacts_root", str(self.artifacts_root))
            backends = created[0].backend_names if created else []
            self.reporter.start({"name": self.config.name, "seeds": list(self.pool), "seed": self.config.seed,
                                 "backends": backends, "search": self.config.search,
                                 "directory": str(self.directory)})
            self._resubmit_unexecuted(pool, executors, in_flight)
            last_progress = last_history = 0.0
            last_rewalk = time.monotonic()
            triaged_findings = 0
            while True:
                if self.stop:
                    stopped_because = self.stop.reason or "stopped"
                    break
                if self.config.budget.exhausted(self._elapsed(), self.counters["generated"]):
                    break
                self._collect(in_flight, limit=2 * max(1, self.config.jobs))
                if self.pending_seed_runs:
                    self._run_seed(self.pending_seed_runs[0], pool, executors, in_flight)
                else:
                    self._step(pool, executors, in_flight)
                now = time.monotonic()
                if now - last_progress >= PROGRESS_EVERY_S:
                    self.reporter.progress(self.snapshot())
                    last_progress = now
                if now - last_history >= HISTORY_EVERY_S:
                    self._history_point()
                    last_history = now
                if now - last_rewalk >= REWALK_EVERY_S:
                    self.disk.rewalk()
                    self._enforce_disk()
                    last_rewalk = now
                found = sum(self.findings.values())
                if found > triaged_findings and created:
                    self._background_triage(created[0])
                    triaged_findings = found
            if not self.stop:  # a stopped campaign leaves in-flight mutants to be re-run on resume
                self._drain(in_flight)
                self._stop_triage(timeout_s=None)
                self._triage(created[0] if created else None)
        except KeyboardInterrupt:
            stopped_because = "interrupted"
        except (OSError, sqlite3.Error) as exc:
            if not is_disk_full(exc):
                raise
            stopped_because = STOP_DISK_FULL  # the failed transaction rolled back: the store stays consistent
        finally:
            pool.shutdown(wait=False, cancel_futures=True)
            self._stop_triage(timeout_s=STOP_TRIAGE_WAIT_S)
            for executor in created:
                _close_quietly(executor)
            self.stop.restore()
        self._quietly_on_full_disk(self._history_point)
        summary = self.snapshot()
        summary.update({"name": self.config.name, "stopped_because": stopped_because,
                        "directory": str(self.directory)})
        summary["report"] = self._finish()
        if self.stop.reason in DISK_STOPS and stopped_because == BUDGET_SPENT:  # the last writes found it full
            summary["stopped_because"] = self.stop.reason
        self.reporter.end(summary)
        self.store.close()
        return summary

    def _step(self, pool: ThreadPoolExecutor, executors: "queue.Queue[Any]", in_flight: list[Execution]) -> None:
        from memo.coverage import model_coverage  # noqa: PLC0415
        from memo.mutation import MutationFailed, mutate  # noqa: PLC0415

        iteration = self.iteration
        rng = random.Random(f"{self.config.seed}/{iteration}")
        key = self.strategy.select(rng)
        slot, operator = key
        parent = self.pool[slot]
        began = time.perf_counter()
        record = MutantRecord(iteration=iteration, slot=slot, operator=operator, parent=parent.ident,
                              seed=parent.seed, lineage={}, ir_json=None, valid=False)
        mutant = None
        try:
            mutant = mutate(parent.ir, operator, rng, self.tracker, parent=parent.ident)
        except (MutationFailed, InvalidModelError) as exc:
            record.error = f"{type(exc).__name__}: {exc}"
        except Exception as exc:  # a defect in an operator must not end a night-long campaign
            self.counters["internal_errors"] += 1
            record.error = f"internal {type(exc).__name__}: {exc}\n{traceback.format_exc(limit=6)}"
        new_items = 0
        if mutant is not None:
            delta = self.tracker.add(model_coverage(mutant.ir, mutant.shapes))
            new_items = delta.size()  # primary items only: 0 exactly when the mutant is not diverse
            record.valid, record.ir_json, record.lineage = True, mutant.ir.dumps(), {"changes": mutant.changes}
            record.diverse = delta.is_new()
            record.delta = {name: sorted(map(str, delta[name])) for name in CRITERIA if delta[name]}
            self.counters["valid"] += 1
            if record.diverse:
                self.counters["diverse"] += 1
                if self._may_be_parent(mutant.ir):
                    self.pool[slot] = PoolEntry(ir=mutant.ir, ident=f"m{iteration}", seed=parent.seed)
        self.strategy.feedback(key, new_items)
        record.gen_seconds = time.perf_counter() - began
        self.counters["generated"] += 1
        self.iteration += 1
        with self.store.transaction():
            mutant_id = self.store.add_mutant(record)
            self.store.save_state(iteration, self._state())
        if self.config.execute and mutant is not None and (record.diverse or self.config.execute_all):
            self._submit(mutant_id, f"m{iteration}", mutant.ir, pool, executors, in_flight)

    def _may_be_parent(self, ir: ModelIR) -> bool:
        """UpdateSeeds (Algorithm 2, lines 8-11) with a size bound: lineages would otherwise grow without end
        (median 18 to 61 layers within 30 minutes), and every backend's cost grows with them."""
        bound = self.config.max_parent_layers
        return bound <= 0 or len(ir.layers) <= bound

    def _run_seed(self, name: str, pool: ThreadPoolExecutor, executors: "queue.Queue[Any]",
                  in_flight: list[Execution]) -> None:
        """Execute a (reduced) seed itself once, before mutating: seeds are test inputs too."""
        entry = self.pool[name]
        record = MutantRecord(iteration=-1 - list(self.pool).index(name), slot=name, operator="seed",
                              parent=entry.ident, seed=name, lineage={"changes": []}, ir_json=entry.ir.dumps(),
                              valid=True)
        self.pending_seed_runs.pop(0)
        with self.store.transaction():
            mutant_id = self.store.add_mutant(record)
            self.store.save_state(self.iteration - 1, self._state())
        self._submit(mutant_id, f"seed-{name}", entry.ir, pool, executors, in_flight)

    # ------------------------------------------------------------------ execution
    def _submit(self, mutant_id: int, ident: str, ir: ModelIR, pool: ThreadPoolExecutor,
                executors: "queue.Queue[Any]", in_flight: list[Execution]) -> None:
        directory = self.artifacts_root / str(mutant_id)
        seed = self.config.seed

        def work() -> tuple[Any, float]:
            from memo.artifact import prepare_artifact  # noqa: PLC0415

            executor = executors.get()
            began = time.perf_counter()
            try:
                artifact = prepare_artifact(ir, directory, seed=seed)
                return executor.run(artifact), time.perf_counter() - began
            finally:
                executors.put(executor)

        in_flight.append(Execution(mutant_id, ident, directory, pool.submit(work), has_injection(ir)))

    def _resubmit_unexecuted(self, pool: ThreadPoolExecutor, executors: "queue.Queue[Any]",
                             in_flight: list[Execution]) -> None:
        """After a crash or kill of memo itself, run the stored mutants whose execution never finished."""
        if not self.config.execute:
            return
        for mutant in self.store.unexecuted_mutants(self.config.execute_all):
            ident = f"m{mutant.iteration}" if mutant.operator != "seed" else f"seed-{mutant.iteration}"
            self._submit(mutant.id, ident, ModelIR.loads(mutant.ir_json), pool, executors, in_flight)

    def _collect(self, in_flight: list[Execution], limit: int | None = None) -> None:
        """Store every finished execution, in whatever order they finished (one slow model must not hold up
        the others' pipelines); with ``limit``, wait until fewer than ``limit`` remain (checking for a stop)."""
        while True:
            for execution in [e for e in in_flight if e.future.done()]:
                in_flight.remove(execution)
                self._store_execution(execution)
            if limit is None or len(in_flight) < limit or self.stop:
                return
            wait([e.future for e in in_flight], timeout=0.25, return_when=FIRST_COMPLETED)

    def _drain(self, in_flight: list[Execution]) -> None:
        while in_flight:
            self._store_execution(in_flight.pop(0))

    def _store_execution(self, execution: Execution) -> None:
        from memo.oracle import judge  # noqa: PLC0415

        try:
            result, seconds = execution.future.result()
        except Exception as exc:  # preparing the artifact failed: a defect of memo, recorded, not fatal
            if is_disk_full(exc):  # not a defect: left unexecuted, so that --resume runs it again
                self._disk_full()
                return
            self.counters["internal_errors"] += 1
            with self.store.transaction():
                self.store.add_execution(execution.mutant_id, {"error": f"{type(exc).__name__}: {exc}",
                                                               "traceback": traceback.format_exc()}, 0.0, None)
            return
        result_json = result.to_json()
        if mentions_disk_full(result_json):  # a worker could not write its outputs: no finding, run it again
            self._disk_full()
            return
        verdicts = judge(result, special_values=execution.special_values)
        findings = [v for v in verdicts if v.kind not in NON_FINDINGS]
        try:
            keep = self.disk.admit(execution.mutant_id, execution.artifact_dir, [v.to_json() for v in findings],
                                   result_json)
        except Exception:  # a defect in choosing what to keep must not end the campaign: keep it all
            self.counters["internal_errors"] += 1
            keep = True
        with self.store.transaction():
            self.store.add_execution(execution.mutant_id, result_json, seconds,
                                     str(execution.artifact_dir) if keep else None)
            for verdict in verdicts:
                self.store.add_verdict(VerdictRecord(execution.mutant_id, verdict.kind, verdict.backend, verdict.stage,
                                                     verdict.message, dict(verdict.metrics)))
        self.counters["executed"] += 1
        for verdict in findings:
            label = f"{verdict.kind}:{verdict.backend}"
            self.findings[label] = self.findings.get(label, 0) + 1
            self.reporter.finding({"mutant_id": execution.mutant_id, "kind": verdict.kind, "backend": verdict.backend,
                                   "stage": verdict.stage, "message": verdict.message})
        if not keep:
            shutil.rmtree(execution.artifact_dir, ignore_errors=True)
        self._enforce_disk()

    # ------------------------------------------------------------------ disk
    def _enforce_disk(self) -> None:
        """Over the --max-disk budget, delete what can be regenerated; with nothing left, stop cleanly."""
        if not self.disk.enforce():
            self.stop.request(STOP_DISK_BUDGET)

    def _disk_full(self) -> None:
        self.stop.request(STOP_DISK_FULL)

    def _quietly_on_full_disk(self, write: Callable[[], Any]) -> Any:
        """Run a last write (history point, report) that a full disk may refuse; nothing depends on it."""
        try:
            return write()
        except (OSError, sqlite3.Error) as exc:
            if not is_disk_full(exc):
                raise
            self._disk_full()
            return None

    # ------------------------------------------------------------------ reporting
    def snapshot(self) -> dict[str, Any]:
        elapsed = self._elapsed()
        active = max(1e-9, time.monotonic() - self.started)
        return {"elapsed_s": round(elapsed, 1), "remaining_s": self.config.budget.remaining(elapsed),
                **self.counters, "iteration": self.iteration,
                "generated_per_s": self.counters["generated"] / max(1e-9, elapsed),
                "executed_per_s": self.counters["executed"] / active,
                "coverage": self.tracker.counts(), "findings": dict(self.findings), "disk": self.disk.figures(),
                "triage": self._triage_figures()}

    def _triage_figures(self) -> dict[str, Any]:
        if self.triage_service is None:
            return {}
        totals = self.triage_service.totals
        return {"reduced": totals.reduced, "scripts": totals.scripts, "reproduced": totals.reproduced,
                "merged": totals.merged, "errors": len(totals.errors)}

    def _history_point(self) -> None:
        self.store.add_coverage_point(self._elapsed(), self.iteration, self.counters["generated"],
                                      self.counters["executed"], self.tracker.counts())

    def _background_triage(self, executor: Any) -> None:
        """Once findings exist, triage runs beside the pipelines on the same warm workers (no extra processes
        or memory), so bugs are reduced and checked during the campaign, not only at its end."""
        from memo.triage import TriageService  # noqa: PLC0415

        if self.triage_service is None:
            self.triage_service = TriageService(self.directory, executor, on_disk_full=self._disk_full).start()
        else:
            self.triage_service.poke()

    def _stop_triage(self, timeout_s: float | None) -> None:
        if self.triage_service is not None:
            self.triage_service.stop(timeout_s)

    def _final_triage_budget(self) -> float:
        """Sized to the bugs still to triage (a short campaign's final pass finishes them), within the
        configured floor and half the campaign's own length."""
        from memo.triage import pending_bugs, pending_localizations  # noqa: PLC0415
        from memo.triage.dedup import update_bugs  # noqa: PLC0415

        update_bugs(self.store)
        wanted = FINAL_S_PER_BUG * len(pending_bugs(self.store)) + FINAL_S_PER_LOCALIZATION * len(
            pending_localizations(self.store))
        ceiling = max(self.config.triage_budget_s, 0.5 * (self.config.budget.seconds or FINAL_TRIAGE_CEILING_S))
        return min(ceiling, max(self.config.triage_budget_s, wanted))

    def _triage(self, executor: Any) -> None:
        """The final triage pass, on the campaign's warm workers; its failure loses nothing stored."""
        from memo.triage import triage_campaign  # noqa: PLC0415

        if executor is None:
            return
        try:
            budget = self._final_triage_budget()
            self.reporter.finding({"mutant_id": "-", "kind": "triage", "backend": "memo",
                                   "stage": "final", "message": f"final triage pass, up to {budget:.0f} s"})
            triage_campaign(self.store, executor=executor, time_budget_s=budget)
        except Exception as exc:  # triage is best effort; the findings are stored already
            if is_disk_full(exc):
                self._disk_full()
                return
            self.store.triage.record_error(None, "final pass", f"{type(exc).__name__}: {exc}")
            self.reporter.finding({"mutant_id": "-", "kind": "triage-error", "backend": "memo",
                                   "message": f"{type(exc).__name__}: {exc}"})

    def _finish(self) -> str | None:
        """Write the HTML report; a failure here never loses the campaign's data."""
        from memo.report import write_report  # noqa: PLC0415

        try:
            REPORTS_DIR.mkdir(parents=True, exist_ok=True)
            return str(write_report(self.directory, REPORTS_DIR / f"{self.config.name}.html"))
        except Exception as exc:  # the data is stored; `memo report NAME` writes the report later
            if is_disk_full(exc):
                self._disk_full()
            message = str(exc) if isinstance(exc, MemoError) else f"{type(exc).__name__}: {exc}"
            self.reporter.finding({"mutant_id": "-", "kind": "report-error", "backend": "memo", "message": message})
            return None


def _close_quietly(executor: Any) -> None:
    try:
        executor.close()
    except Exception:  # closing workers after a crash may fail; nothing to save there
        pass
