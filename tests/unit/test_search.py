"""Seed selection: MEMO's Eq. 2-4 and Algorithm 2, the random baseline, and UCT."""
from __future__ import annotations

import json
import math
import random
from collections import Counter

import pytest

from memo.errors import UsageError
from memo.search import geometric_p, make_strategy, restore_strategy, reward
from memo.search.mcts import EXPLORATION, uct

OPS = ["NLA", "LResh", "LMerg", "LConn", "CShape", "CMode", "NaN"]
SLOTS = [f"seed{i}" for i in range(10)]


def test_geometric_p_matches_the_paper_for_70_seeds() -> None:
    assert geometric_p(70) == pytest.approx(0.05)
    assert 0.042 <= geometric_p(70) <= 0.056
    assert geometric_p(1) == 0.5 and geometric_p(10_000) == 0.01


def test_fitness_is_eq3() -> None:
    mh = make_strategy("mh", SLOTS, OPS)
    state = mh.state
    state.seeds[("seed1", "NLA")].diverse = 3
    state.seeds[("seed1", "CMode")].diverse = 2
    state.seeds[("seed4", "NLA")].diverse = 1
    state.seeds[("seed1", "NLA")].selected = 4
    # score(seed1) = 5, score(NLA) = 4, selected 4 -> 9 / 5
    assert mh.fitness(("seed1", "NLA")) == pytest.approx(9 / 5)
    assert mh.fitness(("seed4", "CMode")) == pytest.approx((1 + 2) / 1)
    assert mh.ranking()[0] == ("seed1", "CMode")  # (5 + 2) / 1 = 7 is the best


def test_mh_prefers_fit_seeds_but_explores() -> None:
    mh = make_strategy("mh", SLOTS, OPS)
    mh.state.seeds[("seed3", "LConn")].diverse = 20
    rng = random.Random(0)
    picks = Counter()
    for _ in range(2000):
        key = mh.choose(rng)
        picks[key] += 1
        mh.state.last = key
    top_slot = sum(n for (slot, _), n in picks.items() if slot == "seed3")
    assert top_slot > 2000 / len(SLOTS) * 1.5, "the slot with diverse mutants is chosen far above uniform"
    assert len(picks) > 30, "lower-ranked seeds are still accepted sometimes"


def test_mh_acceptance_probability_is_eq4() -> None:
    mh = make_strategy("mh", ["a", "b"], ["x"])
    mh.p = 0.5
    mh.state.seeds[("a", "x")].diverse = 1  # a ranks first
    mh.state.last = ("a", "x")
    rng = random.Random(1)
    picks = Counter(mh.choose(rng) for _ in range(4000))
    # proposal uniform; accepting b costs (1-p)^(1-0) = 0.5: stationary share of b is 1/3
    assert picks[("b", "x")] / 4000 == pytest.approx(1 / 3, abs=0.03)


def test_selection_and_feedback_update_scores_and_round_trip() -> None:
    for name in ("mh", "random", "mcts"):
        strategy = make_strategy(name, SLOTS, OPS)
        rng = random.Random(5)
        for i in range(50):
            key = strategy.select(rng)
            strategy.feedback(key, new_coverage=i % 3)
        total = sum(s.selected for s in strategy.state.seeds.values())
        diverse = sum(s.diverse for s in strategy.state.seeds.values())
        assert total == 50 and diverse == sum(1 for i in range(50) if i % 3)
        again = restore_strategy(json.loads(json.dumps(strategy.to_json())))
        assert again.name == name and again.state.to_json() == strategy.state.to_json()
        a, b = random.Random(9), random.Random(9)
        assert [strategy.choose(a) for _ in range(5)] == [again.choose(b) for _ in range(5)]


def test_mcts_visits_every_child_then_exploits() -> None:
    mcts = make_strategy("mcts", ["a", "b", "c"], ["x", "y"])
    rng = random.Random(0)
    first = [mcts.select(rng) for _ in range(3)]
    assert {slot for slot, _ in first} == {"a", "b", "c"}
    for _ in range(60):
        key = mcts.select(rng)
        mcts.feedback(key, 5 if key == ("b", "y") else 0)
    counts = {k: s.selected for k, s in mcts.state.seeds.items()}
    assert max(counts, key=counts.get) == ("b", "y")


def test_uct_and_reward_formulas() -> None:
    assert uct(0.0, 0, 10) == math.inf
    assert uct(2.0, 4, 16) == pytest.approx(0.5 + EXPLORATION * math.sqrt(math.log(16) / 4))
    assert reward(0) == 0 and reward(1) == 0.5 and 0.9 < reward(20) < 1


def test_unknown_strategy_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match="unknown search strategy"):
        make_strategy("genetic", SLOTS, OPS)


def test_directed_share_keeps_the_chosen_model_and_swaps_the_operator() -> None:
    ops = [*OPS, "Target"]
    for name in ("mh", "random", "mcts"):
        plain, aimed = make_strategy(name, SLOTS, ops), make_strategy(name, SLOTS, ops)
        a, b = random.Random(3), random.Random(3)
        plain_keys = [plain.select(a) for _ in range(400)]
        aimed_keys = [aimed.select(b, ("Target", 0.5)) for _ in range(400)]
        share = sum(op == "Target" for _, op in aimed_keys) / 400
        assert 0.45 < share < 0.65, "about half the mutations are directed (plus MH's own Target picks)"
        assert sum(op == "Target" for _, op in plain_keys) / 400 < 0.2
        # the statistics follow the operator that mutates: a directed step counts for <slot, Target>
        assert sum(s.selected for (_, op), s in aimed.state.seeds.items() if op == "Target") == \
            sum(op == "Target" for _, op in aimed_keys)
    # a share of 0, or an operator the campaign does not use, changes nothing (same keys, same random stream)
    for directed in (("Target", 0.0), ("Target", 1.0)):
        x, y = make_strategy("mh", SLOTS, OPS), make_strategy("mh", SLOTS, OPS)
        c, d = random.Random(4), random.Random(4)
        assert [x.select(c) for _ in range(50)] == [y.select(d, directed) for _ in range(50)]
