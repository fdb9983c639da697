"""The generation loop: MEMO's Algorithm 2 and the campaign state it carries.

One step selects a seed <slot, operator> (search strategy), mutates the slot's model, measures its
coverage delta (Eq. 1), feeds the delta back to the strategy, replaces the slot's model when the mutant
is diverse (UpdateSeeds), and stores the mutant; the whole campaign state is stored with it in the same
transaction when the mutant goes to execution, and every :data:`STATE_EVERY` iterations otherwise (a resume
drops the mutants stored after the state and generates them again, identically); a diverse mutant (or every
valid one with ``--execute-all``) is then handed to execution
(:mod:`memo.campaign.pipeline`). Its execution feeds back into the pool a fixed number of iterations later
(:mod:`memo.campaign.feedback`): a diverse mutant becomes a parent, and its coverage counts, only once the
reference ran it. The lag is fixed, so the same ``--seed`` and ``--jobs`` give the same mutants however fast
the libraries are, and a resumed campaign continues the very same sequence.
"""
from __future__ import annotations

import random
import time
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from memo.campaign.config import CampaignConfig
from memo.campaign.feedback import (SEED_IDENT, Awaiting, AwaitingQueue, Outcome, feedback_lag, runs_anyway,
                                    library_traced)
from memo.coverage import CRITERIA, Coverage, CoverageTracker, model_coverage
from memo.errors import InvalidModelError, UsageError
from memo.json_types import JsonObject
from memo.model.ir import ModelIR
from memo.mutation import (DEFAULT_OPERATORS, DIRECTED_OPERATOR, OPERATORS, Mutant, MutationFailed, mutate,
                           operator_names)
from memo.mutation.analysis import recurrent_layers
from memo.mutation.nan import has_injection
from memo.search import SearchStrategy, make_strategy, restore_strategy
from memo.seeds import discover_seeds, reduced_seed
from memo.store import CampaignStore, MutantRecord

Submit = Callable[[int, str, ModelIR, bool], None]  # mutant id, ident, model, traced for library coverage
"""Hands a stored mutant (its id, its ident, its IR) to execution."""
STATE_EVERY = 25
"""Iterations between two saves of the campaign state when none of them goes to execution. The state is most
of a megabyte (coverage, pool, the models in flight); saved with each of the many mutants of a saturated
campaign that add nothing, its encoding and writing would cost more than generating them (docs/benchmarks.md)."""
Await = Callable[[int], "Outcome | None"]
"""The outcome of a submitted mutant's execution (waiting for it); None when the campaign stops first."""


@dataclass
class PoolEntry:
    """The model currently held by a slot of the seed pool, and where it came from."""

    ir: ModelIR
    ident: str   # "seed:<name>" or "m<iteration>"
    seed: str    # the seed this lineage started from
    signatures: frozenset[str] = frozenset()  # the bug signatures its execution showed

    def to_json(self) -> JsonObject:
        return {"ir": self.ir.dumps(), "ident": self.ident, "seed": self.seed, "signatures": sorted(self.signatures)}

    @classmethod
    def from_json(cls, data: JsonObject) -> PoolEntry:
        return cls(ModelIR.loads(data["ir"]), data["ident"], data["seed"], frozenset(data.get("signatures", ())))


SeedPool = dict[str, PoolEntry]
"""Slot name -> its current model, in the seeds' order (a seed's own run is numbered by its position)."""


