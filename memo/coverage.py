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

Headline and inert (:mod:`memo.coverage_realizable`, docs/coverage.md): every item is stored, but the
figures (:meth:`Coverage.counts`, :meth:`CoverageTracker.counts`) and what makes a mutant diverse
(:meth:`Coverage.is_new`, :meth:`Coverage.size`) count only the items that can change an inference result;
the others (inference-identity layers such as Dropout, initializer/regularizer/constraint settings) are
counted apart by ``inert_counts``. A pair seen through inference identities (A -> Dropout -> B) also counts
as the pair (A, B) that runs at inference.

Every denominator comes from the catalogue (:func:`denominators`: the declared items that are realizable;
:func:`inert_denominators`: the declared inert ones), so a figure can never exceed it.
Pure Python: no Keras import. Layers outside the catalogue are ignored here and listed by
:func:`unknown_layers`.
"""
from __future__ import annotations

import json
from collections.abc import Hashable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from functools import lru_cache, reduce
from typing import Any

from memo.coverage_realizable import is_identity, is_inert
from memo.json_types import JsonObject
from memo.layers import CATALOGUE, possible_pairs
from memo.layers.spec import Bucket, Shape
from memo.model.ir import INPUT_CLASS, Layer, ModelIR, input_dtype, input_shape, compute_dtype

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
    delta). ``types``, ``pairs`` and ``params`` name the primary sets. It holds every item; :meth:`headline`
    and :meth:`inert` split them (computed once per object).
    """

    __slots__ = ("_sets", "_split")

    def __init__(self, sets: Mapping[str, Iterable[Hashable]] | None = None,
                 **criteria: Iterable[Hashable]) -> None:
        given = {**(sets or {}), **criteria}
        unknown = sorted(set(given) - set(CRITERIA))
        if unknown:
            raise ValueError(f"not coverage criteria: {', '.join(unknown)} (known: {', '.join(CRITERIA)})")
        self._sets: dict[str, frozenset] = {name: frozenset(given.get(name, ())) for name in CRITERIA}
        self._split: tuple[Coverage, Coverage] | None = None

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
        union = _union(self, other)
        if self._split is not None and isinstance(other, Coverage) and other._split is not None:
            # a tracker's totals grow by one delta per model: keep their split instead of redoing it
            headline, inert = _union(self._split[0], other._split[0]), _union(self._split[1], other._split[1])
            headline._split, inert._split = (headline, _EMPTY), (_EMPTY, inert)
            union._split = (headline, inert)
        return union

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

    def headline(self) -> "Coverage":
        """Only the items that can change an inference result (:mod:`memo.coverage_realizable`)."""
        return self._split_items()[0]

    def inert(self) -> "Coverage":
        """Only the items that cannot change an inference result."""
        return self._split_items()[1]

    def _split_items(self) -> tuple["Coverage", "Coverage"]:
        if self._split is None:
            if not any(self._sets.values()):
                self._split = (self, self)
            else:
                parts: tuple[dict[str, set], dict[str, set]] = ({}, {})
                for name, items in self._sets.items():
                    for item in items:
                        parts[is_inert(name, item)].setdefault(name, set()).add(item)
                headline, inert = Coverage(parts[0]), Coverage(parts[1])
                headline._split, inert._split = (headline, _EMPTY), (_EMPTY, inert)
                self._split = (headline, inert)
        return self._split

    def counts(self) -> dict[str, int]:
        """Criterion -> number of headline items (inert ones: :meth:`inert_counts`)."""
        return {name: len(items) for name, items in self.headline().items()}

    def inert_counts(self) -> dict[str, int]:
        """Criterion -> number of inert items."""
        return {name: len(items) for name, items in self.inert().items()}

    def is_new(self) -> bool:
        """True when it holds a headline layer type, pair or parameter value: for a delta, MEMO's diverse(m')
        (a mutant whose only news is an inert setting is not diverse)."""
        return any(self.headline()[name] for name in PRIMARY)

    def size(self) -> int:
        """Number of headline primary items (for a delta: 0 exactly when the model is not diverse)."""
        headline = self.headline()
        return sum(len(headline[name]) for name in PRIMARY)

    def secondary_size(self) -> int:
        """Number of headline secondary items."""
        headline = self.headline()
        return sum(len(headline[name]) for name in SECONDARY)

    def to_json(self) -> dict[str, list[Any]]:
        """Criterion -> sorted items, tuples as lists."""
        return {name: sorted((_jsonable(item) for item in items), key=json.dumps)
                for name, items in self._sets.items()}

    @classmethod
    def from_json(cls, data: Mapping[str, Iterable[Any]]) -> "Coverage":
        """The inverse of :meth:`to_json` (a criterion missing from ``data`` is empty)."""
        return cls({name: (tuple(item) if isinstance(item, list) else item for item in data.get(name, ()))
                    for name in CRITERIA})


