"""Metropolis-Hastings seed selection (MEMO Algorithm 2, Eq. 1-4)."""
from __future__ import annotations

import random

from memo.search.base import SearchState, SearchStrategy, SeedKey

MIN_P, MAX_P = 0.01, 0.5


def geometric_p(n_seeds: int) -> float:
    """The geometric distribution's parameter for ``n_seeds`` seeds.

    MEMO cites a recommended range of [0.042, 0.056] for 70 seeds and uses 0.05, i.e. about 3.5 / n:
    the expected rank of an accepted seed, 1/p, is then a fixed fraction (about 1/3.5) of the pool.
    We apply that rule to any pool size, clipped to [0.01, 0.5] so tiny or huge pools stay sensible.
    """
    return min(MAX_P, max(MIN_P, 3.5 / max(1, n_seeds)))


class MetropolisHastings(SearchStrategy):
    """Sort seeds by fitness (Eq. 3); accept a uniformly proposed seed with probability min(1, (1-p)^(k2-k1))."""

    name = "mh"

    def __init__(self, state: SearchState, p: float | None = None) -> None:
        super().__init__(state)
        self.p = p if p is not None else geometric_p(len(state.seeds))

    def fitness(self, key: SeedKey) -> float:
        """Eq. 3: (score(m) + score(op)) / (times selected + 1)."""
        slot, op = key
        return (self.state.score_model(slot) + self.state.score_operator(op)) / (self.state.seeds[key].selected + 1)

    def ranking(self) -> list[SeedKey]:
        """Seeds from the highest fitness to the lowest; ties keep the pool's order (deterministic)."""
        keys = list(self.state.seeds)
        return sorted(keys, key=lambda k: -self.fitness(k))

    def choose(self, rng: random.Random) -> SeedKey:
        ranked = self.ranking()
        if self.state.last is None:
            return ranked[0] if self.fitness(ranked[0]) > 0 else rng.choice(ranked)
        k1 = ranked.index(self.state.last)
        while True:
            candidate = rng.randrange(len(ranked))
            if rng.random() < (1.0 - self.p) ** (candidate - k1):  # >= 1 when the candidate ranks higher
                return ranked[candidate]
