"""Running a bug's ``repro.py`` in a fresh process, with the interpreter its library needs."""
from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from memo.defaults import HANG_CONFIRM_FACTOR
from memo.json_types import JsonObject
from memo.triage.bugdir import REPRO_FILE

OUTPUT_TAIL = 4000
# A hang's script decides itself: still running after twice the limit, it says "reproduces" (or, hung in code
# that holds the GIL, its alarm ends it by SIGALRM this many seconds later). Killing it from here decides
# nothing, so ``rerun_script`` waits this much longer than the script's own limit (its imports, the alarm).
ALARM_SLACK_S = 10
HANG_RERUN_MARGIN_S = 120.0


def hang_limit_s(timeout_s: float) -> float:
    """How long a hang's script lets the model run before it says "reproduces": twice memo's per-model limit
    ``timeout_s``, as triage confirms a hang (:data:`memo.defaults.HANG_CONFIRM_FACTOR`)."""
    return HANG_CONFIRM_FACTOR * timeout_s


@dataclass
class RerunResult:
    reproduces: bool | None  # None: the script could not run (missing library, set-up error)
    returncode: int | None
    output: str
    seconds: float
    python: str

    def verdict(self) -> str:
        if self.reproduces is None:
            return "could not run the script"
        return "reproduces" if self.reproduces else "does not reproduce"


_DEATH_IN_MESSAGE = (("signal", re.compile(r"killed by signal (\d+)")), ("exit", re.compile(r"exited with code (\d+)")))


def expected_death(bug: JsonObject) -> tuple[str, int] | None:
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


def interpret(returncode: int | None, bug: JsonObject, *, timed_out: bool = False) -> bool | None:
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


def _text(data: bytes | str | None) -> str:
    return data.decode(errors="replace") if isinstance(data, bytes) else (data or "")


def rerun_script(folder: Path, bug: JsonObject, *, timeout_s: float = 300.0) -> RerunResult:
    """Run ``folder/repro.py`` (``bug``: the folder's bug.json data) and interpret its exit status."""
    python = bug.get("python") or sys.executable
    if bug.get("kind") == "hang":  # let the script reach its own verdict (see ALARM_SLACK_S)
        timeout_s = max(timeout_s, hang_limit_s(float(bug.get("timeout_s") or 60.0)) + HANG_RERUN_MARGIN_S)
    env = {k: v for k, v in os.environ.items() if k != "KERAS_BACKEND"}  # the script sets its own
    env.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    started = time.monotonic()
    timed_out = False
    try:
        completed = subprocess.run([python, REPRO_FILE], cwd=folder, env=env, capture_output=True, text=True,
                                   timeout=timeout_s, check=False)
        returncode, output = completed.returncode, completed.stdout + completed.stderr
    except subprocess.TimeoutExpired as exc:
        returncode, timed_out = None, True
        output = f"{_text(exc.stdout)}{_text(exc.stderr)}\n(timed out after {timeout_s:g} s)"
    except OSError as exc:
        returncode, output = None, f"cannot start {python}: {exc}"
    return RerunResult(interpret(returncode, bug, timed_out=timed_out), returncode, output[-OUTPUT_TAIL:], time.monotonic() - started,
                       python)
