"""A hang's minimal script: the library's call under a watchdog. ``faulthandler.dump_traceback_later(..., exit=True)``
runs in a C thread of its own, so it fires even while the hanging call holds the GIL in native code: it prints every
thread's Python stack ("Timeout (0:03:00)!") and exits the process with status 1, which the check reads as the bug
showing. The limit is six times the campaign's per-model limit, three to five minutes, where the reference ran the
model in seconds: t64's reader ran its "hang" scripts without their watchdog of then (twice the limit, one minute)
and saw every one finish, in 28 to 105 s (a tf2onnx optimizer pass taking 76 s on one MultiHeadAttention layer), slow
runs a maintainer does not take for hangs. A call still running after three minutes on a one-layer model is."""
from __future__ import annotations

from memo.filing.folder import BugFolder

HANG = "hang"
LIMIT_FACTOR = 6.0  # the watchdog's limit in per-model limits
MIN_LIMIT_S = 180.0
MAX_LIMIT_S = 300.0
START_S = 90.0  # the imports and the model's build before the call: a hang's check may run its limit and this


def hang_limit_s(folder: BugFolder) -> int:
    """Seconds the script's call may run before the watchdog calls it a hang."""
    return int(min(MAX_LIMIT_S, max(MIN_LIMIT_S, LIMIT_FACTOR * float(folder.info.get("timeout_s") or 0))))


def check_limit_s(folder: BugFolder, other_s: float) -> float:
    """How long a check may run ``folder``'s script: a hang's watchdog limit and its start; ``other_s`` for another
    bug."""
    return hang_limit_s(folder) + START_S if folder.kind == HANG else other_s


def watchdog_lines(folder: BugFolder) -> list[str]:
    """The lines before a hang's call ([] for another bug)."""
    if folder.kind != HANG:
        return []
    limit = hang_limit_s(folder)
    return ["import faulthandler",
            f"faulthandler.dump_traceback_later({limit}, exit=True)  # still running after {limit} s: the hang "
            "(prints where, exits 1)"]


__all__ = ["HANG", "check_limit_s", "hang_limit_s", "watchdog_lines"]
