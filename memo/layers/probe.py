"""Build one catalogue layer on given input shapes: the check behind the catalogue's validity claim.

``single_layer_ir``, ``entry_samples`` and ``samples_ir`` are pure; ``build_rate`` imports Keras (numpy
backend) through :mod:`memo.model.build`. ``entry_samples`` draws an entry's own samples over every input rank
and dtype it declares, and ``samples_ir`` puts many of them side by side in one model, so a real library can
run a whole catalogue in a few models (tests/integration/test_catalogue_runtime.py).
"""
from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Iterator, Sequence

from memo.errors import InvalidModelError
from memo.layers.catalogue import CATALOGUE
from memo.layers.spec import LayerSpec, Shape, random_shape
from memo.model.build import build_keras_model
from memo.model.ir import Layer, ModelIR


def input_dtype_for(spec: LayerSpec) -> str:
    return "float32" if "float32" in spec.dtypes else sorted(spec.dtypes)[0]


def _branch(spec: LayerSpec, config: dict, shapes: Sequence[Shape], name: str, dtype: str,
            input_prefix: str) -> list[Layer]:
    """Input layer(s) of ``shapes`` and ``dtype`` followed by one ``spec`` layer called ``name``."""
    inputs = [Layer(name=f"{input_prefix}{i}", class_name="InputLayer",
                    config={"batch_shape": list(shape), "dtype": dtype}) for i, shape in enumerate(shapes)]
    style = spec.call_style if len(shapes) > 1 else "single"
    node = Layer(name=name, class_name=spec.name, config=config, inputs=[i.name for i in inputs],
                 call_style=style, module=spec.module)
    return [*inputs, node]


def single_layer_ir(spec: LayerSpec, config: dict, shapes: list[Shape], name: str = "probe") -> ModelIR:
    """Input(s) of ``shapes`` -> one ``spec`` layer with ``config``."""
    return ModelIR(layers=_branch(spec, config, shapes, name, input_dtype_for(spec), "input_"), outputs=[name])


@dataclass(frozen=True)
class Sample:
    """One use of a catalogue entry drawn by its own sampler: input shapes and dtype, the dtype policy the
    layer computes in (None: Keras's default, float32), and the sampled config."""

    api: str
    shapes: tuple[Shape, ...]
    dtype: str
    policy: str | None
    config: dict = field(compare=False)

    def describe(self) -> str:
        policy = f" computing in {self.policy}" if self.policy else ""
        return f"{self.api} on {list(self.shapes)} {self.dtype}{policy}: {self.config}"


def dtype_variants(spec: LayerSpec) -> list[tuple[str, str | None]]:
    """(input dtype, layer dtype policy) pairs a campaign can give ``spec``: every declared dtype as the input's
    (coverage's dtype criterion), and every declared float dtype other than float32 as the layer's own policy
    too (what the DType operator sets where :meth:`LayerSpec.computes_in` allows it)."""
    declared = sorted(spec.dtypes)
    return [(d, None) for d in declared] + [(d, d) for d in declared if d != "float32" and "float" in d]


def _inputs_of_rank(spec: LayerSpec, rng: random.Random, rank: int, tries: int) -> list[Shape] | None:
    if spec.input_maker is None:
        return [random_shape(rng, rank)] * spec.arity[0]
    for _ in range(tries):  # an entry's own input maker knows its shape rules (attention, merging, RGB images)
        shapes = spec.input_maker(rng, spec)
        if len(shapes[0]) == rank:
            return shapes
    return None


def entry_samples(spec: LayerSpec, seed: int, per_rank: int = 2, tries: int = 200) -> list[Sample]:
    """``per_rank`` samples of ``spec`` for every declared input rank and every :func:`dtype_variants` pair,
    each on fresh random input shapes (drawn like :meth:`LayerSpec.random_inputs`) with a config from the
    entry's sampler; a policy variant keeps only configs that may compute in it. Deterministic in ``seed``;
    a draw that gives no (such) config is retried, ``tries`` times at most."""
    rng = random.Random(f"{seed}/{spec.name}")
    out = []
    for rank in sorted(spec.input_ranks):
        for dtype, policy in dtype_variants(spec):
            drawn = 0
            for _ in range(tries):
                if drawn == per_rank:
                    break
                shapes = _inputs_of_rank(spec, rng, rank, tries)
                config = None if shapes is None else spec.sample(rng, shapes)
                if config is None or (policy is not None and not spec.computes_in(config, policy)):
                    continue
                if policy is not None:
                    config = {**config, "dtype": policy}
                out.append(Sample(spec.name, tuple(shapes), dtype, policy, config))
                drawn += 1
    return out


def samples_ir(samples: Sequence[Sample], name: str = "samples") -> ModelIR:
    """One model running every sample side by side: sample ``i`` reads its own inputs ``s{i}_in*`` and its
    layer ``s{i}`` is model output ``i``."""
    layers: list[Layer] = []
    for i, sample in enumerate(samples):
        layers += _branch(CATALOGUE[sample.api], sample.config, sample.shapes, f"s{i}", sample.dtype, f"s{i}_in")
    return ModelIR(layers=layers, outputs=[f"s{i}" for i in range(len(samples))], name=name)


def batches(samples: Sequence[Sample], size: int) -> Iterator[list[Sample]]:
    for start in range(0, len(samples), size):
        yield list(samples[start:start + size])


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