def _union(a: Mapping[str, frozenset], b: Mapping[str, frozenset]) -> Coverage:
    # a criterion with nothing to add keeps its set as it is
    return Coverage({name: a[name] | b[name] if b[name] else a[name] for name in CRITERIA})


_EMPTY = Coverage()
_EMPTY._split = (_EMPTY, _EMPTY)


# ----------------------------------------------------------------------------- denominators
def in_degree_values(arity: tuple[int, int]) -> range:
    return range(arity[0], min(arity[1], DEGREE_CAP) + 1)


@lru_cache(maxsize=1)
def declared() -> Coverage:
    """Every item the catalogue declares, per criterion: what the denominators count."""
    specs = list(CATALOGUE.values())
    return Coverage(types=(s.name for s in specs),
                    pairs=possible_pairs(),
                    params=((s.name, p.name, v) for s in specs for p in s.params for v in p.values),
                    input_ranks=((s.name, r) for s in specs for r in s.input_ranks),
                    dtypes=((s.name, d) for s in specs for d in s.dtypes),
                    shapes=((s.name, label) for s in specs for label in SIZE_LABELS),
                    in_degrees=((s.name, d) for s in specs for d in in_degree_values(s.arity)),
                    out_degrees=((s.name, d) for s in specs for d in range(DEGREE_CAP + 1)))


def denominators() -> dict[str, int]:
    """Criterion -> number of realizable items the catalogue declares (what 100 % of a headline figure means):
    the declared items minus the inert ones (pairs: the reachable pairs minus those with an identity layer)."""
    return declared().counts()


def inert_denominators() -> dict[str, int]:
    """Criterion -> number of inert items the catalogue declares."""
    return declared().inert_counts()


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
    return compute_dtype(layer.config)


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
        pairs |= _pairs_into(layer, name, by_name, reachable)
        for src in layer.inputs:
            producer = by_name[src]
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


def _pairs_into(layer: Layer, name: str, by_name: Mapping[str, Layer],
                reachable: frozenset[tuple[str, str]] | set[tuple[str, str]]) -> set[tuple[str, str]]:
    """The reachable pairs ending at ``layer`` (catalogue name ``name``): one per input edge, and A -> B for
    A -> Dropout -> B, which runs as A -> B at inference."""
    pairs: set[tuple[str, str]] = set()
    for src in layer.inputs:
        producer = by_name[src]
        if (producer.class_name, name) in reachable:
            pairs.add((producer.class_name, name))
        if is_identity(producer.class_name) and not is_identity(name):
            realized = _through_identities(producer, by_name).class_name
            if (realized, name) in reachable:
                pairs.add((realized, name))
    return pairs


def model_pairs(ir: ModelIR) -> set[tuple[str, str]]:
    """The ``pairs`` criterion of :func:`model_coverage` alone (cheap enough to measure an edit by)."""
    by_name = {layer.name: layer for layer in ir.layers}
    reachable = possible_pairs()
    return {pair for layer in ir.layers if (spec := CATALOGUE.get(layer.class_name)) is not None
            for pair in _pairs_into(layer, spec.name, by_name, reachable)}


def _through_identities(layer: Layer, by_name: Mapping[str, Layer]) -> Layer:
    """The first layer upstream of ``layer`` (itself included) that is not an inference identity."""
    while is_identity(layer.class_name) and len(layer.inputs) == 1:
        layer = by_name[layer.inputs[0]]
    return layer


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
# Models the reference could not run that an uncovered pair or parameter value may be in before generation stops
# aiming at it: Target kept realizing (Masking, Softmax), Keras's Softmax refused the mask at run time, the pair
# stayed uncovered, and 19 of one hour's executions were that same failure.
GIVE_UP_AFTER = 3
_AIMED = ("pairs", "params")


