"""Running a bug's ``repro.py`` in a fresh process, with the interpreter its library needs."""
from __future__ import annotations

import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from memo.bug_files import REPRO_FILE
from memo.defaults import HANG_CONFIRM_FACTOR
from memo.json_types import JsonObject
# How a script's end reads lives below triage (the bug database rechecks scripts too); triage names it from here.
from memo.script_exit import ALARM_SLACK_S, HANG_RERUN_MARGIN_S, expected_death, interpret  # noqa: F401

OUTPUT_TAIL = 4000


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
