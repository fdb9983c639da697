"""Why a campaign stops before its budget: SIGINT/SIGTERM, or a request (a full disk, the disk budget)."""
from __future__ import annotations

import signal
import threading
from typing import Any

from memo.campaign.disk import STOP_DISK_FULL

BUDGET_SPENT = "budget spent"


class StopFlag:
    """Set by SIGINT/SIGTERM (or :meth:`request`); the loop checks it between steps and stops cleanly
    within seconds."""

    def __init__(self) -> None:
        self.reason: str | None = None
        self._previous: dict[int, Any] = {}

    def install(self) -> None:
        if threading.current_thread() is not threading.main_thread():
            return
        for sig in (signal.SIGINT, signal.SIGTERM):
            self._previous[sig] = signal.signal(sig, self._handle)

    def restore(self) -> None:
        for sig, handler in self._previous.items():
            signal.signal(sig, handler)
        self._previous.clear()

    def request(self, reason: str) -> None:
        """Stop for ``reason`` (a full disk, say), unless a stop is under way already."""
        if self.reason is None:
            self.reason = reason

    def disk_full(self) -> None:
        """Stop because a write found the disk full (ENOSPC or a quota)."""
        self.request(STOP_DISK_FULL)

    def _handle(self, signum: int, _frame: Any) -> None:
        if self.reason is not None:  # a second Ctrl-C: stop waiting for executions too
            raise KeyboardInterrupt
        self.reason = "interrupted" if signum == signal.SIGINT else "terminated"

    def __bool__(self) -> bool:
        return self.reason is not None
