"""The seed-selection interface shared by every search strategy.

A *seed* is a pair <model slot, operator> (MEMO Section 3.4). A slot is a position in the model pool;
the model in a slot is replaced by its mutant whenever that mutant is diverse (Algorithm 2, lines
8-11, ``UpdateSeeds``), so a slot's identity, and the statistics attached to it, survive replacement.
Strategies only see slot ids and operator names; the campaign owns the models themselves.
"""
from __future__ import annotations

import random
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import ClassVar

from memo.json_types import JsonObject

SeedKey = tuple[str, str]  # (slot id, operator name)


@dataclass
class SeedStats:
    """What the search knows about one seed <slot, operator>."""

    selected: int = 0   # times this seed was chosen
    diverse: int = 0    # diverse mutants it produced
    reward: float = 0.0  # summed reward (used by MCTS)


@dataclass
class SearchState:
    """Counters shared by all strategies; JSON round-trips for resume."""

    slots: list[str]
    operators: list[str]
    seeds: dict[SeedKey, SeedStats] = field(default_factory=dict)
    last: SeedKey | None = None

    def __post_init__(self) -> None:
        for slot in self.slots:
            for op in self.operators:
                self.seeds.setdefault((slot, op), SeedStats())

    def score_model(self, slot: str) -> int:
        """score(m) of Eq. 2: diverse mutants generated from the model in this slot."""
        return sum(self.seeds[(slot, op)].diverse for op in self.operators)

    def score_operator(self, op: str) -> int:
        """score(op) of Eq. 2: diverse mutants generated with this operator."""
        return sum(self.seeds[(slot, op)].diverse for slot in self.slots)

    def to_json(self) -> JsonObject:
        return {"slots": self.slots, "operators": self.operators, "last": list(self.last) if self.last else None,
                "seeds": [[slot, op, s.selected, s.diverse, s.reward] for (slot, op), s in self.seeds.items()]}

    @classmethod
    def from_json(cls, data: JsonObject) -> "SearchState":
        state = cls(slots=list(data["slots"]), operators=list(data["operators"]))
        for slot, op, selected, diverse, reward in data["seeds"]:
            state.seeds[(slot, op)] = SeedStats(selected, diverse, reward)
        state.last = tuple(data["last"]) if data.get("last") else None  # type: ignore[assignment]
        return state


class SearchStrategy(ABC):
    """Chooses the next seed and learns from what its mutant achieved."""

    name: ClassVar[str]

    def __init__(self, state: SearchState) -> None:
        self.state = state
        self.chosen: SeedKey | None = None  # the strategy's own choice in the last select (before a directed override)

    @abstractmethod
    def choose(self, rng: random.Random) -> SeedKey:
        """Pick the next seed; must not modify the statistics (``select`` does)."""

    def select(self, rng: random.Random, directed: tuple[str, float] | None = None) -> SeedKey:
        """The next seed, counted as selected. ``directed`` = (operator, share): with probability ``share`` the
        model of the chosen seed is mutated by that operator instead (the key becomes <slot, operator>, so its
        statistics are that operator's), as long as the campaign uses it. The strategy still chooses the model."""
        key = self.chosen = self.choose(rng)
        if directed is not None and directed[1] > 0 and directed[0] in self.state.operators:
            if rng.random() < directed[1]:
                key = (key[0], directed[0])
        self.state.seeds[key].selected += 1
        self.state.last = key
        return key

    def fall_back(self) -> SeedKey:
        """The directed operator could not mutate the model (nothing uncovered it can realize there: at saturation
        it failed on every model, half the iterations): the seed the strategy itself chose is used instead,
        counted as selected too. The caller has fed the directed seed's failure back."""
        key = self.chosen
        self.state.seeds[key].selected += 1
        self.state.last = key
        return key

    def feedback(self, key: SeedKey, new_coverage: int) -> None:
        """Record the outcome of a mutant of ``key``: ``new_coverage`` = coverage items it added (0: not diverse)."""
        stats = self.state.seeds[key]
        if new_coverage > 0:
            stats.diverse += 1
        stats.reward += reward(new_coverage)

    def library_feedback(self, key: SeedKey, new_lines: int, *, diverse: bool) -> None:
        """A mutant of ``key`` reached ``new_lines`` lines of the libraries' code no earlier model reached (learnt
        after its execution, ``--library-coverage feedback``): it counts as diverse (once: not again when it added
        model-level coverage, ``diverse``), and its reward grows as for as many new coverage items."""
        if new_lines <= 0:
            return
        stats = self.state.seeds[key]
        if not diverse:
            stats.diverse += 1
        stats.reward += reward(new_lines)

    def to_json(self) -> JsonObject:
        return {"strategy": self.name, "state": self.state.to_json()}


def reward(new_coverage: int) -> float:
    """Reward in [0, 1): 0 for nothing new, 1/2 for one new coverage item, approaching 1 for many."""
    return 1.0 - 1.0 / (1.0 + max(0, new_coverage))