class GenerationLoop:
    """The campaign state (seed pool, iteration, counters, findings, search strategy, coverage, mutants awaiting
    their outcome) and the steps that advance it. ``counters`` and ``findings`` are updated in place by the
    pipeline too: they are saved with every mutant. ``tracker`` holds what executed models cover (seeds
    included); a mutant's delta is measured against that plus what the models in flight claim."""

    def __init__(self, config: CampaignConfig, store: CampaignStore) -> None:
        self.config = config
        self.store = store
        self.seed_pool: SeedPool = {}
        self.iteration = 0
        self.submitted = 0  # mutants submitted for execution (seed runs aside): the feedback lag's clock
        self.elapsed_before = 0.0
        self.started = time.monotonic()
        self.stopped: float | None = None  # when fuzzing ended (the clock stops)
        self.counters = {"generated": 0, "valid": 0, "diverse": 0, "executed": 0, "internal_errors": 0,
                         "parents": 0, "not_parents": 0}
        self.findings: dict[str, int] = {}
        self.pending_seed_runs: list[str] = []
        self.awaiting = AwaitingQueue()
        self.strategy: SearchStrategy
        self.tracker: CoverageTracker

    # ------------------------------------------------------------------ set-up
    def initialize(self) -> None:
        """A new campaign: check the operators, load the seeds, store the configuration and the seeds."""
        operators = self.config.operators or list(DEFAULT_OPERATORS)
        unknown = [op for op in operators if op not in OPERATORS]
        if unknown:
            raise UsageError(f"unknown mutation operator(s) {', '.join(unknown)} "
                             f"(choose from {', '.join(operator_names())})")
        self.config.operators = list(operators)
        if self.config.feedback_lag is None:
            self.config.feedback_lag = feedback_lag(self.config.jobs) if self.config.execute else 0
        self.tracker = CoverageTracker()
        for name, ir in self._load_seeds():
            self.seed_pool[name] = PoolEntry(ir=ir, ident=f"seed:{name}", seed=name)
            self.tracker.add(model_coverage(ir))
        self.strategy = make_strategy(self.config.search, list(self.seed_pool), self.config.operators)
        self.store.set_meta("config", self.config.to_json())
        self.store.set_meta("campaign_name", self.config.name)
        self.store.set_meta("started", time.time())
        self.store.set_meta("seeds", {name: entry.ir.dumps() for name, entry in self.seed_pool.items()})
        self.pending_seed_runs = list(self.seed_pool)

    def _load_seeds(self) -> list[tuple[str, ModelIR]]:
        seeds = discover_seeds(Path(self.config.seeds_dir), safe_mode=self.config.safe_mode)
        if not seeds:
            raise UsageError(f"no usable seed models in {self.config.seeds_dir}")
        return [(seed.name, reduced_seed(seed) if self.config.reduce_seeds else seed.ir) for seed in seeds]

    def restore(self) -> None:
        """A resumed campaign: the last saved state; the mutants stored after it (none went to execution) are
        forgotten, to be generated again from that state."""
        saved = self.store.load_state()
        if saved is None:
            raise UsageError(f"campaign {self.store.directory} has no saved state to resume")
        self.iteration, data = saved
        with self.store.transaction():
            self.store.forget_mutants_after(self.iteration)
        self.iteration += 1
        self.submitted = int(data.get("submitted", self.iteration))  # states saved before it: iterations
        self.strategy = restore_strategy(data["search"])
        self.tracker = CoverageTracker.from_json(data["coverage"])
        self.seed_pool = {slot: PoolEntry.from_json(entry) for slot, entry in data["pool"].items()}
        self.elapsed_before = float(data.get("elapsed", 0.0))
        self.counters.update(data.get("counters", {}))
        self.findings = dict(data.get("findings", {}))
        self.pending_seed_runs = list(data.get("pending_seed_runs", []))
        self.awaiting = AwaitingQueue.from_json(data.get("awaiting"))

    def checkpoint(self) -> None:
        """Save the campaign state as of the last generated mutant (a stopping campaign calls it)."""
        with self.store.transaction():
            self.store.save_state(self.iteration - 1, self._state())

    def _state(self) -> JsonObject:
        return {"search": self.strategy.to_json(), "coverage": self.tracker.to_json(),
                "pool": {slot: entry.to_json() for slot, entry in self.seed_pool.items()},
                "elapsed": self.elapsed(), "counters": self.counters, "findings": self.findings,
                "pending_seed_runs": self.pending_seed_runs, "awaiting": self.awaiting.to_json(),
                "submitted": self.submitted}

    # ------------------------------------------------------------------ the clock
    def start_clock(self) -> None:
        self.started = time.monotonic()
        self.stopped = None

    def stop_clock(self) -> None:
        """Fuzzing is over: what follows (the models in flight, the final triage) is not fuzzing time, which the
        budget, a resume and the report's duration and rates count."""
        if self.stopped is None:
            self.stopped = time.monotonic()

    def elapsed(self) -> float:
        """Fuzzing seconds, the runs before a resume included."""
        now = self.stopped if self.stopped is not None else time.monotonic()
        return self.elapsed_before + (now - self.started)

    # ------------------------------------------------------------------ steps
    def advance(self, submit: Submit, outcome: Await | None = None) -> None:
        """One step: the next seed still to run on its own, else one mutation (after applying the outcomes
        due by now; ``outcome`` waits for one; without it, or with ``--no-execute``, there is nothing to await)."""
        if self.pending_seed_runs:
            self._run_seed(self.pending_seed_runs[0], submit)
        elif self._apply_due(outcome):
            self._step(submit)

    @property
    def lag(self) -> int:
        """Mutants submitted for execution between a mutant and the use of its outcome (0: no execution
        feedback)."""
        return int(self.config.feedback_lag or 0) if self.config.execute else 0

    def _apply_due(self, outcome: Await | None) -> bool:
        """Apply every outcome due by now, oldest first; False when the campaign stops first."""
        for item in self.awaiting.due(self.submitted):
            found = outcome(item.mutant_id) if outcome is not None else None
            if found is None:
                return False
            self.awaiting.remove(item)
            self._apply(item, found)
        return True

    def _apply(self, item: Awaiting, outcome: Outcome) -> None:
        if item.seed_run:  # the bugs a seed shows are its descendants' inheritance, not news
            entry = self.seed_pool[item.slot]
            if entry.ident == item.ident:
                entry.signatures = outcome.signatures
            return
        if outcome.reference_ran:
            self.tracker.add(item.coverage)
        else:  # what it aimed at may be what the reference cannot run: aimed at again only a few times
            self.tracker.refuse(item.coverage)
        if outcome.library_new > 0 and item.operator:
            self.strategy.library_feedback((item.slot, item.operator), outcome.library_new, diverse=item.diverse)
            self.counters["library_new"] = self.counters.get("library_new", 0) + 1
        if item.becomes_parent(outcome):
            self.seed_pool[item.slot] = PoolEntry(ModelIR.loads(item.ir_json), item.ident, item.seed,
                                                  outcome.signatures)
            self.counters["parents"] += 1
        elif item.candidate:
            self.counters["not_parents"] += 1

    def coverage_view(self) -> CoverageTracker:
        """What generation measures a mutant against: the executed models' coverage plus the claims of those
        still awaiting their outcome."""
        if not len(self.awaiting):
            return self.tracker
        return self.tracker.with_claims(self.awaiting.claimed())

    def _step(self, submit: Submit) -> None:
        iteration = self.iteration
        rng = random.Random(f"{self.config.seed}/{iteration}")
        key = self.strategy.select(rng, (DIRECTED_OPERATOR, self.config.directed_share))
        slot, operator = key
        parent = self.seed_pool[slot]
        began = time.perf_counter()
        record = MutantRecord(iteration=iteration, slot=slot, operator=operator, parent=parent.ident,
                              seed=parent.seed, lineage={}, ir_json=None, valid=False)
        view = self.coverage_view()
        mutant = self._mutate(parent, operator, rng, view, record)
        if mutant is None and operator == DIRECTED_OPERATOR and self.strategy.chosen not in (None, key):
            self.strategy.feedback(key, 0)
            key = self.strategy.fall_back()
            operator = record.operator = key[1]
            record.error = None
            mutant = self._mutate(parent, operator, rng, view, record)
        new_items = 0
        coverage = Coverage()
        if mutant is not None:
            coverage = model_coverage(mutant.ir, mutant.shapes)
            delta = view.delta(coverage)
            targeted = sum(len(delta.headline()[name]) for name in OPERATORS[operator].targets)
            new_items = delta.size() + targeted  # 0 exactly when the mutant is not diverse
            record.valid, record.lineage = True, {"changes": mutant.changes}
            record.diverse = new_items > 0
            record.delta = {name: sorted(map(str, delta[name])) for name in CRITERIA if delta[name]}
            self.counters["valid"] += 1
            if record.diverse:
                self.counters["diverse"] += 1
        self.strategy.feedback(key, new_items)
        record.gen_seconds = time.perf_counter() - began
        self.counters["generated"] += 1
        self.iteration += 1
        would_execute = mutant is not None and (record.diverse or self.config.execute_all
                                                or self._runs_anyway(record))
        executes = self.config.execute and would_execute
        self.submitted += executes
        if mutant is not None and (would_execute or not self.config.execute):
            # one never run is never a parent: its row keeps the operator, the error and the coverage delta, and its
            # IR is neither serialized nor stored (campaign long150: 9.5 KB for each of 28x as many mutants as were
            # executed, 77 % of the store); without execution the mutants are the product, each with its IR
            record.ir_json = mutant.ir.dumps()
        with self.store.transaction():
            mutant_id = self.store.add_mutant(record)
            if would_execute:  # one never executed (not diverse) neither counts nor becomes a parent
                may_be_parent = self._may_be_parent(mutant, parent.ir)
                candidate = record.diverse and may_be_parent
                library_candidate = self.config.library_coverage == "feedback" and may_be_parent and not candidate
                item = Awaiting(mutant_id=mutant_id, iteration=iteration, due=self.submitted + self.lag, slot=slot,
                                ident=f"m{iteration}", seed=parent.seed,  # only a parent needs its IR
                                ir_json=(record.ir_json or "") if candidate or library_candidate else "",
                                coverage=coverage, candidate=candidate, parent_signatures=parent.signatures,
                                operator=operator, diverse=record.diverse, library_candidate=library_candidate)
                if executes and self.lag > 0:
                    self.awaiting.add(item)
                else:  # no execution feedback: it counts, and may become a parent, at once
                    self._apply(item, Outcome(reference_ran=True))
            if would_execute or iteration % STATE_EVERY == 0:
                self.store.save_state(iteration, self._state())
        if executes:
            # run only for library feedback: traced (one run for the saturation share is traced like any other)
            extra = not record.diverse and not self.config.execute_all and self.config.library_coverage == "feedback"
            traced = bool(self.config.library_coverage) and (
                extra or library_traced(self.submitted, self.config.library_every))
            submit(mutant_id, f"m{iteration}", mutant.ir, traced)

    def _runs_anyway(self, record: MutantRecord) -> bool:
        """Whether this valid mutant without model-level coverage is executed anyway (every 4th with library
        feedback, every 16th otherwise: :func:`memo.campaign.feedback.runs_anyway`, counted in the saved state)."""
        if not self.config.execute or not record.valid or record.diverse:
            return False
        self.counters["valid_not_diverse"] = self.counters.get("valid_not_diverse", 0) + 1
        return runs_anyway(self.counters["valid_not_diverse"], self.config.library_coverage == "feedback")

    def _mutate(self, parent: PoolEntry, operator: str, rng: random.Random, view: CoverageTracker,
                record: MutantRecord) -> Mutant | None:
        """``operator``'s mutant of the parent, or None with the reason in ``record.error``."""
        try:
            return mutate(parent.ir, operator, rng, view, parent=parent.ident)
        except (MutationFailed, InvalidModelError) as exc:
            record.error = f"{type(exc).__name__}: {exc}"
        except Exception as exc:  # a defect in an operator must not end a night-long campaign
            self.counters["internal_errors"] += 1
            record.error = f"internal {type(exc).__name__}: {exc}\n{traceback.format_exc(limit=6)}"
        return None

    def _may_be_parent(self, mutant: Mutant, parent: ModelIR) -> bool:
        """UpdateSeeds (Algorithm 2, lines 8-11) with a size bound and a compute bound: lineages would otherwise
        grow without end, and every backend's cost grows with them (docs/architecture.md, "Throughput");
        within the layer bound, tensors still grow (a flattened feature map fed to attention, channels doubled by
        concatenation) until one model costs a library tens of seconds; and lineages gather recurrent layers,
        which the libraries unroll: a mutant with more than the bound is a parent only if its parent had as many
        (a seed's lineage still evolves). A model that injects NaN/Inf on purpose is not a parent: its descendants
        would compute on the overflowed values."""
        layers, cost, recurrent = (self.config.max_parent_layers, self.config.max_parent_cost,
                                   self.config.max_parent_recurrent)
        return ((layers <= 0 or len(mutant.ir.layers) <= layers) and (cost <= 0 or mutant.cost <= cost)
                and (recurrent <= 0 or recurrent_layers(mutant.ir) <= max(recurrent, recurrent_layers(parent)))
                and not has_injection(mutant.ir))

    def _run_seed(self, name: str, submit: Submit) -> None:
        """Execute a (reduced) seed itself once, before mutating: seeds are test inputs too."""
        entry = self.seed_pool[name]
        record = MutantRecord(iteration=-1 - list(self.seed_pool).index(name), slot=name, operator="seed",
                              parent=entry.ident, seed=name, lineage={"changes": []}, ir_json=entry.ir.dumps(),
                              valid=True)
        self.pending_seed_runs.pop(0)
        with self.store.transaction():
            mutant_id = self.store.add_mutant(record)
            if self.lag > 0:  # its outcome is applied before the first mutation
                self.awaiting.add(Awaiting(mutant_id=mutant_id, iteration=record.iteration, due=self.submitted,
                                           slot=name, ident=entry.ident, seed=name, ir_json="", coverage=Coverage(),
                                           candidate=False, seed_run=True))
            self.store.save_state(self.iteration - 1, self._state())
        submit(mutant_id, f"{SEED_IDENT}{name}", entry.ir, bool(self.config.library_coverage))  # the baseline
