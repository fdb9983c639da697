"""Monte-Carlo tree search over seeds with UCT (GraphFuzz's selection, adapted to <model, operator> seeds).

The tree has two levels: the root's children are model slots, a slot's children are operators. A
selection descends by UCT, ``Q/N + e * sqrt(ln N_parent / N)`` with GraphFuzz's e = 1/sqrt(2), trying
every unvisited child first. Reward (back-propagated to both levels) is
``1 - 1/(1 + new coverage items)``: 0 when a mutant adds nothing, 1/2 for one new layer type, pair or
parameter value, approaching 1 for many. Ties break by pool order, so runs are deterministic.
"""
from __future__ import annotations

import math
import random

from memo.search.base import SearchStrategy, SeedKey

EXPLORATION = 1.0 / math.sqrt(2.0)


def uct(total_reward: float, visits: int, parent_visits: int, exploration: float = EXPLORATION) -> float:
    if visits == 0:
        return math.inf
    return total_reward / visits + exploration * math.sqrt(math.log(max(1, parent_visits)) / visits)


class MonteCarloTreeSearch(SearchStrategy):
    name = "mcts"

    def _slot_totals(self, slot: str) -> tuple[float, int]:
        stats = [self.state.seeds[(slot, op)] for op in self.state.operators]
        return sum(s.reward for s in stats), sum(s.selected for s in stats)

    def choose(self, rng: random.Random) -> SeedKey:
        root_visits = sum(s.selected for s in self.state.seeds.values())
        slot = max(self.state.slots, key=lambda sl: uct(*self._slot_totals(sl), root_visits))
        _, slot_visits = self._slot_totals(slot)
        op = max(self.state.operators,
                 key=lambda o: uct(self.state.seeds[(slot, o)].reward, self.state.seeds[(slot, o)].selected,
                                   slot_visits))
        return slot, op
