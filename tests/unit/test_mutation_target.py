"""The directed operator Target: it realizes the one uncovered item it is aimed at."""
from __future__ import annotations

import random

from memo.coverage import Coverage, CoverageTracker, model_coverage
from memo.layers import CATALOGUE, possible_pairs
from memo.mutation import mutate
from tests.unit.test_mutation import lenet

EVERY_PARAM = frozenset((name, space.name, value) for name, spec in CATALOGUE.items()
                        for space in spec.params for value in space.values)


def _covering_all_but(*, pairs: set = frozenset(), params: set = frozenset(), rare: str | None = None,
                      models: int = 1) -> CoverageTracker:
    tracker = CoverageTracker()
    every = Coverage(types=set(CATALOGUE) - ({rare} if rare else set()), pairs=possible_pairs() - set(pairs),
                     params=EVERY_PARAM - set(params))
    for _ in range(models):
        tracker.add(every)
    if rare:
        tracker.add(Coverage(types={rare}))
    return tracker


def test_target_realizes_an_uncovered_pair_after_a_layer_of_its_first_class() -> None:
    pair = ("MaxPooling2D", "LayerNormalization")
    for seed in range(3):
        mutant = mutate(lenet(), "Target", random.Random(seed), _covering_all_but(pairs={pair}))
        assert pair in model_coverage(mutant.ir, mutant.shapes).pairs


def test_target_sets_an_uncovered_parameter_value() -> None:
    item = ("Conv2D", "padding", "same")
    mutant = mutate(lenet(), "Target", random.Random(0), _covering_all_but(params={item}))
    assert item in model_coverage(mutant.ir, mutant.shapes).params


def test_target_inserts_a_rarely_executed_layer_type() -> None:
    tracker = _covering_all_but(rare="LayerNormalization", models=60)
    assert tracker.rare_types(0.02) == {"LayerNormalization"}
    mutant = mutate(lenet(), "Target", random.Random(3), tracker)
    assert "LayerNormalization" in {layer.class_name for layer in mutant.ir}


def test_target_is_deterministic() -> None:
    tracker = _covering_all_but(pairs={("Dense", "LayerNormalization"), ("Conv2D", "Dropout")},
                                params={("Dense", "activation", "gelu")})
    first = mutate(lenet(), "Target", random.Random(5), tracker).ir.dumps()
    assert first == mutate(lenet(), "Target", random.Random(5), tracker).ir.dumps()
