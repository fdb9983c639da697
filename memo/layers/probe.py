"""Build one catalogue layer on given input shapes: the check behind the catalogue's validity claim.

``single_layer_ir`` is pure; ``build_rate`` imports Keras (numpy backend) through :mod:`memo.model.build`.
"""
from __future__ import annotations

import random

from memo.errors import InvalidModelError
from memo.layers.spec import LayerSpec, Shape
from memo.model.build import build_keras_model
from memo.model.ir import Layer, ModelIR


def input_dtype_for(spec: LayerSpec) -> str:
    return "float32" if "float32" in spec.dtypes else sorted(spec.dtypes)[0]


def single_layer_ir(spec: LayerSpec, config: dict, shapes: list[Shape], name: str = "probe") -> ModelIR:
    """Input(s) of ``shapes`` -> one ``spec`` layer with ``config``."""
    dtype = input_dtype_for(spec)
    inputs = [Layer(name=f"input_{i}", class_name="InputLayer",
                    config={"batch_shape": list(shape), "dtype": dtype}) for i, shape in enumerate(shapes)]
    style = spec.call_style if len(shapes) > 1 else "single"
    node = Layer(name=name, class_name=spec.name, config=config, inputs=[i.name for i in inputs],
                 call_style=style, module=spec.module)
    return ModelIR(layers=[*inputs, node], outputs=[name])


def build_rate(spec: LayerSpec, samples: int, seed: int) -> tuple[float, list[str]]:
    """Share of ``samples`` random (shapes, sampled config) that Keras builds with a declared output rank,
    and the first few failures."""
    rng = random.Random(seed)
    ok, errors = 0, []
    for _ in range(samples):
        shapes = spec.random_inputs(rng)
        config = spec.sample(rng, shapes)
        if config is None:
            errors.append(f"no config for {shapes}")
            continue
        try:
            model = build_keras_model(single_layer_ir(spec, config, shapes))
        except InvalidModelError as exc:
            errors.append(f"{shapes} {config}: {exc}")
            continue
        out_rank = len(model.outputs[0].shape)
        if out_rank not in spec.output_ranks(len(shapes[0])):
            errors.append(f"{shapes} {config}: output rank {out_rank} is not declared")
            continue
        ok += 1
    return ok / samples, errors[:3]
