"""Block-aware seed reduction (MEMO, Section 3.2 and Algorithm 1, in spirit).

Goal: the smallest model that still has *exactly* the coverage of the original: the same set of layer
types, layer pairs and layer parameters (``coverage_fn``, by default :func:`memo.coverage.model_coverage`)
and that still builds (every shape and rank constraint holds).

Greedy, in phases (a registry, :data:`PHASES`), repeated until a whole round removes nothing; one run per
phase order of :data:`PHASE_ORDERS`, keeping the smallest result:

1. ``inter-block``: repeated blocks. Spans of segments between cut nodes (see :mod:`.graph`) are grouped
   by structural signature; all repeats but the first are removed in one edit, and when that changes the
   coverage or breaks a constraint the group is split in halves (delta-debugging style).
2. ``intra-block``: inside blocks. Runs of single-input layers are bypassed, merges are bypassed (keeping
   one branch) or lose one branch.
3. ``any-span``: any run of segments, repeated or not, largest first.
4. ``rewire``: one input of a layer is fed from another, earlier tensor (small models only).

An edit whose only coverage change is lost items is retried with them put back (:mod:`.absorb`): a lost
layer pair by feeding a kept layer from another earlier layer, a lost parameter value by moving it onto a
kept layer of the same class. Every edit is accepted only if the coverage key is unchanged, the
incremental shape propagation (:mod:`.specs`) succeeds (a removal whose entry and exit specs are equal
needs no Keras call at all; an element-wise merge left with inputs of different widths may be repaired
by :mod:`.repair`), and the model's weight count and multiply-accumulate proxy stay within the original's.
At the end the reduced model is built once more, in full, and its coverage compared again.
"""
from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator

from memo.coverage import model_coverage
from memo.errors import InvalidModelError
from memo.model.ir import ModelIR
from memo.seed_reduction import graph
from memo.seed_reduction.absorb import absorption_plans, pair_plans
from memo.seed_reduction.edits import Edit, apply_edit, combine, remove_span
from memo.seed_reduction.repair import width_repairs
from memo.seed_reduction.specs import BuildConflict, SpecTable, full_specs, propagate

CoverageFn = Callable[[ModelIR], Any]
CoverageKey = tuple[frozenset, frozenset, frozenset]

MAX_SPAN_SEGMENTS = 8  # a span may hold up to this many consecutive segments (Conv-BN-Act x 2 and more)
MAX_CHAIN = 6          # longest run of single-input layers removed as one edit
MAX_ROUNDS = 6
MAX_REPAIRS = 2        # width repairs chained onto one edit (see .repair)
MAX_REWIRE_LAYERS = 120  # the rewire phase tries every (layer, earlier layer) pair: only on models this small
MAX_PAIR_PLANS = 4     # alternative rewirings tried to bring back the layer pairs an edit lost (see .absorb)
MAX_ABSORB_PLANS = 3   # alternative value absorptions tried for one edit (see .absorb)
COVERAGE_FIXES = frozenset({"pairs", "params"})  # what .absorb may fix in an edit's coverage (see fixes)


def coverage_key(coverage: Any) -> CoverageKey:
    """What reduction must preserve: the primary sets of a :class:`memo.coverage.Coverage`."""
    return frozenset(coverage.types), frozenset(coverage.pairs), frozenset(coverage.params)


def default_coverage_fn() -> CoverageFn:
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


def _by_size(ir: ModelIR, edits: list[Edit], min_removed: int = 0) -> Iterator[list[Edit]]:
    sized = []
    for edit in edits:
        candidate = apply_edit(ir, edit)
        if candidate is not None and len(ir) - len(candidate) >= min_removed:
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


def _rewire(ir: ModelIR) -> Iterator[list[Edit]]:
    """Feed one input of a layer from another, earlier tensor, whatever no output needs then being pruned.

    Needs no cut node or chain: a layer can skip back over part of a block, or take its input from another
    branch. Only sources whose class already feeds the layer's class somewhere are tried (anything else adds
    a layer pair), and only on small models (every (layer, earlier layer) pair is a candidate), that is after
    the other phases have done the bulk of the work.
    """
    if len(ir) > MAX_REWIRE_LAYERS:
        return
    layers = ir.layers
    by_name = ir.by_name()
    edges = {(by_name[src].class_name, layer.class_name) for layer in layers for src in layer.inputs}
    edits = []
    for position, layer in enumerate(layers):
        for index, current in enumerate(layer.inputs):
            edits += [Edit("rewire", reinput=((layer.name, index, source.name),)) for source in layers[:position]
                      if source.name != current and (source.class_name, layer.class_name) in edges]
    yield from _by_size(ir, edits, min_removed=1)


PHASES: dict[str, Phase] = {"inter-block": _inter_block, "intra-block": _intra_block, "any-span": _any_span,
                            "rewire": _rewire}
