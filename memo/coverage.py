"""MEMO's three coverage criteria over the layer catalogue, plus secondary ones.

Primary (MEMO, Section 2.2):
* ``types``  - layer APIs used;
* ``pairs``  - ordered (A, B) over edges A -> B, counted only for pairs the catalogue declares reachable
  (some output rank of A is an input rank of B: :func:`memo.layers.pair_possible`);
* ``params`` - (layer, parameter, value or bucket) taken from the declared parameter spaces only.

Secondary: (layer, input rank), (layer, input dtype), (layer, input-size bucket) and GraphFuzz's
(layer, in-degree) and (layer, out-degree), each counted only inside its declared space.

One shape, :class:`Coverage` (criterion name -> set of items), holds what a model covers, what it added to
a tracker (its delta: the items that were new) and a tracker's totals.

Every denominator comes from the catalogue (:func:`denominators`), so a figure can never exceed it.
Pure Python: no Keras import. Layers outside the catalogue are ignored here and listed by
:func:`unknown_layers`.
"""
from __future__ import annotations

import json
from collections.abc import Hashable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from functools import lru_cache, reduce
from typing import Any

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


class Coverage(Mapping[str, frozenset]):
    """Criterion name -> the frozen set of items covered, for every name of :data:`CRITERIA`.

    Built like a dict (``Coverage({"types": ...})`` or ``Coverage(types=...)``); a criterion not given is
    empty. Immutable: ``a | b`` is the union, ``a - b`` what ``a`` covers that ``b`` does not (a tracker's
    delta). ``types``, ``pairs`` and ``params`` name the primary sets.
    """

    __slots__ = ("_sets",)

    def __init__(self, sets: Mapping[str, Iterable[Hashable]] | None = None,
                 **criteria: Iterable[Hashable]) -> None:
        given = {**(sets or {}), **criteria}
        unknown = sorted(set(given) - set(CRITERIA))
        if unknown:
            raise ValueError(f"not coverage criteria: {', '.join(unknown)} (known: {', '.join(CRITERIA)})")
        self._sets: dict[str, frozenset] = {name: frozenset(given.get(name, ())) for name in CRITERIA}

    def __getitem__(self, name: str) -> frozenset:
        return self._sets[name]

    def __iter__(self) -> Iterator[str]:
        return iter(CRITERIA)

    def __len__(self) -> int:
        return len(CRITERIA)

    def __hash__(self) -> int:
        return hash(tuple(self._sets[name] for name in CRITERIA))

    def __repr__(self) -> str:
        return f"Coverage({', '.join(f'{name}={len(items)}' for name, items in self._sets.items())})"

    def __or__(self, other: Mapping[str, frozenset]) -> "Coverage":
        # a criterion with nothing to add keeps its set as it is: a tracker adds a delta to its totals per model
        return Coverage({name: self[name] | other[name] if other[name] else self[name] for name in CRITERIA})

    def __sub__(self, other: Mapping[str, frozenset]) -> "Coverage":
        return Coverage({name: self[name] - other[name] for name in CRITERIA})

    @property
    def types(self) -> frozenset[str]:
        return self._sets["types"]

    @property
    def pairs(self) -> frozenset[tuple[str, str]]:
        return self._sets["pairs"]

    @property
    def params(self) -> frozenset[tuple[str, str, Hashable]]:
        return self._sets["params"]

    def counts(self) -> dict[str, int]:
        """Criterion -> number of items."""
        return {name: len(items) for name, items in self._sets.items()}

    def is_new(self) -> bool:
        """True when it holds a layer type, pair or parameter value: for a delta, MEMO's diverse(m')."""
        return any(self._sets[name] for name in PRIMARY)

    def size(self) -> int:
        """Number of primary items (for a delta: 0 exactly when the model is not diverse)."""
        return sum(len(self._sets[name]) for name in PRIMARY)

    def secondary_size(self) -> int:
        return sum(len(self._sets[name]) for name in SECONDARY)

    def to_json(self) -> dict[str, list[Any]]:
        """Criterion -> sorted items, tuples as lists."""
        return {name: sorted((_jsonable(item) for item in items), key=json.dumps)
                for name, items in self._sets.items()}

    @classmethod
    def from_json(cls, data: Mapping[str, Iterable[Any]]) -> "Coverage":
        """The inverse of :meth:`to_json` (a criterion missing from ``data`` is empty)."""
        return cls({name: (tuple(item) if isinstance(item, list) else item for item in data.get(name, ()))
                    for name in CRITERIA})


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


def model_coverage(ir: ModelIR, shapes: Mapping[str, Shape] | None = None) -> Coverage:
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
    return Coverage(types=types, pairs=pairs, params=params, input_ranks=ranks, dtypes=dtypes, shapes=sizes,
                    in_degrees=ins, out_degrees=outs)


def _shape_of(producer: Layer, shapes: Mapping[str, Shape] | None) -> Shape | None:
    if shapes is not None and producer.name in shapes:
        return tuple(shapes[producer.name])
    if producer.class_name == INPUT_CLASS:
        try:
            return input_shape(producer)
        except Exception:  # noqa: BLE001 - an input without a shape simply has no rank/size coverage
            return None
    return None


def union_all(coverages: Iterable[Coverage]) -> Coverage:
    return reduce(Coverage.__or__, coverages, Coverage())


# ----------------------------------------------------------------------------- tracker
TRACKER_FORMAT = "memo-coverage/1"


@dataclass
class CoverageTracker:
    """The union of everything seen so far (``covered``); :meth:`add` returns what a model contributed."""

    covered: Coverage = field(default_factory=Coverage)
    models: int = 0

    def delta(self, coverage: Coverage) -> Coverage:
        """What ``coverage`` would add, without adding it."""
        return coverage - self.covered

    def add(self, coverage: Coverage) -> Coverage:
        found = self.delta(coverage)
        self.covered = self.covered | found
        self.models += 1
        return found

    def counts(self) -> dict[str, tuple[int, int]]:
        """Criterion -> (covered, denominator)."""
        totals = denominators()
        return {name: (len(items), totals[name]) for name, items in self.covered.items()}

    def to_json(self) -> dict[str, Any]:
        return {"format": TRACKER_FORMAT, "models": self.models, "covered": self.covered.to_json()}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> "CoverageTracker":
        if data.get("format") != TRACKER_FORMAT:
            raise ValueError(f"not a memo coverage document (format {data.get('format')!r})")
        return cls(covered=Coverage.from_json(data.get("covered", {})), models=int(data.get("models", 0)))


def _jsonable(item: Any) -> Any:
    return list(item) if isinstance(item, tuple) else item
