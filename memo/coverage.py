"""MEMO's three coverage criteria over the layer catalogue, plus secondary ones.

Primary (MEMO, Section 2.2):
* ``types``  - layer APIs used;
* ``pairs``  - ordered (A, B) over edges A -> B, counted only for pairs the catalogue declares reachable
  (some output rank of A is an input rank of B: :func:`memo.layers.pair_possible`);
* ``params`` - (layer, parameter, value or bucket) taken from the declared parameter spaces only.

Secondary: (layer, input rank), (layer, input dtype), (layer, input-size bucket) and GraphFuzz's
(layer, in-degree) and (layer, out-degree), each counted only inside its declared space.

Every denominator comes from the catalogue (:func:`denominators`), so a figure can never exceed it.
Pure Python: no Keras import. Layers outside the catalogue are ignored here and listed by
:func:`unknown_layers`.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Hashable, Iterable, Mapping

from memo.layers import CATALOGUE, possible_pairs
from memo.layers.spec import Bucket, Shape
from memo.model.ir import INPUT_CLASS, Layer, ModelIR, input_dtype, input_shape

PRIMARY = ("types", "pairs", "params")
SECONDARY = ("input_ranks", "dtypes", "shapes", "in_degrees", "out_degrees")
CRITERIA = PRIMARY + SECONDARY
DEGREE_CAP = 5  # degrees of 5 or more count as 5 (GraphFuzz bounds degrees by 5 as well)
# Buckets of the number of elements of one input tensor (batch excluded); "unknown" when a size is None.
SIZE_BUCKETS = (Bucket("1-16", 1, 16), Bucket("17-256", 17, 256), Bucket("257-4096", 257, 4096),
                Bucket("4097-65536", 4097, 65536), Bucket("65537+", 65537, None))
UNKNOWN_SIZE = "unknown"
SIZE_LABELS = tuple(b.label for b in SIZE_BUCKETS) + (UNKNOWN_SIZE,)


@dataclass(frozen=True)
class ModelCoverage:
    """What one model (or a union of models) covers, criterion by criterion."""

    types: frozenset[str] = frozenset()
    pairs: frozenset[tuple[str, str]] = frozenset()
    params: frozenset[tuple[str, str, Hashable]] = frozenset()
    input_ranks: frozenset[tuple[str, int]] = frozenset()
    dtypes: frozenset[tuple[str, str]] = frozenset()
    shapes: frozenset[tuple[str, str]] = frozenset()
    in_degrees: frozenset[tuple[str, int]] = frozenset()
    out_degrees: frozenset[tuple[str, int]] = frozenset()

    def union(self, other: "ModelCoverage") -> "ModelCoverage":
        return ModelCoverage(**{name: getattr(self, name) | getattr(other, name) for name in CRITERIA})

    def counts(self) -> dict[str, int]:
        return {name: len(getattr(self, name)) for name in CRITERIA}


@dataclass
class CoverageDelta:
    """What a model adds to a tracker (empty sets when it adds nothing)."""

    new_types: frozenset[str] = frozenset()
    new_pairs: frozenset[tuple[str, str]] = frozenset()
    new_params: frozenset[tuple[str, str, Hashable]] = frozenset()
    new_input_ranks: frozenset[tuple[str, int]] = frozenset()
    new_dtypes: frozenset[tuple[str, str]] = frozenset()
    new_shapes: frozenset[tuple[str, str]] = frozenset()
    new_in_degrees: frozenset[tuple[str, int]] = frozenset()
    new_out_degrees: frozenset[tuple[str, int]] = frozenset()

    def is_new(self) -> bool:
        """True when the model covers a new layer type, layer pair or layer parameter (MEMO's diverse(m'))."""
        return bool(self.new_types or self.new_pairs or self.new_params)

    def size(self) -> int:
        """Number of new primary items."""
        return len(self.new_types) + len(self.new_pairs) + len(self.new_params)

    def secondary_size(self) -> int:
        return sum(len(getattr(self, f"new_{name}")) for name in SECONDARY)

    def by_criterion(self) -> dict[str, int]:
        return {name: len(getattr(self, f"new_{name}")) for name in CRITERIA}


# ----------------------------------------------------------------------------- denominators
def in_degree_values(arity: tuple[int, int]) -> range:
    return range(arity[0], min(arity[1], DEGREE_CAP) + 1)


@lru_cache(maxsize=1)
def _denominators() -> tuple[tuple[str, int], ...]:
    specs = list(CATALOGUE.values())
    return (("types", len(specs)),
            ("pairs", len(possible_pairs())),
            ("params", sum(len(p.values) for s in specs for p in s.params)),
            ("input_ranks", sum(len(s.input_ranks) for s in specs)),
            ("dtypes", sum(len(s.dtypes) for s in specs)),
            ("shapes", len(specs) * len(SIZE_LABELS)),
            ("in_degrees", sum(len(in_degree_values(s.arity)) for s in specs)),
            ("out_degrees", len(specs) * (DEGREE_CAP + 1)))


def denominators() -> dict[str, int]:
    """Criterion -> number of items the catalogue declares (what 100 % means)."""
    return dict(_denominators())


# ----------------------------------------------------------------------------- one model
def unknown_layers(ir: ModelIR) -> list[str]:
    """Class names in ``ir`` that the catalogue does not describe (ignored by coverage)."""
    return sorted({layer.class_name for layer in ir.body if layer.class_name not in CATALOGUE})


def size_label(shape: Shape) -> str:
    count = 1
    for dim in shape[1:]:
        if dim is None:
            return UNKNOWN_SIZE
        count *= int(dim)
    for bucket in SIZE_BUCKETS:
        if bucket.holds(count):
            return bucket.label
    return UNKNOWN_SIZE  # zero-sized tensors


def _policy_dtype(layer: Layer) -> str:
    """The dtype a layer's output has: its declared output dtype, else its compute dtype policy."""
    spec = CATALOGUE.get(layer.class_name)
    if spec is not None and spec.output_dtype:
        return spec.output_dtype
    policy = layer.config.get("dtype", "float32")
    if isinstance(policy, dict):
        policy = policy.get("config", {}).get("name", "float32")
    policy = str(policy or "float32")
    return policy.split("_", 1)[1] if policy.startswith("mixed_") else policy


