"""Execution feeds the seed pool, with a fixed lag so that a campaign stays deterministic.

A diverse mutant is a parent candidate, but it replaces its slot's model only once its execution is judged:

* the reference library must have run it (a model no library can run only breeds more such models);
* it must not inject special values on purpose (the NaN operator's ``Rescaling(1e30)`` would otherwise be
  inherited, and its descendants compute on overflowed values);
* it must not show a bug already known from another model, unless its parent showed that bug too (its
  descendants would re-find the same bug: nothing gained for that library), nor a feature a converter is
  known to decline (tf2onnx's Erfc from exact GELU: every descendant would be unconvertible, and the five
  engines behind tf2onnx would never run on that lineage). Seeds run before the first mutation, so that
  what a seed shows counts as its lineage's inheritance.

Coverage counts a model once the reference ran it. Until then its items are *claimed*: the generation loop
measures a new mutant's delta against what was executed plus what is claimed, so that two models in flight
do not both count as new for one item, and a claim is released when its model turns out not to run.

The outcome of a mutant is applied once *lag* more mutants have been submitted for execution after it,
exactly (the loop waits for it if needed), never earlier, so that the same ``--seed`` and ``--jobs`` give the
same campaign however fast the libraries are, and ``--resume`` continues it: what waits for its outcome is
saved with the campaign state. The lag counts submissions, not iterations: once coverage saturates, most
mutants add nothing and are not executed, and a lag in iterations leaves the pipelines idle while the loop
generates (docs/benchmarks.md).
"""
from __future__ import annotations

from dataclasses import dataclass, field

from memo.coverage import Coverage, union_all
from memo.json_types import JsonObject


SEED_IDENT = "seed-"  # how a seed's own execution is named (``seed-NAME``), a mutant's being ``mITERATION``


LIBRARY_SHARE_EVERY = 4  # with library feedback, every 4th valid mutant without model-level coverage runs too
# Without it, every 16th: at saturation few mutants add model-level coverage (campaign long150: 75 % of the first
# thousand valid mutants, 0.3 % of the last 5,000), and generation alone searched ever longer for the next model to
# run (2,300 mutants a minute after two hours, a full core, while the workers starved). The bound keeps the search
# at most 16 generated mutants (about 1 s of memo's CPU) per model run, a tenth of what a model costs the workers.
SATURATION_SHARE_EVERY = 16


def library_traced(submitted: int, every: int) -> bool:
    """Whether the ``submitted``-th executed mutant (counting from 1, the loop's saved counter: the same mutants
    every time) is traced for library coverage, one in ``every``."""
    return every <= 1 or submitted % every == 0


def runs_anyway(valid_not_diverse: int, library_feedback: bool) -> bool:
    """Whether a valid, not diverse mutant (the ``valid_not_diverse``-th, counting from 1) is executed anyway: under
    ``--library-coverage feedback`` one in :data:`LIBRARY_SHARE_EVERY` (model-level criteria cannot see what it
    reaches in the libraries' code), otherwise one in :data:`SATURATION_SHARE_EVERY`."""
    return valid_not_diverse % (LIBRARY_SHARE_EVERY if library_feedback else SATURATION_SHARE_EVERY) == 0


def feedback_lag(jobs: int) -> int:
    """Submissions between submitting a mutant and using its execution: enough to keep ``jobs`` pipelines busy
    while the loop waits for the oldest outcome. One slow model (a 30 s timeout and its worker's restart, a
    60 s conversion) must not stop generation: with a lag of a few per pipeline the loop catches up with it
    within seconds and every pipeline goes idle (docs/benchmarks.md)."""
    return 8 * max(1, jobs)


@dataclass(frozen=True)
class Outcome:
    """What generation learns from one judged execution."""

    reference_ran: bool
    signatures: frozenset[str] = frozenset()  # bug signatures the model showed, and features converters declined
    known: frozenset[str] = frozenset()       # those an earlier model had shown already
    library_new: int = 0  # --library-coverage feedback: library lines no model whose outcome came earlier reached


NOT_RUN = Outcome(reference_ran=False)


@dataclass
class Awaiting:
    """A submitted mutant whose outcome generation has not used yet."""

    mutant_id: int
    iteration: int
    due: int                 # applied once this many mutants have been submitted for execution
    slot: str
    ident: str
    seed: str
    ir_json: str
    coverage: Coverage       # everything the model covers (claimed until its outcome)
    candidate: bool          # diverse, small enough and without injected values: may become a parent
    parent_signatures: frozenset[str] = frozenset()
    seed_run: bool = False   # a seed's own execution: its outcome gives the seed's bug signatures
    operator: str = ""       # the operator that made it (with ``slot``, the search's key for library feedback)
    diverse: bool = True     # it added model-level coverage
    library_candidate: bool = False  # may become a parent if it reaches new library lines (``--library-coverage
    #                                  feedback``: small enough, without injected values, though not diverse)

    def to_json(self) -> JsonObject:
        return {"mutant_id": self.mutant_id, "iteration": self.iteration, "due": self.due, "slot": self.slot,
                "ident": self.ident, "seed": self.seed, "ir": self.ir_json, "coverage": self.coverage.to_json(),
                "candidate": self.candidate, "parent_signatures": sorted(self.parent_signatures),
                "seed_run": self.seed_run, "operator": self.operator, "diverse": self.diverse,
                "library_candidate": self.library_candidate}

    @classmethod
    def from_json(cls, data: JsonObject) -> "Awaiting":
        return cls(mutant_id=int(data["mutant_id"]), iteration=int(data["iteration"]), due=int(data["due"]),
                   slot=data["slot"], ident=data["ident"], seed=data["seed"], ir_json=data["ir"],
                   coverage=Coverage.from_json(data["coverage"]), candidate=bool(data["candidate"]),
                   parent_signatures=frozenset(data.get("parent_signatures", ())),
                   seed_run=bool(data.get("seed_run", False)), operator=data.get("operator", ""),
                   diverse=bool(data.get("diverse", True)),
                   library_candidate=bool(data.get("library_candidate", False)))

    def becomes_parent(self, outcome: Outcome) -> bool:
        """Whether its outcome lets the model replace its slot's (see the module docstring): a model-level candidate,
        or, with library feedback, one that reached library lines no earlier model reached."""
        eligible = self.candidate or (self.library_candidate and outcome.library_new > 0)
        return eligible and outcome.reference_ran and not (outcome.known - self.parent_signatures)


@dataclass
class AwaitingQueue:
    """The mutants whose outcome is still to be applied, oldest first."""

    items: list[Awaiting] = field(default_factory=list)

    def add(self, item: Awaiting) -> None:
        self.items.append(item)

    def due(self, submitted: int) -> list[Awaiting]:
        """Those whose outcome must be applied once ``submitted`` mutants were submitted, oldest first."""
        return [item for item in self.items if item.due <= submitted]

    def remove(self, item: Awaiting) -> None:
        self.items.remove(item)

    def claimed(self) -> Coverage:
        """Everything the models in flight cover."""
        return union_all(item.coverage for item in self.items)

    def __len__(self) -> int:
        return len(self.items)

    def to_json(self) -> list[JsonObject]:
        return [item.to_json() for item in self.items]

    @classmethod
    def from_json(cls, data: list[JsonObject] | None) -> "AwaitingQueue":
        return cls([Awaiting.from_json(item) for item in data or ()])
