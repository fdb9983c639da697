"""How a bug's standalone script ended, read (stdlib only): exit 0 reproduces, 1 does not; a bug that killed memo's
worker reproduces by the same signal or exit code, a hang by its own alarm. Below triage, which writes and re-runs
the scripts (:mod:`memo.triage.rerun`), and the bug database, which rechecks them on other library versions."""
from __future__ import annotations

import re
import signal
from typing import Any, Mapping

# A hang's script decides itself: still running after twice the limit, it says "reproduces" (or, hung in code
# that holds the GIL, its alarm ends it by SIGALRM this many seconds later). Killing it from outside decides
# nothing, so a re-run waits this much longer than the script's own limit (its imports, the alarm).
ALARM_SLACK_S = 10
HANG_RERUN_MARGIN_S = 120.0

_DEATH_IN_MESSAGE = (("signal", re.compile(r"killed by signal (\d+)")), ("exit", re.compile(r"exited with code (\d+)")))


def expected_death(bug: Mapping[str, Any]) -> tuple[str, int] | None:
    """``("signal", N)`` or ``("exit", N)`` when the bug is its worker dying rather than raising; else None.

    A dead worker is recorded as exception ``WorkerDied`` with the message "worker process killed by
    signal N (NAME)" / "exited with code N"; older records say ``signal N`` / ``exit N`` as the exception.
    """
    exception = str(bug.get("exception") or "")
    named = re.fullmatch(r"(signal|exit) (\d+)", exception)
    if named:
        return named.group(1), int(named.group(2))
    if exception == "WorkerDied":
        message = str(bug.get("error_message") or bug.get("message") or "")
        for how, pattern in _DEATH_IN_MESSAGE:
            found = pattern.search(message)
            if found:
                return how, int(found.group(1))
    return None


def interpret(returncode: int | None, bug: Mapping[str, Any], *, timed_out: bool = False) -> bool | None:
    """0: reproduces; 1: does not; killed by the bug's own signal (or exiting with the dead worker's own
    code), or for a hang by its own alarm: reproduces; another signal: does not; anything else, and a script
    killed from outside (``timed_out``: it never said whether the model ran past its limit), unknown."""
    if timed_out:
        return None
    if bug.get("kind") == "hang" and returncode == -signal.SIGALRM:
        return True
    death = expected_death(bug)
    if returncode is not None and death is not None and death[0] == "exit" and returncode == death[1]:
        return True
    if returncode == 0:
        return True
    if returncode == 1:
        return False
    if returncode is not None and returncode < 0 and death is not None:
        return death == ("signal", -returncode)
    return None
