"""What a triage pass has left to do: numeric findings to localize, bugs to reduce, scripts to check, and the time
budget that finishes them (the campaign's final pass asks for it; the report suggests it)."""
from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from memo.bug_files import retried
from memo.kinds import NUMERIC_KINDS
from memo.store import BugRow, CampaignStore
from memo.triage.reduce_order import Backlog, backlog_of, reduce_again, triage_order

S_PER_PENDING_BUG = 30.0  # time to ask for per bug still to reduce (median reduction is well under this)
S_PER_PENDING_LOCALIZATION = 4.0


def pending_localizations(store: CampaignStore) -> list[int]:
    """NaN/inconsistency verdicts not yet localized, round-robin over (kind, library): the first finding
    of every library before the second of any."""
    done = store.triage.localizations()
    groups: dict[tuple[str, str], list[int]] = {}
    localized: dict[tuple[str, str], int] = {}
    for row in store.signed_verdicts(NUMERIC_KINDS):  # their kind and library only: no result or model read
        key = (row.kind, row.backend)
        if row.id in done:
            localized[key] = localized.get(key, 0) + 1
        else:
            groups.setdefault(key, []).append(row.id)
    order: list[int] = []
    depth = 0
    while any(len(ids) > depth for ids in groups.values()):
        for key in sorted(groups, key=lambda k: (localized.get(k, 0), k)):
            if len(groups[key]) > depth:
                order.append(groups[key][depth])
        depth += 1
    return order


def pending_bugs(store: CampaignStore, every: list[BugRow] | None = None) -> list[BugRow]:
    """Bugs to triage: without a folder, whose reduction ran out of time, or adopted with an older reducer's
    (:func:`memo.triage.reduce_order.reduce_again`); distinct root causes first
    (:func:`memo.triage.reduce_order.triage_order`). Unlocalized numeric buckets are not bugs yet (their findings
    get localized). ``every``: the store's bugs, when the caller has read them already."""
    return _pending(store.triage.load_bugs() if every is None else every)


def _pending(every: list[BugRow]) -> list[BugRow]:
    """:func:`pending_bugs` among ``every`` bug of a store."""
    todo = [bug for bug in every if not bug.unlocalized and bug.merged_into is None
            and (not (bug.bug_dir and Path(bug.bug_dir).exists()) or retried(bug.reduction) or reduce_again(bug))]
    return triage_order(todo, every)


def backlog(store: CampaignStore) -> Backlog:
    """:func:`pending_bugs` split as triage orders them (:func:`memo.triage.reduce_order.backlog_of`)."""
    every = store.triage.load_bugs()  # read once for both
    return backlog_of(_pending(every), every)


def distinct_waiting(bugs: Iterable[BugRow], every: list[BugRow]) -> int:
    """How many of ``bugs`` (pending, in triage order, among ``every`` bug of the store) would be entries of their
    own (:class:`Backlog`'s ``distinct``): what a bug unit's share of triage time counts
    (:func:`memo.triage.turns.weight`)."""
    return backlog_of(bugs, every).distinct


def seconds_for(bugs: int, localizations: int) -> float:
    """A time budget that finishes ``bugs`` reductions and ``localizations``: the campaign's final pass asks for
    it, and the report suggests it to continue."""
    return S_PER_PENDING_BUG * bugs + S_PER_PENDING_LOCALIZATION * localizations


def seconds_wanted(store: CampaignStore) -> float:
    """:func:`seconds_for` the triage still to do in ``store``."""
    return seconds_for(len(pending_bugs(store)), len(pending_localizations(store)))


def unchecked_scripts(store: CampaignStore) -> list[BugRow]:
    """Finished bugs whose script was written but never run (the pass ran out of time in between); not one to reduce
    (again): its next folder's script is checked."""
    return [bug for bug in store.triage.load_bugs() if bug.merged_into is None and bug.reproduces is None
            and bug.repro and Path(bug.repro).exists() and bug.bug_dir
            and not retried(bug.reduction) and not reduce_again(bug)]
