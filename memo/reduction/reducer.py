"""Block-aware seed reduction (MEMO, Section 3.2 and Algorithm 1, in spirit).

Goal: the smallest model that still has *exactly* the coverage of the original: the same set of layer
types, layer pairs and layer parameters (``coverage_fn``, by default :func:`memo.coverage.model_coverage`)
and that still builds (every shape and rank constraint holds).

Greedy, in phases (a registry, :data:`PHASES`), repeated until a whole round removes nothing:

1. ``inter-block``: repeated blocks. Spans of segments between cut nodes (see :mod:`.graph`) are grouped
   by structural signature; all repeats but the first are removed in one edit, and when that changes the
   coverage or breaks a constraint the group is split in halves (delta-debugging style).
2. ``intra-block``: inside blocks. Runs of single-input layers are bypassed, merges are bypassed (keeping
   one branch) or lose one branch.
3. ``any-span``: any run of segments, repeated or not, largest first.

Every edit is accepted only if the coverage key is unchanged, the incremental shape propagation
(:mod:`.specs`) succeeds (a removal whose entry and exit specs are equal needs no Keras call at all;
an element-wise merge left with inputs of different widths may be repaired by :mod:`.repair`),
and the model's weight count and multiply-accumulate proxy stay within the original's.
At the end the reduced model is built once more, in full, and its coverage compared again.
"""
from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator

from memo.errors import InvalidModelError
from memo.model.ir import ModelIR
from memo.reduction import graph
from memo.reduction.edits import Edit, apply_edit, combine, remove_span
from memo.reduction.repair import width_repairs
from memo.reduction.specs import BuildConflict, SpecTable, full_specs, propagate

CoverageFn = Callable[[ModelIR], Any]
CoverageKey = tuple[frozenset, frozenset, frozenset]

MAX_SPAN_SEGMENTS = 8  # a span may hold up to this many consecutive segments (Conv-BN-Act x 2 and more)
MAX_CHAIN = 6          # longest run of single-input layers removed as one edit
MAX_ROUNDS = 6
MAX_REPAIRS = 2        # width repairs chained onto one edit (see .repair)


def coverage_key(coverage: Any) -> CoverageKey:
    """What reduction must preserve: the three sets of a ``ModelCoverage``."""
    return frozenset(coverage.types), frozenset(coverage.pairs), frozenset(coverage.params)


def default_coverage_fn() -> CoverageFn:
    from memo.coverage import model_coverage  # noqa: PLC0415  (the catalogue is imported only when needed)

    return model_coverage


@dataclass
class ReductionStats:
    original_layers: int
    reduced_layers: int
    original_weights: int = 0
    reduced_weights: int = 0
    attempts: int = 0
    accepted: int = 0
    rebuilt_layers: int = 0
    seconds: float = 0.0
    removed_by_phase: dict[str, int] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass
class ReductionResult:
    ir: ModelIR
    removed: list[str]
    stats: ReductionStats


# ---------------------------------------------------------------------------- phases (edit groups)
# A phase yields groups of edits; a group is tried as one combined edit, then split on failure.
Phase = Callable[[ModelIR], Iterator[list[Edit]]]


def _inter_block(ir: ModelIR) -> Iterator[list[Edit]]:
    for group in graph.repeated_groups(graph.spans(ir, MAX_SPAN_SEGMENTS)):
        yield [remove_span(span.entry, span.nodes, "inter-block") for span in group[1:]]


def _by_size(ir: ModelIR, edits: list[Edit]) -> Iterator[list[Edit]]:
    sized = []
    for edit in edits:
        candidate = apply_edit(ir, edit)
        if candidate is not None:
            sized.append((len(ir) - len(candidate), edit))
    sized.sort(key=lambda item: -item[0])
    for _size, edit in sized:
        yield [edit]


def _intra_block(ir: ModelIR) -> Iterator[list[Edit]]:
    edits = []
    layers = ir.by_name()
    for window in graph.chain_windows(ir, MAX_CHAIN):
        edits.append(remove_span(layers[window[0]].inputs[0], window, "intra-block"))
    for layer in ir.layers:
        if len(layer.inputs) < 2:
            continue
        for index, src in enumerate(layer.inputs):
            edits.append(Edit("intra-block", frozenset({layer.name}), ((layer.name, src),)))
            if layer.call_style == "list":
                edits.append(Edit("intra-block", drop_inputs=((layer.name, index),)))
    yield from _by_size(ir, edits)


