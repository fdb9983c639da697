""""Prefer what coverage has not seen": the tiers every operator ranks its candidates by.

Tier 0: new to the whole campaign (not in the coverage tracker); for layer types, tier 1: rare (in few of
the executed models, :data:`RARE_SHARE`, so that rare types do not stay rare once every type is covered); then already covered
but absent from this seed (MEMO's fallback once layer-type coverage saturates); then everything else. Operators draw
from the lowest non-empty tier, or walk candidates in tier order (shuffled within a tier) and take the
first one that applies.
"""
from __future__ import annotations

import random
from typing import Callable, Hashable, Iterable, Mapping, Sequence, TypeVar

from memo.coverage import Coverage, CoverageTracker, declared, model_coverage
from memo.layers.spec import Shape
from memo.model.ir import ModelIR

T = TypeVar("T")

NEW, RARE, NOT_IN_SEED, SEEN = 0, 1, 2, 3
# A layer type in at most this share of the executed models is "rare" (twice the 1 % every type should reach).
RARE_SHARE = 0.02


class CoverageView:
    """What the campaign has covered (from its tracker) and what this seed covers, per coverage criterion."""

    def __init__(self, tracker: CoverageTracker | None, seed: ModelIR,
                 shapes: Mapping[str, Shape] | None = None) -> None:
        self.campaign: Coverage = tracker.covered if tracker is not None else Coverage()
        self.seed: Coverage = model_coverage(seed, shapes)
        self.rare_types: frozenset[str] = tracker.rare_types(RARE_SHARE) if tracker is not None else frozenset()
        # inference-identity types in few executed models: they cannot make a mutant diverse, so the directed
        # operator adds one beside a headline target (they still exercise converters and exporters)
        self.rare_identities: frozenset[str] = (tracker.rare_types(RARE_SHARE, identities=True)
                                                if tracker is not None else frozenset())
        # uncovered items that models the reference could not run kept holding: not aimed at any more
        self.given_up: Coverage = tracker.given_up() if tracker is not None else Coverage()
        self._uncovered_pairs: frozenset[tuple[str, str]] | None = None

    @property
    def uncovered_pairs(self) -> frozenset[tuple[str, str]]:
        """Reachable headline layer pairs the campaign has not covered nor given up (computed once per view)."""
        if self._uncovered_pairs is None:
            self._uncovered_pairs = declared().headline().pairs - self.campaign.pairs - self.given_up.pairs
        return self._uncovered_pairs

    def tier(self, criterion: str, key: Hashable) -> int:
        """``criterion`` is a :data:`memo.coverage.CRITERIA` name (``types``, ``pairs``, ``params``, ``dtypes`` ...)."""
        if key not in self.campaign[criterion]:
            return NEW
        return NOT_IN_SEED if key not in self.seed[criterion] else SEEN

    def type_tier(self, class_name: str) -> int:
        tier = self.tier("types", class_name)
        return RARE if tier != NEW and class_name in self.rare_types else tier

    def pair_tier(self, producer: str, consumer: str) -> int:
        return self.tier("pairs", (producer, consumer))

    def param_tier(self, class_name: str, param: str, value: Hashable) -> int:
        return self.tier("params", (class_name, param, value))


Tier = int | tuple[int, ...]


def by_tier(rng: random.Random, items: Iterable[T], tier: Callable[[T], Tier]) -> list[T]:
    """``items`` ordered by tier (lowest first; a tuple ranks by its first element, then the next ...),
    shuffled within each tier (deterministic for a given ``rng``)."""
    tiers: dict[Tier, list[T]] = {}
    for item in items:
        tiers.setdefault(tier(item), []).append(item)
    out: list[T] = []
    for level in sorted(tiers):
        group = tiers[level]
        rng.shuffle(group)
        out.extend(group)
    return out


def pick(rng: random.Random, items: Sequence[T], tier: Callable[[T], int]) -> T | None:
    """One item drawn uniformly from the lowest non-empty tier (None when ``items`` is empty)."""
    if not items:
        return None
    best = min(tier(item) for item in items)
    return rng.choice([item for item in items if tier(item) == best])
