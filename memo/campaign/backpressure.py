"""Fuzzing that waits for triage: pipelines paused while distinct bugs wait to be reduced.

Background triage shares the campaign's workers and cores with the fuzzing pipelines. Where fuzzing finds bugs faster
than triage reduces them, the backlog grows for as long as the campaign runs and the final pass cannot catch up:
long150e (a fresh bug database, about 25 models a minute) had 24 distinct bugs waiting after its first hour and 32 at
82 minutes, with the triage thread busy all the time. A pipeline's token held here is a model fewer running at once:
its share of the workers and cores goes to triage's candidates. One token is held per :data:`HOLD_STEP` distinct bugs
waiting, never the last one, and given back once the count falls :data:`RELEASE_GAP` below the mark that took it (a
count hovering at a mark does not pause and resume fuzzing every time it is recounted).
"""
from __future__ import annotations

import queue
import time
from typing import Generic, TypeVar

HOLD_STEP = 8  # distinct bugs waiting per pipeline paused
RELEASE_GAP = 4  # a pipeline resumes once the count is this far below the mark that paused it
PAUSED_META = "pipelines_paused_s"  # the store's meta: pipeline-seconds fuzzing waited for triage

Token = TypeVar("Token")


def pipelines_to_pause(distinct: int | None, paused: int, pipelines: int) -> int:
    """How many of ``pipelines`` to keep paused with ``distinct`` bugs waiting (None: not counted yet) and ``paused``
    paused now: one per :data:`HOLD_STEP`, at most all but one; fewer only below the hysteresis gap."""
    most = max(0, pipelines - 1)
    if distinct is None:
        return min(paused, most)
    wanted = min(most, distinct // HOLD_STEP)
    if wanted >= paused:
        return wanted
    while paused > wanted and distinct <= paused * HOLD_STEP - RELEASE_GAP:
        paused -= 1
    return paused


class TriageShare(Generic[Token]):
    """The pipeline tokens held back from fuzzing (:attr:`memo.campaign.pipeline.Pipeline.worker_sets`); a token is
    only taken when a pipeline has put it back, never waited for."""

    def __init__(self, tokens: queue.Queue[Token], pipelines: int) -> None:
        self.tokens = tokens
        self.pipelines = pipelines
        self.held: list[Token] = []
        self.paused_s = 0.0  # pipeline-seconds paused so far, for the campaign's record
        self._since = time.monotonic()

    def follow(self, distinct: int | None) -> int:
        """Pause or resume pipelines for ``distinct`` bugs waiting; how many are paused now."""
        self._account()
        wanted = pipelines_to_pause(distinct, len(self.held), self.pipelines)
        while len(self.held) < wanted:
            try:
                self.held.append(self.tokens.get_nowait())
            except queue.Empty:  # every pipeline is running a model: take one at a later step
                break
        while len(self.held) > wanted:
            self.tokens.put(self.held.pop())
        return len(self.held)

    def release(self) -> None:
        """Give every token back (fuzzing is over: the models in flight must not wait for triage)."""
        self._account()
        while self.held:
            self.tokens.put(self.held.pop())

    def _account(self) -> None:
        now = time.monotonic()
        self.paused_s += len(self.held) * (now - self._since)
        self._since = now
