"""Which pending bug triage reduces first, when its time cannot reduce them all.

A reduction makes an entry ready only when it is the first of its root cause: its duplicates merge into it once
reduced. Before reduction, a bug's *root guess* tells duplicates apart cheaply: what its signature says of where
the library failed (kind, library, stage, exception, the innermost library frames and the operators the message
names; the message only when there are no frames; a numeric or training bug's blamed layer class). On n40, four
keras-openvino TypeErrors and four keras-tensorflow ValueErrors with one guess each merged into one entry after
reduction. So a pending bug whose guess is that of a bug already reduced, or of one ahead of it in the order, waits
until every distinct guess had its turn (of two with one guess, a partly reduced one goes first: it is closer to
ready); among equals, never-tried bugs first, then the partly reduced ones by the reduction time they had, least
first (long150d: two training reductions of 20 and 22 occurrences, ahead of the others by their counts, took every
turn for 100 minutes), then the most frequent, then the oldest. A bug adopted from the bug
database to be reduced again (:func:`reduce_again`) is ordered as a partly reduced one: its folder is usable, a
smaller model is closer to fileable.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Iterable

from memo.backends.documented import upstream_of
from memo.backends.spec import UNLIKELY_FIXED
from memo.bug_files import Reduction, standing
from memo.kinds import NUMERIC_KINDS, TRAINING_KINDS, VerdictKind
from memo.store import BugRow
from memo.triage.bug_reduction import TRIED_AGAIN, reduces_further

OPERATOR = re.compile(r"\b(?:onnx|aten|prim)::(\w+)|op_type:\s*(\w+)")  # onnx::Cast, op_type:ReduceMax
CHECK_FAILED = re.compile(r"Check failed: (.{1,120})")
ROOT_FRAMES = 3  # innermost library frames in a root guess (the signature keeps more)


def root_guess(bug: BugRow) -> tuple[str, ...]:
    """What ``bug``'s signature says of its root cause before reduction (equal guesses: likely duplicates)."""
    parts = bug.parts
    if bug.kind in NUMERIC_KINDS:
        return (bug.kind, bug.library, str(parts.get("layer") or ""))
    if bug.kind in TRAINING_KINDS and bug.kind != "training-crash":  # its stage and layer, or its precisions
        return (bug.kind, bug.library, str(parts.get("stage") or bug.stage or ""), str(parts.get("layer") or ""),
                str(parts.get("weights") or ""), str(parts.get("optimizer") or ""))
    frames = [str(frame) for frame in parts.get("frames") or []][:ROOT_FRAMES]
    message = str(parts.get("message") or parts.get("feature") or "")
    # the failing operator a converter's message names tells apart failures that share a helper's frames
    operators = sorted({name for pair in OPERATOR.findall(message) for name in pair if name})
    # a C++ check's own words tell apart failures a generic binding or shape-inference helper raises (MXNet's
    # simple_bind: a take operator's index type, a broadcast's shapes, an input's dtype)
    checks = CHECK_FAILED.findall(message)
    where = [*frames, *operators, *checks[-1:]] if frames else [message]
    return (bug.kind, bug.library, str(bug.stage or parts.get("stage") or ""), str(parts.get("exception") or ""),
            str(parts.get("layer") or ""), *where)


# A training-mode output difference adopted with more layers than this is triaged again (from its new finding's
# model): before the forward probe localized such differences, t52's 17-layer model was titled after its last
# Activation; the probe cuts it to the first layer whose output differs (issue 40: median at most 3 layers).
UNLOCALIZED_FORWARD_LAYERS = 3


def reduce_again(bug: BugRow) -> bool:
    """Whether ``bug``, adopted from the bug database with a reduction an older reducer made, is to be reduced again
    from its adopted model (:func:`memo.triage.bug_reduction.reduces_further`). A training bug's reduction starts
    from its finding's model (:mod:`memo.triage.training_bug`), so its adopted one stays, but for a training-mode
    output difference left larger than :data:`UNLOCALIZED_FORWARD_LAYERS` (unless a triage again failed)."""
    if bug.kind in TRAINING_KINDS:
        reduction = bug.reduction if isinstance(bug.reduction, dict) else {}
        layers = reduction.get("reduced_layers")
        return (bug.kind != VerdictKind.TRAINING_CRASH.value and bool(bug.bug_dir) and bug.stage == "forward"
                and Reduction.of(reduction) is Reduction.KNOWN and not reduction.get(TRIED_AGAIN)
                and isinstance(layers, int) and layers > UNLOCALIZED_FORWARD_LAYERS)
    return bool(bug.bug_dir) and reduces_further(bug.reduction)


