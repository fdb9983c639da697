"""Mutation operators: MEMO's seven (Section 3.3, Table 2) and a few beyond (GraphFuzz, Isra).

``mutate(ir, operator, rng, coverage)`` returns a :class:`Mutant` whose model builds in Keras, or raises
:class:`MutationFailed` (retryable). See docs/mutation.md for each operator and how to add one: every module
here is imported, so an operator's ``@register`` is all that lists it.
"""
from __future__ import annotations

import importlib
import pkgutil
import random

from memo.coverage import CoverageTracker
from memo.errors import InvalidModelError, MutationFailed, UsageError
from memo.model.ir import ModelIR
from memo.mutation.analysis import analyse, compute_cost, verify, weight_count
from memo.mutation.base import (DEFAULT_GROUPS, EXTRA, GROUPS, LEMON, MEMO, OPERATORS, Mutant, MutationOperator,
                                operators_in)
from memo.mutation.editor import Editor
from memo.mutation.preference import CoverageView

for _module in pkgutil.iter_modules(__path__):  # each operator module registers its operators on import
    importlib.import_module(f"{__name__}.{_module.name}")
del _module

MEMO_OPERATORS = operators_in(MEMO)
EXTRA_OPERATORS = operators_in(EXTRA)
DEFAULT_OPERATORS = operators_in(*DEFAULT_GROUPS)  # what a campaign uses without --ops, in the search's order
LEMON_OPERATORS = operators_in(LEMON)
DIRECTED_OPERATOR = "Target"  # what the campaign's directed share of mutations uses (memo fuzz --directed)
ATTEMPTS = 3  # whole-operator retries (same rng stream) when the final build rejects a mutant
# A mutation may not take a model above this many weight values (40 MB of float32) unless its parent is
# larger already: wide Dense layers on flattened maps make mutants whose time in every library goes to moving
# weights, not to running layers (docs/benchmarks.md, "Campaign").
MAX_WEIGHTS = 10_000_000

__all__ = ["DEFAULT_OPERATORS", "DIRECTED_OPERATOR", "EXTRA_OPERATORS", "LEMON_OPERATORS", "MEMO_OPERATORS",
           "OPERATORS", "Mutant", "MutationFailed", "MutationOperator", "mutate", "operator_names"]


def operator_names() -> tuple[str, ...]:
    """Every registered operator, group by group (:data:`~memo.mutation.base.GROUPS`), each group by position."""
    return operators_in(*GROUPS)


def get_operator(name: str) -> MutationOperator:
    try:
        return OPERATORS[name]
    except KeyError:
        raise UsageError(f"unknown mutation operator {name!r} (known: {', '.join(operator_names())})") from None


def mutate(ir: ModelIR, operator: str, rng: random.Random, coverage: CoverageTracker | None, *,
           parent: str = "") -> Mutant:
    """Apply ``operator`` to a copy of ``ir``; the result builds in Keras (or :class:`MutationFailed`).

    ``coverage`` is the campaign's CoverageTracker (None: nothing covered yet). A model's facts are cached, so a
    seed is built once.
    Deterministic: the same model, operator, ``rng`` state and coverage give the same mutant bytes.
    """
    op = get_operator(operator)
    try:
        infos = analyse(ir)
    except InvalidModelError as exc:
        raise MutationFailed(f"{operator}: the parent model does not build ({exc})") from exc
    view = CoverageView(coverage, ir, {name: info.shape for name, info in infos.items()})
    weight_bound = max(MAX_WEIGHTS, weight_count(infos))
    last: Exception | None = None
    for _ in range(ATTEMPTS):
        editor = Editor(ir, infos, rng, view, op.name)
        try:
            op.apply(editor)
            if not editor.changes:
                raise MutationFailed(f"{operator}: changed nothing")
            mutant = editor.finish()
            checked = verify(mutant, ir, infos)  # a Keras build's check, layer by layer where anything changed
            weights = weight_count(checked)
            if weights > weight_bound:
                raise InvalidModelError(f"{weights:,} weight values, above the bound of {weight_bound:,}")
        except InvalidModelError as exc:
            last = exc
            continue
        return Mutant(ir=mutant, operator=op.name, parent=parent or ir.name, changes=editor.changes,
                      shapes={name: info.shape for name, info in checked.items()}, cost=compute_cost(mutant, checked))
    raise MutationFailed(f"{operator}: mutant rejected by Keras ({last})")
