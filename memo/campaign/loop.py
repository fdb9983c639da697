"""The generation loop: MEMO's Algorithm 2 and the campaign state it carries.

One step selects a seed <slot, operator> (search strategy), mutates the slot's model, measures its
coverage delta (Eq. 1), feeds the delta back to the strategy, replaces the slot's model when the mutant
is diverse (UpdateSeeds), and stores the mutant together with the whole campaign state in one
transaction; a diverse mutant (or every valid one with ``--execute-all``) is then handed to execution
(:mod:`memo.campaign.pipeline`). Execution never feeds back into generation, so the same ``--seed`` gives
the same mutants whatever the libraries do, and a resumed campaign continues the very same sequence.
"""
from __future__ import annotations

import random
import time
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from memo.campaign.config import CampaignConfig
from memo.coverage import CRITERIA, CoverageTracker, model_coverage
from memo.errors import InvalidModelError, UsageError
from memo.model.ir import ModelIR
from memo.mutation import EXTRA_OPERATORS, MEMO_OPERATORS, OPERATORS, MutationFailed, mutate
from memo.search import SearchStrategy, make_strategy, restore_strategy
from memo.seeds import discover_seeds, reduced_seed
from memo.store import CampaignStore, MutantRecord

Submit = Callable[[int, str, ModelIR], None]
"""Hands a stored mutant (its id, its ident, its IR) to execution."""


@dataclass
class PoolEntry:
    """The model currently held by a slot of the seed pool, and where it came from."""

    ir: ModelIR
    ident: str   # "seed:<name>" or "m<iteration>"
    seed: str    # the seed this lineage started from

    def to_json(self) -> dict[str, str]:
        return {"ir": self.ir.dumps(), "ident": self.ident, "seed": self.seed}

    @classmethod
    def from_json(cls, data: dict[str, str]) -> PoolEntry:
        return cls(ModelIR.loads(data["ir"]), data["ident"], data["seed"])


SeedPool = dict[str, PoolEntry]
"""Slot name -> its current model, in the seeds' order (a seed's own run is numbered by its position)."""


class GenerationLoop:
    """The campaign state (seed pool, iteration, counters, findings, search strategy, coverage) and the
    steps that advance it. ``counters`` and ``findings`` are updated in place by the pipeline too: they are
    saved with every mutant."""

    def __init__(self, config: CampaignConfig, store: CampaignStore) -> None:
        self.config = config
        self.store = store
        self.seed_pool: SeedPool = {}
        self.iteration = 0
        self.elapsed_before = 0.0
        self.started = time.monotonic()
        self.counters = {"generated": 0, "valid": 0, "diverse": 0, "executed": 0, "internal_errors": 0}
        self.findings: dict[str, int] = {}
        self.pending_seed_runs: list[str] = []
        self.strategy: SearchStrategy
        self.tracker: CoverageTracker

    # ------------------------------------------------------------------ set-up
    def initialize(self) -> None:
        """A new campaign: check the operators, load the seeds, store the configuration and the seeds."""
        operators = self.config.operators or [*MEMO_OPERATORS, *EXTRA_OPERATORS]
        unknown = [op for op in operators if op not in OPERATORS]
        if unknown:
            raise UsageError(f"unknown mutation operator(s) {', '.join(unknown)} (choose from {', '.join(OPERATORS)})")
        self.config.operators = list(operators)
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
        """A resumed campaign: the state saved with its last stored mutant."""
        saved = self.store.load_state()
        if saved is None:
            raise UsageError(f"campaign {self.store.directory} has no saved state to resume")
        self.iteration, data = saved
        self.iteration += 1
        self.strategy = restore_strategy(data["search"])
        self.tracker = CoverageTracker.from_json(data["coverage"])
        self.seed_pool = {slot: PoolEntry.from_json(entry) for slot, entry in data["pool"].items()}
        self.elapsed_before = float(data.get("elapsed", 0.0))
        self.counters.update(data.get("counters", {}))
        self.findings = dict(data.get("findings", {}))
        self.pending_seed_runs = list(data.get("pending_seed_runs", []))

    def _state(self) -> dict[str, Any]:
        return {"search": self.strategy.to_json(), "coverage": self.tracker.to_json(),
                "pool": {slot: entry.to_json() for slot, entry in self.seed_pool.items()},
                "elapsed": self.elapsed(), "counters": self.counters, "findings": self.findings,
                "pending_seed_runs": self.pending_seed_runs}

    # ------------------------------------------------------------------ the clock
    def start_clock(self) -> None:
        self.started = time.monotonic()

    def elapsed(self) -> float:
        """Fuzzing seconds, the runs before a resume included."""
        return self.elapsed_before + (time.monotonic() - self.started)

    # ------------------------------------------------------------------ steps
    def advance(self, submit: Submit) -> None:
        """One step: the next seed still to run on its own, else one mutation."""
        if self.pending_seed_runs:
            self._run_seed(self.pending_seed_runs[0], submit)
        else:
            self._step(submit)

    def _step(self, submit: Submit) -> None:
        iteration = self.iteration
        rng = random.Random(f"{self.config.seed}/{iteration}")
        key = self.strategy.select(rng)
        slot, operator = key
        parent = self.seed_pool[slot]
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
                    self.seed_pool[slot] = PoolEntry(ir=mutant.ir, ident=f"m{iteration}", seed=parent.seed)
        self.strategy.feedback(key, new_items)
        record.gen_seconds = time.perf_counter() - began
        self.counters["generated"] += 1
        self.iteration += 1
        with self.store.transaction():
            mutant_id = self.store.add_mutant(record)
            self.store.save_state(iteration, self._state())
        if self.config.execute and mutant is not None and (record.diverse or self.config.execute_all):
            submit(mutant_id, f"m{iteration}", mutant.ir)

    def _may_be_parent(self, ir: ModelIR) -> bool:
        """UpdateSeeds (Algorithm 2, lines 8-11) with a size bound: lineages would otherwise grow without end
        (median 18 to 61 layers within 30 minutes), and every backend's cost grows with them."""
        bound = self.config.max_parent_layers
        return bound <= 0 or len(ir.layers) <= bound

    def _run_seed(self, name: str, submit: Submit) -> None:
        """Execute a (reduced) seed itself once, before mutating: seeds are test inputs too."""
        entry = self.seed_pool[name]
        record = MutantRecord(iteration=-1 - list(self.seed_pool).index(name), slot=name, operator="seed",
                              parent=entry.ident, seed=name, lineage={"changes": []}, ir_json=entry.ir.dumps(),
                              valid=True)
        self.pending_seed_runs.pop(0)
        with self.store.transaction():
            mutant_id = self.store.add_mutant(record)
            self.store.save_state(self.iteration - 1, self._state())
        submit(mutant_id, f"seed-{name}", entry.ir)