# The greedy result depends on the phase order (InceptionResNetV2 and InceptionV3 do better with
# intra-block edits first, Xception with any-span before intra-block, MobileNetV2 with the default order).
# Each order is one independent run from the original model; the smallest result is kept (the first on ties).
PHASE_ORDERS: tuple[tuple[str, ...], ...] = (("inter-block", "intra-block", "any-span", "rewire"),
                                             ("intra-block", "inter-block", "any-span", "rewire"),
                                             ("inter-block", "any-span", "intra-block", "rewire"))


# ---------------------------------------------------------------------------- the greedy search
class _Reducer:
    """One greedy run over the phases of ``order``, from ``ir`` (pruned) whose specs ``table`` holds."""

    def __init__(self, ir: ModelIR, table: SpecTable, target: CoverageKey, coverage_fn: CoverageFn,
                 order: tuple[str, ...], deadline: float | None) -> None:
        self.coverage_fn = coverage_fn
        self.target = target
        self.ir = ir
        self.table = table
        self.order = order
        self.weight_limit = table.total_weights()
        self.macs_limit = table.total_macs()
        self.stats = ReductionStats(original_layers=len(ir), reduced_layers=len(ir),
                                    original_weights=self.weight_limit)
        self.deadline = deadline

    def out_of_time(self) -> bool:
        return self.deadline is not None and time.monotonic() > self.deadline

    def fixes(self, edit: Edit, candidate: ModelIR, key: CoverageKey,
              allowed: frozenset[str]) -> Iterator[tuple[Edit, frozenset[str]]]:
        """``edit`` completed so that its coverage may come back to the target, with the fixes still allowed.

        Only when the edit's sole coverage change is that it lost items (types kept, nothing new). Lost layer
        pairs are re-homed first, then lost values absorbed; each kind of fix is applied at most once per edit.
        (Also fixing *new* pairs, by feeding their consumers from elsewhere, makes the greedy search end in
        larger models.)
        """
        types, pairs, params = key
        if types != self.target[0] or not pairs <= self.target[1] or not params <= self.target[2]:
            return
        lost_pairs, lost_params = self.target[1] - pairs, self.target[2] - params
        if lost_pairs:
            if "pairs" in allowed:
                for plan in pair_plans(candidate, lost_pairs, MAX_PAIR_PLANS):
                    yield dataclasses.replace(edit, reinput=(*edit.reinput, *plan)), allowed - {"pairs"}
        elif "params" in allowed:
            for plan in absorption_plans(self.ir, candidate, lost_params, MAX_ABSORB_PLANS):
                yield dataclasses.replace(edit, configs=(*edit.configs, *plan)), frozenset()

    def try_edit(self, edit: Edit, phase: str, repairs_left: int = MAX_REPAIRS,
                 allowed: frozenset[str] = COVERAGE_FIXES) -> bool:
        """Accept ``edit`` if it keeps coverage, builds and stays within the limits; else try it again with
        width repairs (a merge left with inputs of two widths) or coverage fixes (:meth:`fixes`)."""
        candidate = apply_edit(self.ir, edit)
        if candidate is None:
            return False
        self.stats.attempts += 1
        key = coverage_key(self.coverage_fn(candidate))
        if key != self.target:
            return any(self.try_edit(fixed, phase, repairs_left, rest)
                       for fixed, rest in self.fixes(edit, candidate, key, allowed))
        try:
            table, rebuilt = propagate(candidate, self.table)
        except BuildConflict as conflict:
            if repairs_left == 0:
                return False
            return any(self.try_edit(dataclasses.replace(edit, configs=(*edit.configs, repair)), phase,
                                     repairs_left - 1, allowed)
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
            for name in self.order:
                for group in PHASES[name](self.ir):
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
    deadline = None if budget_s is None else started + budget_s
    target = coverage_key(coverage_fn(ir))
    pruned = ir.copy().prune()
    table = full_specs(pruned)  # shared by the runs, and so is its memo of layer calls
    best: _Reducer | None = None
    attempts = 0
    for order in PHASE_ORDERS:
        if best is not None and deadline is not None and time.monotonic() > deadline:
            break
        reducer = _Reducer(pruned, table, target, coverage_fn, order, deadline)
        reducer.run()
        attempts += reducer.stats.attempts
        if best is None or len(reducer.ir) < len(best.ir):
            best = reducer
    assert best is not None
    reduced = best.ir.copy()
    final = full_specs(reduced)  # the incremental checks are exact, but the result is verified by a real build too
    if coverage_key(coverage_fn(reduced)) != target:
        raise InvalidModelError(f"reduction of {ir.name!r} changed its coverage (internal error)")
    kept = {layer.name for layer in reduced.layers}
    stats = best.stats
    stats.attempts = attempts
    stats.original_layers = len(ir)
    stats.reduced_layers = len(reduced)
    stats.reduced_weights = final.total_weights()
    stats.seconds = time.monotonic() - started
    return ReductionResult(reduced, [layer.name for layer in ir.layers if layer.name not in kept], stats)