@dataclass
class CoverageTracker:
    """The union of everything seen so far (``covered``); :meth:`add` returns what a model contributed.

    ``type_counts`` says in how many of the ``type_models`` models added since it was first kept each layer
    type occurs (documents saved before it existed restart it at zero: ``type_models`` < ``models``).
    """

    covered: Coverage = field(default_factory=Coverage)
    models: int = 0
    type_counts: dict[str, int] = field(default_factory=dict)
    type_models: int = 0
    # (criterion, item) -> models the reference could not run that held this uncovered pair or parameter value
    refusals: dict[tuple[str, Hashable], int] = field(default_factory=dict)

    def delta(self, coverage: Coverage) -> Coverage:
        """What ``coverage`` would add, without adding it."""
        return coverage - self.covered

    def add(self, coverage: Coverage) -> Coverage:
        """Add one model's coverage (everything it covers, not a delta); returns what was new."""
        found = self.delta(coverage)
        found.headline()  # split the (small) delta now, so that the union keeps the totals' split
        self.covered = self.covered | found
        self.models += 1
        self.type_models += 1
        for name in coverage.types:
            self.type_counts[name] = self.type_counts.get(name, 0) + 1
        return found

    def refuse(self, coverage: Coverage) -> None:
        """Record a model the reference could not run: each headline pair and parameter value it holds that is
        still uncovered gets one refusal (:meth:`given_up`)."""
        headline = coverage.headline()
        for criterion in _AIMED:
            for item in headline[criterion] - self.covered[criterion]:
                key = (criterion, item)
                self.refusals[key] = self.refusals.get(key, 0) + 1

    def given_up(self) -> Coverage:
        """Uncovered pairs and parameter values found in :data:`GIVE_UP_AFTER` or more models the reference
        could not run: generation no longer aims at them (they still count when a model covers them)."""
        found: dict[str, set] = {}
        for (criterion, item), count in self.refusals.items():
            if count >= GIVE_UP_AFTER and item not in self.covered[criterion]:
                found.setdefault(criterion, set()).add(item)
        return Coverage(found)

    def with_claims(self, claimed: Coverage) -> "CoverageTracker":
        """A view that also covers ``claimed`` (models still awaiting their outcome), with the same counts."""
        return CoverageTracker(covered=self.covered | claimed, models=self.models,
                               type_counts=dict(self.type_counts), type_models=self.type_models,
                               refusals=self.refusals)

    def counts(self) -> dict[str, tuple[int, int]]:
        """Criterion -> (headline items covered, realizable denominator). Only items the catalogue declares
        count (a document saved over another catalogue may hold others), so no figure exceeds its denominator."""
        space = declared().headline()
        return {name: (len(items & space[name]), len(space[name])) for name, items in self.covered.headline().items()}

    def inert_counts(self) -> dict[str, tuple[int, int]]:
        """Criterion -> (inert items covered, inert denominator), for the criteria that have inert items."""
        space = declared().inert()
        return {name: (len(items & space[name]), len(space[name]))
                for name, items in self.covered.inert().items() if space[name]}

    def rare_types(self, fraction: float = 0.01, *, identities: bool = False) -> frozenset[str]:
        """Realizable layer types found in at most ``fraction`` of the models counted, never-seen ones
        included (generation's rare-type tier); empty until a model was counted. ``identities``: the
        inference-identity types instead (inert, counted apart from the headline)."""
        if not self.type_models:
            return frozenset()
        limit = fraction * self.type_models
        names = declared().inert().types if identities else declared().headline().types
        return frozenset(name for name in names if self.type_counts.get(name, 0) <= limit)

    def to_json(self) -> JsonObject:
        return {"format": TRACKER_FORMAT, "models": self.models, "covered": self.covered.to_json(),
                "type_counts": dict(sorted(self.type_counts.items())), "type_models": self.type_models,
                "refusals": sorted(([criterion, _jsonable(item), count]
                                    for (criterion, item), count in self.refusals.items()), key=json.dumps)}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> "CoverageTracker":
        """The inverse of :meth:`to_json`; reads documents saved without type counts too."""
        if data.get("format") != TRACKER_FORMAT:
            raise ValueError(f"not a memo coverage document (format {data.get('format')!r})")
        return cls(covered=Coverage.from_json(data.get("covered", {})), models=int(data.get("models", 0)),
                   type_counts={str(k): int(v) for k, v in (data.get("type_counts") or {}).items()},
                   type_models=int(data.get("type_models", 0)),
                   refusals={(str(criterion), tuple(item) if isinstance(item, list) else item): int(count)
                             for criterion, item, count in data.get("refusals") or ()})


def _jsonable(item: Any) -> Any:
    return list(item) if isinstance(item, tuple) else item