def stands_for_its_root(bug: BugRow) -> bool:
    """Whether ``bug`` is reduced (or adopted from the bug database, as it stays) and not merged: its root guess is
    taken."""
    return (bug.merged_into is None and bool(bug.bug_dir) and standing(bug.reduction)
            and not reduce_again(bug))


def triage_order(pending: Iterable[BugRow], others: Iterable[BugRow]) -> list[BugRow]:
    """``pending`` in the order to reduce them: one bug per root guess not taken by a bug of ``others`` that
    :func:`stands_for_its_root` (a partly reduced one before a never-tried one: it is closer to ready), then the
    likely duplicates; each part never-tried first, then the least reduction time (:func:`reduction_seconds`), then
    by occurrences, then the oldest; the bugs of a library no tracker would fix (:func:`unfileable`) after all of
    them."""
    taken = {root_guess(bug) for bug in others if stands_for_its_root(bug)}
    ranked = sorted(pending, key=lambda bug: (bug.attempted, reduction_seconds(bug), -bug.occurrences, bug.first_seen))
    owners: dict[tuple[str, ...], str] = {}
    for bug in sorted(ranked, key=lambda bug: not bug.attempted):  # stable: the ranking within each part
        guess = root_guess(bug)
        if guess not in taken:
            owners.setdefault(guess, bug.id)
    distinct = [bug for bug in ranked if owners.get(root_guess(bug)) == bug.id]
    ordered = distinct + [bug for bug in ranked if owners.get(root_guess(bug)) != bug.id]
    return sorted(ordered, key=unfileable)  # stable: the order above within each part


def reduction_seconds(bug: BugRow) -> float:
    """The seconds ``bug``'s unfinished reduction has had over its passes (its document's; 0 when never tried)."""
    reduction = bug.reduction if isinstance(bug.reduction, dict) else {}
    seconds = reduction.get("seconds")
    return float(seconds) if isinstance(seconds, (int, float)) else 0.0


def unfileable(bug: BugRow) -> bool:
    """Whether no tracker would fix ``bug``: the library it is filed against (as triage's blame decided it, else the
    one that showed it, as the report reads it) is retired (MXNet) or a legacy path (torch.onnx's TorchScript
    exporter). Triage reduces such bugs after every other (t60: 4 of 30 bugs waiting at the end were MXNet's)."""
    return upstream_of(str(bug.blame.get("library") or bug.library)).status in UNLIKELY_FIXED


@dataclass(frozen=True)
class Backlog:
    """The bugs waiting for triage by what reducing them would give (:func:`backlog_of`)."""
    distinct: int  # fileable, and no reduced bug nor one ahead of it has its root guess: an entry still to make
    duplicates: int  # fileable, a likely duplicate of a reduced bug or of one ahead of it: merged once reduced
    unfileable: int  # filed against a retired library or a legacy path: reduced after every other

    @property
    def total(self) -> int:
        return self.distinct + self.duplicates + self.unfileable


def backlog_of(pending: Iterable[BugRow], others: Iterable[BugRow]) -> Backlog:
    """``pending`` (in :func:`triage_order`) split by what reducing each would give. long150c: of 34 bugs waiting at
    88 minutes, 10 were distinct and fileable, 13 likely duplicates and 11 MXNet's; the count alone overstated what
    the report still lacked threefold."""
    taken = {root_guess(bug) for bug in others if stands_for_its_root(bug)}
    distinct = duplicates = retired = 0
    for bug in pending:
        guess = root_guess(bug)
        if unfileable(bug):
            retired += 1
        elif guess in taken:
            duplicates += 1
        else:
            distinct += 1
            taken.add(guess)
    return Backlog(distinct, duplicates, retired)


def distinct_note(bugs: object, distinct: object) -> str:
    """`` (D of them distinct and fileable; ...)`` after a count of ``bugs`` waiting, of which ``distinct`` would be
    entries of their own (:class:`Backlog`); empty when that is all of them or is not known."""
    if not isinstance(bugs, int) or not isinstance(distinct, int) or not bugs or distinct == bugs:
        return ""
    return f" ({distinct} of them distinct and fileable; the others likely duplicates or on a retired library)"
