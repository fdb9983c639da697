"""Regularization layers (identities or noise-free at inference, but each is its own API to convert)."""
from __future__ import annotations

from memo.layers import values as v
from memo.layers.families.common import entry
from memo.layers.spec import Draw, LayerSpec
from memo.model.ir import LayerConfig

ANY_RANK = (2, 3, 4, 5)


def rate_layer(name: str, ranks: tuple[int, ...], param: str = "rate", scheme=v.RATE, high: float = 0.9,
               extra: tuple = ()) -> LayerSpec:
    params = [v.shape(param, scheme, v.number), *extra]

    def sample(d: Draw, shapes) -> LayerConfig:
        config = {param: d.real(param, 0.0, high)}
        for space in extra:
            config[space.name] = d.choice(space.name)
        return config

    return entry(name, "regularization", ranks, params, sample)


def activity_regularization() -> LayerSpec:
    params = [v.shape("l1", v.SCALE, v.number), v.shape("l2", v.SCALE, v.number)]
    return entry("ActivityRegularization", "regularization", ANY_RANK, params,
                 lambda d, shapes: {"l1": d.real("l1", 0.0, 1.0), "l2": d.real("l2", 0.0, 1.0)})


def build() -> list[LayerSpec]:
    spatial = [rate_layer(f"SpatialDropout{n}D", (n + 2,),
                          extra=(v.data_format(),) if n > 1 else ()) for n in (1, 2, 3)]
    return [rate_layer("Dropout", ANY_RANK), rate_layer("GaussianDropout", ANY_RANK),
            rate_layer("AlphaDropout", ANY_RANK), rate_layer("GaussianNoise", ANY_RANK, "stddev", v.SCALE, 1.0),
            *spatial, activity_regularization()]
