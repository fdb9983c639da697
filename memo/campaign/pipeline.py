"""Execution: execute -> judge -> record, for the mutants the generation loop hands over.

``--jobs`` pipelines (threads) each take the next submitted mutant, write its artifact and run it on a
set of warm workers borrowed from a queue; every :data:`PIPELINES_PER_WORKER_SET` pipelines share one
set. Finished executions are judged and stored in whatever order they finish. An executed artifact stays
on disk only while triage may need it (:class:`memo.campaign.disk.DiskBudget`); a full disk, or the
``--max-disk`` budget with nothing left to delete, requests a clean stop, and what was not stored runs
again on ``--resume`` (:meth:`Pipeline.resubmit_unexecuted`).
"""
from __future__ import annotations

import queue
import shutil
import time
import traceback
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Callable

from memo.artifact import prepare_artifact
from memo.backends.executor import DifferentialExecutor, ExecutionAbandoned, Executor
from memo.backends.result import ExecutionResult, stored_result
from memo.campaign.config import PIPELINES_PER_WORKER_SET, CampaignConfig, worker_replicas
from memo.campaign.disk import (STOP_DISK_BUDGET, UNSUPPORTED, DiskBudget, converter_declines,
                                finding_signatures, stored_signatures)
from memo.campaign.feedback import NOT_RUN, SEED_IDENT, Outcome
from memo.campaign.firsts import FirstShown
from memo.campaign.known import KnownOutcomes
from memo.campaign.progress import Reporter
from memo.campaign.stop import StopFlag
from memo.diskspace import is_disk_full, mentions_disk_full
from memo.json_types import JsonObject
from memo.kinds import BUG_KINDS, NON_FINDINGS
from memo.library_coverage.merge import LibraryCoverage, Reached, count_lines
from memo.model.ir import ModelIR
from memo.mutation.nan import has_injection
from memo.oracle import Verdict, judge
from memo.store import CampaignStore, Signed, SignedVerdict
from memo.training.check import CHECK_FAILED, TrainingCheck, stored_verdicts, train_if_chosen
from memo.training.selection import TrainingSelection, weight_dtypes
from memo.training.sweep import Sweep, sweep_optimizers
from memo.triage import sign
from memo.triage.precision_probe import STANDARD_PRECISIONS, dense_probe, precision_probe


@dataclass
class Execution:
    """A submitted mutant: where its artifact goes, and its (result, seconds, training check or None, optimizer sweep
    or None) once a pipeline ran it."""

    mutant_id: int
    ident: str
    artifact_dir: Path
    future: Future[tuple[ExecutionResult, float, TrainingCheck | None, Sweep | None]]
    special_values: bool = False  # the model injects NaN/Inf on purpose (the NaN operator)
    ir: ModelIR | None = None  # what :class:`KnownOutcomes` learns from with its result


