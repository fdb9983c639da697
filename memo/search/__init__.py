"""Seed-selection strategies, by name: ``mh`` (default, MEMO), ``random`` (MEMO_r), ``mcts`` (GraphFuzz's UCT)."""
from __future__ import annotations

from typing import Callable, Sequence

from memo.errors import UsageError
from memo.json_types import JsonObject
from memo.search.base import SearchState, SearchStrategy, SeedKey, reward
from memo.search.mcts import MonteCarloTreeSearch
from memo.search.mh import MetropolisHastings, geometric_p
from memo.search.random_search import RandomSearch

STRATEGIES: dict[str, Callable[[SearchState], SearchStrategy]] = {
    MetropolisHastings.name: MetropolisHastings,
    RandomSearch.name: RandomSearch,
    MonteCarloTreeSearch.name: MonteCarloTreeSearch,
}
DEFAULT_STRATEGY = MetropolisHastings.name


def make_strategy(name: str, slots: Sequence[str], operators: Sequence[str]) -> SearchStrategy:
    if name not in STRATEGIES:
        raise UsageError(f"unknown search strategy {name!r} (choose from {', '.join(STRATEGIES)})")
    return STRATEGIES[name](SearchState(list(slots), list(operators)))


def restore_strategy(data: JsonObject) -> SearchStrategy:
    return STRATEGIES[data["strategy"]](SearchState.from_json(data["state"]))


__all__ = ["DEFAULT_STRATEGY", "STRATEGIES", "SearchState", "SearchStrategy", "SeedKey", "geometric_p",
           "make_strategy", "restore_strategy", "reward"]
