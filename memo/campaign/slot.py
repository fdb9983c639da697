"""A timed campaign's slot: fuzzing, then the models in flight and the final triage pass, all ending by the
slot's end.

A nightly run is given a slot (``--hours 6``) and must be over when it ends. By default the budget covers
fuzzing and the final phase together: the final phase gets a tenth of it (:func:`split_budget`), and
fuzzing stops early enough to leave it. ``--final-triage MINUTES`` gives the final phase its own bound
instead, after the whole budget of fuzzing. What the final phase cannot finish is left to
``memo report NAME --triage`` (the summary says how much).

The slot is counted from the command's start (:attr:`Slot.started`, the monotonic clock), so the start-up
(seeds, workers) is inside it too.
"""
from __future__ import annotations

import time
from dataclasses import dataclass

FINAL_SHARE = 0.1  # of a timed budget, for the models in flight and the final triage pass
FINAL_MIN_S = 15.0
FINAL_MAX_S = 1200.0
FINAL_ITERATIONS_S = 1800.0  # a campaign bounded by iterations only: the final pass ends when done, or then
CLOSING_MAX_S = 20.0  # kept out of the final pass: closing the workers, the last writes, the report


def final_share(slot_s: float) -> float:
    """The default final phase of a ``slot_s`` budget: a tenth, 15 s to 20 min, and never over half of it."""
    return min(FINAL_MAX_S, max(FINAL_MIN_S, FINAL_SHARE * slot_s), 0.5 * slot_s)


def split_budget(slot_s: float | None, final_triage_s: float | None) -> tuple[float | None, float]:
    """``(fuzzing seconds, final phase seconds)`` for a budget of ``slot_s`` (None: iterations only) and an
    explicit ``--final-triage`` bound (None: a share of the budget; given: its own bound, after the budget)."""
    if final_triage_s is not None:
        return slot_s, final_triage_s
    if slot_s is None:
        return None, FINAL_ITERATIONS_S
    final = final_share(slot_s)
    return slot_s - final, final


@dataclass(frozen=True)
class Slot:
    """This run's time plan on the monotonic clock: fuzzing until :meth:`fuzzing_ends`, everything over by
    :meth:`ends` (None without a time budget)."""

    started: float
    fuzzing_s: float | None  # fuzzing seconds left to this run (a resume's earlier runs already spent some)
    final_s: float

    def fuzzing_ends(self) -> float | None:
        return None if self.fuzzing_s is None else self.started + max(0.0, self.fuzzing_s)

    def ends(self) -> float | None:
        fuzzing_ends = self.fuzzing_ends()
        return None if fuzzing_ends is None else fuzzing_ends + self.final_s

    def fuzzing_over(self, now: float) -> bool:
        fuzzing_ends = self.fuzzing_ends()
        return fuzzing_ends is not None and now >= fuzzing_ends

    def final_deadline(self, fuzzing_stopped: float) -> float:
        """When the final phase must be over: its bound after fuzzing stopped, and never after the slot's end
        (a last step that waited for a model's outcome does not push the end)."""
        deadline = fuzzing_stopped + self.final_s
        ends = self.ends()
        return deadline if ends is None else min(deadline, ends)

    def closing_s(self) -> float:
        """The part of the final phase kept for closing the workers and writing the report."""
        return min(CLOSING_MAX_S, self.final_s / 3)

    def plan(self) -> dict[str, float | None]:
        """The split as the reporters print it: seconds of fuzzing and of final phase, and the slot's end as
        a wall-clock time (None without a time budget)."""
        ends = self.ends()
        wall_end = None if ends is None else round(time.time() + (ends - time.monotonic()), 1)
        return {"fuzzing_s": self.fuzzing_s, "final_s": self.final_s, "ends_at": wall_end}
