"""Running a bug's ``repro.py`` in a fresh process, with the interpreter its library needs, and reading whether it
reproduced (:func:`memo.script_exit.interpret`). The process is run by the bug database's runner
(:func:`memo.bugdb.recheck.run_script`: its own session, killed with its children at the limit), with the same
limit for a hang's script (its own ``TIMEOUT_S``, the alarm's slack and a margin for imports)."""
from __future__ import annotations

import sys
import time
from dataclasses import dataclass
from pathlib import Path

from memo.bugdb.recheck import read_facts, run_script, wall_limit_s
from memo.defaults import HANG_CONFIRM_FACTOR
from memo.json_types import JsonObject
from memo.script_exit import interpret


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


def rerun_script(folder: Path, bug: JsonObject, *, timeout_s: float = 300.0, remember: bool = False) -> RerunResult:
    """Run ``folder/repro.py`` (``bug``: the folder's bug.json data) and interpret its exit status (``remember``:
    :func:`memo.bugdb.recheck.run_script`'s)."""
    python = str(bug.get("python") or sys.executable)
    started = time.monotonic()
    limit_s = wall_limit_s(read_facts(folder), timeout_s)
    run = run_script(folder, python, limit_s, remember=remember)
    output = f"{run.output}\n(timed out after {limit_s:g} s)" if run.timed_out else run.output
    return RerunResult(interpret(run.returncode, bug, timed_out=run.timed_out), run.returncode, output,
                       time.monotonic() - started, python)
