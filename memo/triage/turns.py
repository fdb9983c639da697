"""Which kind of triage unit goes next: every kind that has work gets an equal share of triage *time*
(virtual-time fair queuing), not an equal number of turns.

Taking turns by count (one bug, then one localization, ...) gave a bug's reduction (a minute or more) many times the
time of a localization (seconds each): in the 150-minute campaign long150 the numeric findings waiting for
localization rose from 5 after the first hour to 41 at the end of fuzzing while the bugs waiting stayed near 25. With
equal time, a kind with short units does several of them per reduction. A kind found without work is brought up to
the time of the kind that runs instead, so work that arrives after a quiet hour gets its share, not the whole of
triage until its counter has caught up. The counters live in the campaign store, so the shares carry over from one
background pass to the next (those passes are short).

Equal shares let bugs pile up: in the 150-minute campaign long150b the bugs waiting for reduction rose from 4 after
the first hour to 16 at the end of fuzzing (bugs arrived about one every 1.4 minutes; 8 reductions were cut short,
5 never started) while the other kinds kept their fifth each. So a kind's time is charged divided by its weight
(:func:`weight`): one share for every :data:`WAITING_PER_SHARE` units waiting, never less than one. A backlog
of bugs thus takes most of triage's time until it is down again, and no kind is ever starved. Bugs waiting count
only the distinct fileable ones (:func:`memo.triage.pending.distinct_waiting`): at minute 95 of long150g, 46 bugs
waited, 9 of them distinct, and their weight of 11 held the findings waiting for localization at 58 (21 after the
first hour)."""
from __future__ import annotations

import time
from contextlib import contextmanager
from typing import Any, Iterable, Iterator, Mapping, Protocol

UNIT_KINDS = ("bug", "newest", "localization", "truth", "script")
"""The kinds of unit of a pass; on equal time, the earlier goes first."""
TURN_META = "triage_time"
"""The store's meta key holding each kind's triage seconds (relative: the least is 0)."""
SPENT_META = "triage_spent"
"""The store's meta key holding, per kind of unit (and ``idle script`` for the checks between background passes),
the units done and their wall seconds, absolute and cumulative: where triage's time went (bench_long_campaign.py)."""
IDLE_SCRIPT = "idle script"
"""The :data:`SPENT_META` entry of the minimal-script checks the background triage does between its passes."""
FINAL_SCRIPTS = "final scripts"
"""The :data:`SPENT_META` entry of the final pass's minimal-script checks."""
PHASES_META = "triage_phases"
"""The store's meta key holding, per phase of triage's work (:func:`timed`: a bug's start check, reduction, final check,
folder, float64 and second-engine reassessment, script check, newest-code rerun; a training bug's whole triage), the
times it ran and its wall seconds. long150c (2026-11-30): bug units took 70 % of triage's time at about 40 s each while
the reductions' own records summed to a fifth of that; :data:`SPENT_META` alone could not say where the rest went."""
MIN_CHARGE_S = 1.0
"""The least a unit is charged: one that returns at once (a bug adopted from the database) still takes a turn."""
WAITING_PER_SHARE: dict[str, int] = {"bug": 4, "localization": 8}
"""Units waiting per extra share of triage time (kinds not named keep one share)."""


def weight(kind: str, waiting: int) -> float:
    """The share of triage time ``kind`` gets with ``waiting`` units left (1: an equal share)."""
    per_share = WAITING_PER_SHARE.get(kind)
    return max(1.0, waiting / per_share) if per_share else 1.0


class TurnClock:
    """Each kind's triage seconds; the kind with the least time that has work runs next."""

    def __init__(self, spent: object = None) -> None:
        known = spent if isinstance(spent, Mapping) else {}
        self.spent = {kind: _seconds(known.get(kind)) for kind in UNIT_KINDS}

    def order(self) -> list[str]:
        """The kinds in the order a step tries them: least time first, ties in :data:`UNIT_KINDS` order."""
        return sorted(UNIT_KINDS, key=lambda kind: (self.spent[kind], UNIT_KINDS.index(kind)))

    def ran(self, kind: str, seconds: float, idle: Iterable[str] = (), waiting: int = 0) -> None:
        """``kind`` did a unit that took ``seconds`` with ``waiting`` units of it left before it (:func:`weight`);
        the kinds in ``idle`` were tried before it and had no work."""
        now = self.spent[kind]
        for other in idle:
            self.spent[other] = max(self.spent[other], now)
        self.spent[kind] = now + max(seconds, MIN_CHARGE_S) / weight(kind, waiting)
        least = min(self.spent.values())
        self.spent = {name: round(value - least, 3) for name, value in self.spent.items()}

    def as_meta(self) -> dict[str, float]:
        """What the store keeps under :data:`TURN_META`."""
        return dict(self.spent)


def add_spent(spent: object, kind: str, seconds: float, units: int = 1) -> dict[str, dict[str, float]]:
    """``spent`` (the store's :data:`SPENT_META`, or nothing yet) with ``units`` more of ``kind`` that took
    ``seconds`` in all."""
    known = {name: dict(value) for name, value in spent.items() if isinstance(value, Mapping)} \
        if isinstance(spent, Mapping) else {}
    entry = known.setdefault(kind, {"units": 0, "seconds": 0.0})
    entry["units"] = int(entry.get("units", 0)) + units
    entry["seconds"] = round(_seconds(entry.get("seconds")) + max(0.0, seconds), 3)
    return known


class MetaStore(Protocol):
    """What :func:`timed` needs of a store (:class:`memo.store.CampaignStore` has it)."""

    def get_meta(self, key: str, default: Any = None) -> Any: ...

    def set_meta(self, key: str, value: Any) -> None: ...


@contextmanager
def timed(store: MetaStore, phase: str) -> Iterator[None]:
    """Add the wall seconds of the ``with`` block to ``phase`` in the store's :data:`PHASES_META` (also when the
    block raises)."""
    started = time.monotonic()
    try:
        yield
    finally:
        store.set_meta(PHASES_META, add_spent(store.get_meta(PHASES_META), phase, time.monotonic() - started))


class Laps:
    """A stopwatch over a unit's parts: each :meth:`lap` adds the wall seconds since the previous one (or the start) to
    the phase ``PREFIX PART`` of the store's :data:`PHASES_META` (long150d: a training bug's unit took 100 s on
    average, 80 % of triage's bug time, with no figure for its parts)."""

    def __init__(self, store: MetaStore, prefix: str) -> None:
        self.store, self.prefix, self.last = store, prefix, time.monotonic()

    def lap(self, part: str) -> None:
        now = time.monotonic()
        phases = add_spent(self.store.get_meta(PHASES_META), f"{self.prefix} {part}", now - self.last)
        self.store.set_meta(PHASES_META, phases)
        self.last = now


def _seconds(value: object) -> float:
    return float(value) if isinstance(value, (int, float)) and value >= 0 else 0.0
