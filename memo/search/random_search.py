"""Uniform seed selection: MEMO's ablation baseline MEMO_r."""
from __future__ import annotations

import random

from memo.search.base import SearchStrategy, SeedKey


class RandomSearch(SearchStrategy):
    name = "random"

    def choose(self, rng: random.Random) -> SeedKey:
        return rng.choice(list(self.state.seeds))
