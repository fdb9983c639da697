"""Which model first showed each signature (a bug's, or a feature a converter declined), so that generation can
tell a model that re-finds what another model showed first (:class:`memo.campaign.feedback.Outcome`'s ``known``).

Built from the stored executions when a campaign starts (:func:`memo.campaign.disk.stored_signatures`: the signatures
stored with each finding when it was recorded), then told each execution's signatures as the pipeline signs and
stores it. The disk budget counts the same stored signatures (which artifacts stay): neither computes one.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable


@dataclass(frozen=True)
class ExecutionSignatures:
    """What one stored execution showed: the signatures of its bug findings and of the features a converter
    declined on it, with the folder its artifact was stored in (None: not kept)."""

    mutant_id: int
    bugs: tuple[str, ...] = ()
    declines: tuple[str, ...] = ()
    artifact_dir: str | None = None


@dataclass
class FirstShown:
    """Signature -> the mutant whose execution showed it first."""

    first: dict[str, int] = field(default_factory=dict)

    @classmethod
    def of(cls, stored: Iterable[ExecutionSignatures]) -> "FirstShown":
        """The memory of a campaign's stored executions, given in the order they were stored."""
        memory = cls()
        for execution in stored:
            memory.remember([*execution.declines, *execution.bugs], execution.mutant_id)
        return memory

    def remember(self, signatures: Iterable[str], mutant_id: int) -> None:
        """Note ``mutant_id`` as the first model that showed each of ``signatures`` not shown before."""
        for sig in signatures:
            self.first.setdefault(sig, mutant_id)

    def known_before(self, mutant_id: int, signatures: Iterable[str]) -> frozenset[str]:
        """Those of ``signatures`` (of an execution already remembered) that another model showed first."""
        return frozenset(sig for sig in signatures if self.first.get(sig, mutant_id) != mutant_id)