def model_coverage(ir: ModelIR, shapes: Mapping[str, Shape] | None = None) -> ModelCoverage:
    """Coverage of one model. ``shapes`` (node -> output shape, batch first) enables the rank/size criteria;
    without it they are counted only for layers fed directly by model inputs."""
    by_name = {layer.name: layer for layer in ir.layers}
    out_degree: dict[str, int] = {}
    for layer in ir.layers:
        for src in layer.inputs:
            out_degree[src] = out_degree.get(src, 0) + 1
    reachable = possible_pairs()
    types, pairs, params = set(), set(), set()
    ranks, dtypes, sizes, ins, outs = set(), set(), set(), set(), set()
    for layer in ir.layers:
        spec = CATALOGUE.get(layer.class_name)
        if spec is None:
            continue
        name = spec.name
        types.add(name)
        for param, value in spec.coverage_values(layer.config):
            params.add((name, param, value))
        in_deg = min(len(layer.inputs), DEGREE_CAP)
        if spec.arity[0] <= in_deg <= spec.arity[1]:
            ins.add((name, in_deg))
        outs.add((name, min(out_degree.get(layer.name, 0), DEGREE_CAP)))
        for src in layer.inputs:
            producer = by_name[src]
            if (producer.class_name, name) in reachable:
                pairs.add((producer.class_name, name))
            dtype = input_dtype(producer) if producer.class_name == INPUT_CLASS else _policy_dtype(producer)
            if dtype in spec.dtypes:
                dtypes.add((name, dtype))
            shape = _shape_of(producer, shapes)
            if shape is not None:
                if len(shape) in spec.input_ranks:
                    ranks.add((name, len(shape)))
                sizes.add((name, size_label(shape)))
    return ModelCoverage(frozenset(types), frozenset(pairs), frozenset(params), frozenset(ranks),
                         frozenset(dtypes), frozenset(sizes), frozenset(ins), frozenset(outs))


def _shape_of(producer: Layer, shapes: Mapping[str, Shape] | None) -> Shape | None:
    if shapes is not None and producer.name in shapes:
        return tuple(shapes[producer.name])
    if producer.class_name == INPUT_CLASS:
        try:
            return input_shape(producer)
        except Exception:  # noqa: BLE001 - an input without a shape simply has no rank/size coverage
            return None
    return None


def union_all(coverages: Iterable[ModelCoverage]) -> ModelCoverage:
    total = ModelCoverage()
    for coverage in coverages:
        total = total.union(coverage)
    return total


# ----------------------------------------------------------------------------- tracker
@dataclass
class CoverageTracker:
    """The union of everything seen so far; :meth:`add` returns what a model contributed."""

    covered: dict[str, set] = field(default_factory=lambda: {name: set() for name in CRITERIA})
    models: int = 0

    @property
    def types(self) -> set[str]:
        return self.covered["types"]

    @property
    def pairs(self) -> set[tuple[str, str]]:
        return self.covered["pairs"]

    @property
    def params(self) -> set[tuple[str, str, Hashable]]:
        return self.covered["params"]

    def delta(self, mc: ModelCoverage) -> CoverageDelta:
        """What ``mc`` would add, without adding it."""
        return CoverageDelta(**{f"new_{name}": frozenset(getattr(mc, name) - self.covered[name])
                                for name in CRITERIA})

    def add(self, mc: ModelCoverage) -> CoverageDelta:
        found = self.delta(mc)
        for name in CRITERIA:
            self.covered[name] |= getattr(found, f"new_{name}")
        self.models += 1
        return found

    def coverage(self) -> ModelCoverage:
        return ModelCoverage(**{name: frozenset(self.covered[name]) for name in CRITERIA})

    def counts(self) -> dict[str, tuple[int, int]]:
        """Criterion -> (covered, denominator)."""
        totals = denominators()
        return {name: (len(self.covered[name]), totals[name]) for name in CRITERIA}

    def to_json(self) -> dict[str, Any]:
        return {"format": "memo-coverage/1", "models": self.models,
                "covered": {name: sorted((_jsonable(item) for item in self.covered[name]), key=json.dumps)
                            for name in CRITERIA}}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> "CoverageTracker":
        if data.get("format") != "memo-coverage/1":
            raise ValueError(f"not a memo coverage document (format {data.get('format')!r})")
        tracker = cls(models=int(data.get("models", 0)))
        for name in CRITERIA:
            items = data.get("covered", {}).get(name, [])
            tracker.covered[name] = {tuple(item) if isinstance(item, list) else item for item in items}
        return tracker


def _jsonable(item: Any) -> Any:
    return list(item) if isinstance(item, tuple) else item