class Pipeline:
    """The execution pipelines of one campaign run. ``counters`` and ``findings`` are the generation loop's
    (updated in place, so that they are saved with the next mutant)."""

    def __init__(self, config: CampaignConfig, store: CampaignStore, disk: DiskBudget, stop: StopFlag,
                 reporter: Reporter, counters: dict[str, int], findings: dict[str, int],
                 artifacts_root: Path, executor: Executor | None = None, firsts: FirstShown | None = None,
                 fuzzing_ends: float | None = None) -> None:
        """``executor``: one executor for every pipeline (a cluster's), instead of local worker sets; the
        pipeline closes it with its own. ``firsts``: which model first showed each signature among the stored
        executions (built from the store when not given). ``fuzzing_ends`` (monotonic clock): generation waits
        for no outcome past it (a timed campaign's fuzzing is over then)."""
        self.fuzzing_ends = fuzzing_ends
        self.on_wait: Callable[[], None] | None = None  # called while generation waits (the campaign's progress)
        self.config = config
        self.store = store
        self.disk = disk
        self.firsts = firsts if firsts is not None else FirstShown.of(stored_signatures(store))
        self.stop = stop
        self.reporter = reporter
        self.counters = counters
        self.findings = findings
        self.artifacts_root = artifacts_root
        self.given = executor
        self.threads = ThreadPoolExecutor(max_workers=max(1, config.jobs), thread_name_prefix="memo-exec")
        self.worker_sets: queue.Queue[Executor] = queue.Queue()  # one entry per pipeline that may borrow it
        self.executors: list[Executor] = []
        self.in_flight: list[Execution] = []
        self.outcomes: dict[int, Outcome] = {}  # mutant id -> what generation learns, until it takes it
        self.known = KnownOutcomes()  # what each library is known to decline: not run again (memo.campaign.known)
        self.unlearnt: dict[int, tuple[ModelIR, ExecutionResult]] = {}  # stored, outcome not taken yet
        self.known.rebuild(store)  # what a resumed campaign's earlier executions taught
        # which models get the training check (a resumed campaign's novelty starts afresh: it trains a few more)
        self.training = TrainingSelection(config.train_share, config.train_budget)
        self.library = LibraryCoverage()  # --library-coverage: every line reached so far (first reacher in the store)
        # --library-coverage feedback: the lines of the models whose outcome generation took (in its fixed order, so
        # that what counts as new does not depend on which model finished first), and those stored, not taken yet
        self.library_taken = LibraryCoverage()
        totals, lines = store.library.totals(), list(store.library.lines())  # read once for both
        self.library.restore(totals, lines)
        if config.library_coverage == "feedback":
            self.library_taken.restore(totals, lines)
        self.library_untaken: dict[int, list[Reached]] = {}

    # ------------------------------------------------------------------ workers
    def start(self) -> None:
        """Start the worker sets (none with ``--no-execute``); a set serves several pipelines."""
        jobs = max(1, self.config.jobs) if self.config.execute else 0
        if self.given is not None:
            self.executors.append(self.given)
            for _ in range(jobs):
                self.worker_sets.put(self.given)
            return
        for _ in range(-(-jobs // PIPELINES_PER_WORKER_SET)):
            self.executors.append(self._worker_set())
        for job in range(jobs):
            self.worker_sets.put(self.executors[job // PIPELINES_PER_WORKER_SET])

    def _worker_set(self) -> Executor:
        return DifferentialExecutor(backends=self.config.backends, plugins=[Path(p) for p in self.config.plugins],
                                    timeout_s=self.config.timeout_s, replicas=worker_replicas(self.config.jobs),
                                    reference=self.config.reference, gpu_precision=self.config.gpu_precision,
                                    library_coverage=bool(self.config.library_coverage))

    @property
    def executor(self) -> Executor | None:
        """The first worker set, which triage borrows; None when nothing executes."""
        return self.executors[0] if self.executors else None

    def cancel(self) -> None:
        """Run nothing more: executions not started are dropped (they run again on ``--resume``)."""
        self.threads.shutdown(wait=False, cancel_futures=True)

    def cluster_status(self) -> JsonObject | None:
        """The cluster's address and nodes (host, worker sets, executed models...) when it runs on one."""
        status = getattr(self.given, "status", None)
        return status() if callable(status) else None

    def close(self) -> None:
        """Stop every worker set (after :meth:`cancel` and after triage stopped borrowing them)."""
        for executor in self.executors:
            try:
                executor.close()
            except Exception:  # closing workers after a crash may fail; nothing to save there
                pass

    # ------------------------------------------------------------------ submit, collect
    def submit(self, mutant_id: int, ident: str, ir: ModelIR, library: bool = False) -> None:
        """Queue a stored mutant for execution on the next free pipeline (``library``: traced for library coverage,
        as the loop decides: memo.campaign.feedback.library_traced)."""
        directory = self.artifacts_root / str(mutant_id)
        seed = self.config.seed
        worker_sets = self.worker_sets
        known = self.known
        train = self.training.choose(directory.name, ir)
        optimizer = self.training.optimizer(directory.name, ir) if train else None
        remat = self.training.remat(directory.name, ir) if train else None
        probes = self._sweep_probes(ir)

        selection = self.training

        def work() -> tuple[ExecutionResult, float, TrainingCheck | None, Sweep | None]:
            executor = worker_sets.get()
            began = time.perf_counter()
            seconds, checked = 0.0, 0.0
            try:
                artifact = prepare_artifact(ir, directory, seed=seed)
                result = executor.run(artifact, skip=known.skips(ir, directory.name), library=library)
                seconds = time.perf_counter() - began
                training = train_if_chosen(executor, artifact, result, train, optimizer, remat) if train else None
                swept = sweep_optimizers(executor, probes, directory / "sweep", seed) \
                    if probes and isinstance(executor, DifferentialExecutor) else None
                checked = time.perf_counter() - began - seconds
                return result, seconds, training, swept
            finally:
                worker_sets.put(executor)
                chosen = bool(train) + len(probes)
                selection.measured(seconds, checked if chosen else None, chosen)  # the check's CPU budget

        self.in_flight.append(Execution(mutant_id, ident, directory, self.threads.submit(work), has_injection(ir), ir))

    def _sweep_probes(self, ir: ModelIR) -> list[ModelIR]:
        """The models the optimizer sweep steps every catalogue entry on (:meth:`TrainingSelection.sweep`), when
        ``ir`` is the first of its set of weight dtypes: its precision probe (or ``ir`` itself where that is no
        larger); with the campaign's first sweep, a Dense per dtype in each of the standard precisions not swept
        yet (:data:`memo.triage.precision_probe.STANDARD_PRECISIONS`: every optimizer meets every precision Keras
        layers take, whichever the mutants reach, on 2-D kernels, where Muon orthogonalizes: sw48's convolution
        probes did not reach its float64 defect)."""
        selection = self.training
        if selection.share <= 0 or weight_dtypes(ir) in selection.swept:
            return []
        first = not selection.swept
        probe = precision_probe(ir) or (ir if len(ir.body) <= len(weight_dtypes(ir)) else None)
        if probe is None or not selection.sweep(probe):
            return []
        variants = [dense_probe(dtypes) for dtypes in STANDARD_PRECISIONS] if first else []
        return [probe, *[variant for variant in variants if selection.sweep(variant)]]

    def resubmit_unexecuted(self) -> None:
        """After a crash or kill of memo itself, run the stored mutants whose execution never finished."""
        if not self.config.execute:
            return
        for mutant in self.store.unexecuted_mutants(self.config.execute_all):
            ident = f"m{mutant.iteration}" if mutant.operator != "seed" else f"{SEED_IDENT}{mutant.iteration}"
            self.submit(mutant.id, ident, ModelIR.loads(mutant.ir_json), bool(self.config.library_coverage))

    def collect(self, limit: int | None = None) -> None:
        """Store every finished execution, in whatever order they finished (one slow model must not hold up
        the others' pipelines); with ``limit``, wait until fewer than ``limit`` remain (or a stop, or the end of
        the fuzzing time)."""
        while True:
            for execution in [e for e in self.in_flight if e.future.done()]:
                self.in_flight.remove(execution)
                self._store_execution(execution)
            if limit is None or len(self.in_flight) < limit or self._done_waiting():
                return
            wait([e.future for e in self.in_flight], timeout=0.25, return_when=FIRST_COMPLETED)
            self._waited()

    def _waited(self) -> None:
        if self.on_wait is not None:
            self.on_wait()

    def _done_waiting(self) -> bool:
        """Generation waits no longer: the campaign stops, or its fuzzing time is over."""
        return bool(self.stop) or (self.fuzzing_ends is not None and time.monotonic() >= self.fuzzing_ends)

    def outcome(self, mutant_id: int) -> Outcome | None:
        """What generation learns from a submitted mutant's execution, waiting for it if it is in flight (it is
        taken: asked once); from the store when it ran before a resume; None when the campaign stops, or its
        fuzzing time ends, first."""
        while mutant_id not in self.outcomes:
            if self._done_waiting():
                return None
            running = [e.future for e in self.in_flight if e.mutant_id == mutant_id]
            if not running:
                return self._stored_outcome(mutant_id)
            wait(running, timeout=0.25)
            self._waited()
            self.collect()
        self._learn(mutant_id)
        return self._with_library_lines(mutant_id, self.outcomes.pop(mutant_id))

    def _with_library_lines(self, mutant_id: int, outcome: Outcome) -> Outcome:
        """The outcome with the library lines no model taken before it reached (library feedback only)."""
        reached = self.library_untaken.pop(mutant_id, None)
        if not reached:
            return outcome
        new = self.library_taken.add(reached)
        return replace(outcome, library_new=sum(count_lines(files) for files in new.values()))

    def _learn(self, mutant_id: int) -> None:
        """Teach :attr:`known` an execution when generation takes its outcome, not when it finishes: that is at
        a fixed iteration, so what a later model skips does not depend on how fast the libraries were."""
        stashed = self.unlearnt.pop(mutant_id, None)
        if stashed is not None:
            self._teach(*stashed)

    def _teach(self, ir: ModelIR, result: ExecutionResult) -> None:
        try:
            self.known.learn(ir, result)
        except Exception:  # a defect in learning must not end the campaign: it only skips less
            self.counters["internal_errors"] = self.counters.get("internal_errors", 0) + 1

    def _stored_outcome(self, mutant_id: int) -> Outcome:
        row = self.store.execution(mutant_id)
        result = stored_result(row.result) if row is not None else None
        if result is None:
            return NOT_RUN
        # the training check never feeds generation: its kinds are not read
        return self._outcome_of(mutant_id, result, self.store.signed_verdicts(BUG_KINDS | {UNSUPPORTED},
                                                                              mutant_id=mutant_id))

    def _outcome_of(self, mutant_id: int, result: ExecutionResult, signed: list[SignedVerdict]) -> Outcome:
        """Bugs it showed (``signed``: its findings as signed) and features a converter declined (either makes
        descendants re-pay a known outcome), and which of them another model showed first."""
        signatures = [*finding_signatures(signed), *converter_declines(signed)]
        self.firsts.remember(signatures, mutant_id)
        reference = result.backends.get(result.reference)
        return Outcome(reference_ran=reference is not None and reference.status == "ok",
                       signatures=frozenset(signatures), known=self.firsts.known_before(mutant_id, signatures))

    def drain(self, until: float | None = None) -> None:
        """Wait for every execution in flight and store it, in submission order; with ``until`` (monotonic
        clock), only until then: the executions still in flight stay there, unstored (``--resume`` runs them)."""
        while self.in_flight:
            if until is not None:
                left = until - time.monotonic()
                if left <= 0 or not wait([self.in_flight[0].future], timeout=left).done:
                    return
            self._store_execution(self.in_flight.pop(0))

    # ------------------------------------------------------------------ judge, record
    def _store_execution(self, execution: Execution) -> None:
        try:
            result, seconds, training, swept = execution.future.result()
        except ExecutionAbandoned as exc:  # not run (a stop, a cluster without nodes): --resume runs it
            if exc.stop_campaign:
                self.stop.request(str(exc))
            return
        except Exception as exc:  # preparing the artifact failed: a defect of memo, recorded, not fatal
            if is_disk_full(exc):  # not a defect: left unexecuted, so that --resume runs it again
                self.stop.disk_full()
                return
            self.counters["internal_errors"] += 1
            with self.store.transaction():
                self.store.add_execution(execution.mutant_id, {"error": f"{type(exc).__name__}: {exc}",
                                                               "traceback": traceback.format_exc()}, 0.0, None)
            self.outcomes[execution.mutant_id] = NOT_RUN
            return
        result_json = result.without_library_lines().to_json()  # the lines go to the library tables
        if training is not None:  # which models were trained, with which optimizer entry (the report counts them)
            result_json["training"] = training.summary()
        if swept is not None:
            result_json["optimizer_sweep"] = swept.summary()
        if mentions_disk_full(result_json):  # a worker could not write its outputs: no finding, run it again
            self.stop.disk_full()
            return
        verdicts = judge(result, special_values=execution.special_values)
        findings = [v for v in verdicts if v.kind not in NON_FINDINGS]
        # stored only: never part of the outcome generation learns
        trained = stored_verdicts(training) + (swept.verdicts if swept is not None else [])
        # each finding signed once, here, as it is recorded: everything else reads what the store keeps
        signed = [(verdict, sign(verdict, result, execution.ir)) for verdict in [*verdicts, *trained]]
        inference = [SignedVerdict(0, execution.mutant_id, verdict.kind, verdict.backend, verdict.stage, 0.0, value)
                     for verdict, value in signed[:len(verdicts)]]
        bugs = finding_signatures(inference)
        try:
            keep = self.disk.admit(execution.mutant_id, execution.artifact_dir, findings, result, bugs)
        except Exception:  # a defect in choosing what to keep must not end the campaign: keep it all
            self.counters["internal_errors"] += 1
            keep = True
        with self.store.transaction():
            self.store.add_execution(execution.mutant_id, result_json, seconds,
                                     str(execution.artifact_dir) if keep else None)
            for verdict, value in signed:
                self.store.add_verdict(execution.mutant_id, verdict, value)
            reached = result.library_reached()
            if reached and self.config.library_coverage == "feedback":
                self.library_untaken[execution.mutant_id] = reached
            if reached:
                self.store.library.add(execution.mutant_id, seed=execution.ident.startswith(SEED_IDENT),
                                       created=time.time(), totals={name: total for name, total, _ in reached},
                                       new=self.library.add(reached))
        self.counters["executed"] += 1
        if execution.ir is not None and self.config.feedback_lag:
            self.unlearnt[execution.mutant_id] = (execution.ir, result)  # learnt when its outcome is taken
        elif execution.ir is not None:  # no feedback: no outcome is ever taken, so it is learnt now
            self._teach(execution.ir, result)
        self.outcomes[execution.mutant_id] = self._outcome_of(execution.mutant_id, result, inference)
        self._count(execution.mutant_id, signed, training)
        if not keep:
            shutil.rmtree(execution.artifact_dir, ignore_errors=True)
        self.enforce_disk()

    def _count(self, mutant_id: int, signed: list[tuple[Verdict, Signed | None]],
               training: TrainingCheck | None) -> None:
        """Count a stored execution's findings and training check, and report each finding with its signature."""
        if training is not None:
            failed = (training.judgement.left_out or "").startswith(CHECK_FAILED)
            counter = "internal_errors" if failed else "trained"
            self.counters[counter] = self.counters.get(counter, 0) + 1
        for verdict, value in signed:
            if verdict.kind in NON_FINDINGS:
                continue
            label = f"{verdict.kind}:{verdict.backend}"
            self.findings[label] = self.findings.get(label, 0) + 1
            self.reporter.finding({"mutant_id": mutant_id, "kind": verdict.kind, "backend": verdict.backend,
                                   "stage": verdict.stage, "message": verdict.message,
                                   "signature": value.signature if value and verdict.kind in BUG_KINDS else None})

    def enforce_disk(self) -> None:
        """Over the --max-disk budget, delete what can be regenerated; with nothing left, stop cleanly."""
        if not self.disk.enforce():
            self.stop.request(STOP_DISK_BUDGET)
