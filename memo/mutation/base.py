"""The operator framework: what a mutant is and the operator registry.

An operator is a small class with a ``name``, a one-line ``summary`` and an ``apply(editor)`` method that
edits the copy of the model held by an :class:`~memo.mutation.editor.Editor` (which also carries the
random generator, the coverage view and the lineage being written). Registering is one decorator, the only
list of operators: the package imports every module of ``memo/mutation/``, and the default operators and
their order derive from each operator's ``group`` and ``position``:

    @register
    class MyOperator(MutationOperator):
        name = "MyOp"
        summary = "what it does"
        position = 21  # the next free one
        def apply(self, editor): ...
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

from memo.model.ir import ModelIR
from memo.mutation.editor import Editor


@dataclass
class Mutant:
    """A mutated model and its lineage.

    ``changes`` is JSON-able: one dict per edit, each with an ``action`` (``insert``, ``adapt``,
    ``set_param``, ``rewire``, ``remove``, ``inject`` ...), node names and old/new values.
    """

    ir: ModelIR
    operator: str
    parent: str
    changes: list[dict[str, Any]] = field(default_factory=list)
    shapes: dict[str, tuple[int | None, ...]] | None = None  # output shape of every node, from the final check
    cost: int = 0  # estimated multiply-adds per sample (memo.mutation.analysis.compute_cost)

    def lineage(self) -> dict[str, Any]:
        return {"model": self.ir.name, "parent": self.parent, "operator": self.operator,
                "changes": self.changes}


# Operator groups, in the order the operator list gives them.
MEMO = "memo"    # MEMO's seven (Section 3.3, Table 2): used by default
EXTRA = "extra"  # memo's own and those of GraphFuzz and Isra: used by default
LEMON = "lemon"  # LEMON's coverage-blind operators, for the ablation (benchmarks/bench_ablation.py): only with --ops
GROUPS = (MEMO, EXTRA, LEMON)
DEFAULT_GROUPS = (MEMO, EXTRA)


class MutationOperator:
    """Base class of every operator (see module docstring)."""

    name: ClassVar[str] = ""
    summary: ClassVar[str] = ""
    group: ClassVar[str] = EXTRA
    # The operator's place within its group in the operator list, unique across operators. The default operators
    # are the search's arms in this order, so a campaign seed gives the same mutants only while it stays.
    position: ClassVar[int] = 0
    # Secondary coverage criteria (memo.coverage.SECONDARY) the operator aims at: a mutant adding an item of one
    # of them is diverse too (TSM aims at input sizes and ranks, DType at dtypes).
    targets: ClassVar[tuple[str, ...]] = ()

    def apply(self, editor: Editor) -> None:  # pragma: no cover - abstract
        raise NotImplementedError


OPERATORS: dict[str, MutationOperator] = {}


def register(cls: type[MutationOperator]) -> type[MutationOperator]:
    """Add ``cls`` to :data:`OPERATORS`; its name and position must be new, its group one of :data:`GROUPS`."""
    if not cls.name or cls.name in OPERATORS:
        raise ValueError(f"operator {cls.__name__} needs a unique name (got {cls.name!r})")
    if cls.group not in GROUPS:
        raise ValueError(f"operator {cls.name}: group {cls.group!r} is none of {', '.join(GROUPS)}")
    taken = {op.position: op.name for op in OPERATORS.values()}
    if cls.position < 1 or cls.position in taken:
        raise ValueError(f"operator {cls.name} needs a position of its own (got {cls.position}, "
                         f"taken by {taken.get(cls.position)}; the next free one is {max(taken, default=0) + 1})")
    OPERATORS[cls.name] = cls()
    return cls


def operators_in(*groups: str) -> tuple[str, ...]:
    """The names of the registered operators of ``groups``, group by group, each group by position."""
    return tuple(op.name for group in groups
                 for op in sorted((op for op in OPERATORS.values() if op.group == group), key=lambda op: op.position))
