"""The pair denominator is reachable: a random sample of the pairs ``pair_possible`` declares can be built
as real edges (A's Keras output shape is accepted by B's sampler)."""
from __future__ import annotations

import random

from memo.errors import InvalidModelError
from memo.layers import CATALOGUE, possible_pairs
from memo.layers.probe import single_layer_ir

PAIRS_CHECKED = 150
ATTEMPTS = 40


def _realize(a: str, b: str, rng: random.Random) -> bool:
    from memo.model.build import build_keras_model

    spec_a, spec_b = CATALOGUE[a], CATALOGUE[b]
    for _ in range(ATTEMPTS):
        shapes = spec_a.random_inputs(rng)
        config = spec_a.sample(rng, shapes)
        try:
            model = build_keras_model(single_layer_ir(spec_a, config, shapes))
        except InvalidModelError:
            continue
        out = tuple(model.outputs[0].shape)
        if spec_b.accepts([out] * spec_b.arity[0]):
            return True
    return False


def test_declared_pairs_can_be_realized():
    rng = random.Random(2024)
    pairs = sorted(possible_pairs())
    sample = rng.sample(pairs, PAIRS_CHECKED)
    missed = [pair for pair in sample if not _realize(*pair, rng)]
    assert len(missed) <= PAIRS_CHECKED * 0.02, f"pairs never realized: {missed}"
