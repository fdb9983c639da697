"""A hang's minimal script: the library's call under a watchdog. ``faulthandler.dump_traceback_later(..., exit=True)``
runs in a C thread of its own, so it fires even while the hanging call holds the GIL in native code: it prints every
thread's Python stack ("Timeout (0:01:00)!") and exits the process with status 1, which the check reads as the bug
showing. The limit is twice the campaign's timeout (one to one and a half minutes): the reference ran the model in seconds."""
from __future__ import annotations

from memo.filing.folder import BugFolder

HANG = "hang"
MIN_LIMIT_S = 60.0
MAX_LIMIT_S = 90.0  # the imports and the model's build first, all within the check's 120 s (memo.filing.check)


def hang_limit_s(folder: BugFolder) -> int:
    """Seconds the script's call may run before the watchdog calls it a hang."""
    return int(min(MAX_LIMIT_S, max(MIN_LIMIT_S, 2 * float(folder.info.get("timeout_s") or 0))))


def watchdog_lines(folder: BugFolder) -> list[str]:
    """The lines before a hang's call ([] for another bug)."""
    if folder.kind != HANG:
        return []
    limit = hang_limit_s(folder)
    return ["import faulthandler",
            f"faulthandler.dump_traceback_later({limit}, exit=True)  # still running after {limit} s: the hang "
            "(prints where, exits 1)"]


__all__ = ["HANG", "hang_limit_s", "watchdog_lines"]