def _any_span(ir: ModelIR) -> Iterator[list[Edit]]:
    edits = [remove_span(span.entry, span.nodes, "any-span") for span in graph.spans(ir, MAX_SPAN_SEGMENTS)]
    yield from _by_size(ir, edits)


PHASES: dict[str, Phase] = {"inter-block": _inter_block, "intra-block": _intra_block, "any-span": _any_span}


# ---------------------------------------------------------------------------- the greedy search
class _Reducer:
    def __init__(self, ir: ModelIR, coverage_fn: CoverageFn, budget_s: float | None) -> None:
        self.coverage_fn = coverage_fn
        self.target = coverage_key(coverage_fn(ir))
        self.ir = ir.copy().prune()
        self.table: SpecTable = full_specs(self.ir)
        self.weight_limit = self.table.total_weights()
        self.macs_limit = self.table.total_macs()
        self.stats = ReductionStats(original_layers=len(ir), reduced_layers=len(ir),
                                    original_weights=self.weight_limit)
        self.deadline = None if budget_s is None else time.monotonic() + budget_s

    def out_of_time(self) -> bool:
        return self.deadline is not None and time.monotonic() > self.deadline

    def try_edit(self, edit: Edit, phase: str, repairs_left: int = MAX_REPAIRS) -> bool:
        candidate = apply_edit(self.ir, edit)
        if candidate is None:
            return False
        self.stats.attempts += 1
        if coverage_key(self.coverage_fn(candidate)) != self.target:
            return False
        try:
            table, rebuilt = propagate(candidate, self.table)
        except BuildConflict as conflict:
            if repairs_left == 0:
                return False
            return any(self.try_edit(dataclasses.replace(edit, configs=(*edit.configs, repair)), phase,
                                     repairs_left - 1)
                       for repair in width_repairs(candidate, conflict.layer, conflict.inputs))
        self.stats.rebuilt_layers += rebuilt
        if table.total_weights() > self.weight_limit or table.total_macs() > self.macs_limit:
            return False  # e.g. dropping a pooling layer before Flatten -> Dense: fewer layers, more weights
        self.table = table
        self.stats.accepted += 1
        self.stats.removed_by_phase[phase] = self.stats.removed_by_phase.get(phase, 0) + len(self.ir) - len(candidate)
        self.ir = candidate
        return True

    def try_group(self, edits: list[Edit], phase: str) -> bool:
        if not edits or self.out_of_time():
            return False
        if self.try_edit(combine(edits, phase) if len(edits) > 1 else edits[0], phase):
            return True
        if len(edits) == 1:
            return False
        middle = len(edits) // 2
        first = self.try_group(edits[:middle], phase)
        return self.try_group(edits[middle:], phase) or first

    def run(self) -> ModelIR:
        for _round in range(MAX_ROUNDS):
            progress = False
            for name, phase in PHASES.items():
                for group in phase(self.ir):
                    progress = self.try_group(group, name) or progress
            if not progress or self.out_of_time():
                break
        return self.ir


def reduce_model(ir: ModelIR, coverage_fn: CoverageFn | None = None, *,
                 budget_s: float | None = None) -> ReductionResult:
    """Reduce ``ir`` keeping its coverage (types, pairs, params) exactly and every shape constraint.

    ``budget_s`` bounds the search (the result is valid, only possibly larger). The input is not modified.
    """
    coverage_fn = coverage_fn or default_coverage_fn()
    started = time.monotonic()
    reducer = _Reducer(ir, coverage_fn, budget_s)
    reduced = reducer.run().copy()
    final = full_specs(reduced)  # the incremental checks are exact, but the result is verified by a real build too
    if coverage_key(coverage_fn(reduced)) != reducer.target:
        raise InvalidModelError(f"reduction of {ir.name!r} changed its coverage (internal error)")
    kept = {layer.name for layer in reduced.layers}
    stats = reducer.stats
    stats.reduced_layers = len(reduced)
    stats.reduced_weights = final.total_weights()
    stats.seconds = time.monotonic() - started
    return ReductionResult(reduced, [layer.name for layer in ir.layers if layer.name not in kept], stats)
