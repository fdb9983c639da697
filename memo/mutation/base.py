"""The operator framework: what a mutant is and the operator registry.

An operator is a small class with a ``name``, a one-line ``summary`` and an ``apply(editor)`` method that
edits the copy of the model held by an :class:`~memo.mutation.editor.Editor` (which also carries the
random generator, the coverage view and the lineage being written). Registering is one decorator:

    @register
    class MyOperator(MutationOperator):
        name = "MyOp"
        summary = "what it does"
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


class MutationOperator:
    """Base class of every operator (see module docstring)."""

    name: ClassVar[str] = ""
    summary: ClassVar[str] = ""
    # Secondary coverage criteria (memo.coverage.SECONDARY) the operator aims at: a mutant adding an item of one
    # of them is diverse too (TSM aims at input sizes and ranks, DType at dtypes).
    targets: ClassVar[tuple[str, ...]] = ()

    def apply(self, editor: Editor) -> None:  # pragma: no cover - abstract
        raise NotImplementedError


OPERATORS: dict[str, MutationOperator] = {}


def register(cls: type[MutationOperator]) -> type[MutationOperator]:
    if not cls.name or cls.name in OPERATORS:
        raise ValueError(f"operator {cls.__name__} needs a unique name (got {cls.name!r})")
    OPERATORS[cls.name] = cls()
    return cls
