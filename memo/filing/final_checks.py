"""The minimal scripts a campaign writes and checks itself, so that its report is fileable without a second command.

A bug is worth a check when it would be "ready to file" with one: reduced (its reduction finished), its repro.py not
failing, not merged into another, and (a numeric bug) not set apart by its float64 truth. The campaign's final pass
checks them first (each makes an entry ready for a few seconds, a reduction costs a minute and a check too), then
again after its reductions, most frequent first and the newest first among equals, within its time: a check is a
fresh process importing the library, so one starts only with :data:`memo.triage.passes.SCRIPT_CHECK_S` left, and
one the deadline cuts short keeps nothing (``memo report NAME --issue-scripts`` does it later). While bugs still
wait for reduction, the checks keep a share of the final pass (:func:`reserve_s`). The background triage calls
:func:`check_one` between its passes. The ordering and the budget are pure functions of the bugs' records, tested
without a library. A bug whose repro.py could not run on the newest code is decided there by its checked minimal
script (:func:`newest_by_minimal`).
"""
from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable

from memo.bug_files import NEWEST_FILE
from memo.filing.check import CheckCutShort, cached_minimal, minimal_script, run_candidate
from memo.filing.script import Candidate
from memo.newest import CANNOT_RUN, FIXED_UPSTREAM, STILL_REPRODUCES
from memo.triage.newest import recorded_next_python
from memo.filing.folder import BUG_FILE, NUMERIC_KINDS, BugFolder
from memo.store import BugRow, CampaignStore
from memo.bug_files import retried
from memo.triage.passes import SCRIPT_CHECK_S

# What one bug's check takes on a loaded 2-core machine: a fresh process importing its library (Keras on torch
# or JAX: 8-20 s), sometimes a second candidate. Used to size the share of the final pass kept for checks.
CHECK_ESTIMATE_S = 20.0
# While bugs still wait for reduction, at most this share of the final pass is kept for checks; once nothing waits,
# the checks get all that is left.
CHECK_SHARE = 0.5
CONFIRMED = "confirmed"  # the float64 truth's decision that keeps a numeric bug in "ready to file"


@dataclass(frozen=True)
class ScriptTodo:
    """A bug whose minimal script is still to check: where its folder is, how often and when it was seen."""

    bug_id: str
    folder: Path
    occurrences: int
    first_seen: float


@dataclass
class ChecksDone:
    """What a run of checks did: bugs ``checked`` (``reproducing`` of them), and those ``left`` unchecked."""

    checked: int = 0
    reproducing: int = 0
    left: list[str] = field(default_factory=list)
    seconds: float = 0.0

    def then(self, later: "ChecksDone") -> "ChecksDone":
        """This run and a ``later`` one together (what is left is what the later one left)."""
        return ChecksDone(self.checked + later.checked, self.reproducing + later.reproducing, list(later.left),
                          self.seconds + later.seconds)


def would_be_ready(bug: BugRow, info: dict[str, object] | None = None) -> bool:
    """Whether ``bug`` would be "ready to file" once its minimal script reproduces: reduced by a finished reduction,
    repro.py not failing, not merged; ``info`` (its bug.json): a numeric bug's float64 truth confirms it, or is
    still to compute."""
    reduced = (bug.reduced_layers is not None and bug.original_layers is not None
               and bug.reduced_layers < bug.original_layers)
    finished = not retried(bug.reduction)
    if not (reduced and finished and bug.reproduces is not False and bug.merged_into is None and bug.bug_dir):
        return False
    truth = (info or {}).get("truth") if bug.kind in NUMERIC_KINDS else None
    decision = truth.get("decision") if isinstance(truth, dict) else None
    return decision in (None, CONFIRMED)


def check_order(todos: Iterable[ScriptTodo]) -> list[ScriptTodo]:
    """Most frequent first, the newest first among equals."""
    return sorted(todos, key=lambda todo: (-todo.occurrences, -todo.first_seen, todo.bug_id))


def reserve_s(todos: int, pass_s: float, waiting: bool = True) -> float:
    """The seconds of a ``pass_s`` final pass kept for ``todos`` checks: what they need, at most
    :data:`CHECK_SHARE` of the pass while bugs are ``waiting`` for reduction, the whole pass otherwise."""
    need = todos * CHECK_ESTIMATE_S
    return min(need, CHECK_SHARE * pass_s if waiting else pass_s)


def _bug_info(folder: Path) -> dict[str, object] | None:
    try:
        return json.loads((folder / BUG_FILE).read_text())
    except (OSError, ValueError):
        return None


def scripts_to_check(store: CampaignStore) -> list[ScriptTodo]:
    """The bugs of ``store`` that would be ready to file whose minimal script was not checked (or was checked on an
    older folder), in :func:`check_order`."""
    todos = []
    for bug in store.triage.load_bugs():
        folder = Path(bug.bug_dir) if bug.bug_dir else None
        info = _bug_info(folder) if folder is not None else None
        if folder is None or info is None or not would_be_ready(bug, info):
            continue
        if cached_minimal(BugFolder(folder, info)) is None:
            todos.append(ScriptTodo(bug.id, folder, bug.occurrences, bug.first_seen))
    return check_order(todos)


def check_one(todo: ScriptTodo, deadline: float) -> bool | None:
    """Write and check ``todo``'s minimal script, ending by ``deadline`` (monotonic clock): whether it reproduces;
    None when the check decided nothing (no time to finish it, a process killed before it ran: nothing kept)."""
    try:
        result = minimal_script(todo.folder, deadline=deadline)
    except CheckCutShort:
        return None
    return None if result.inconclusive else result.reproduces


def run_checks(todos: list[ScriptTodo], until: float, check: Callable[[ScriptTodo, float], bool | None] = check_one,
               clock: Callable[[], float] = time.monotonic) -> ChecksDone:
    """Check ``todos`` in their order until ``until`` (monotonic clock): none starts with less than
    :data:`SCRIPT_CHECK_S` left, and the rest are ``left``."""
    done = ChecksDone()
    started = clock()
    for index, todo in enumerate(todos):
        if until - clock() < SCRIPT_CHECK_S:
            done.left += [later.bug_id for later in todos[index:]]
            break
        outcome = check(todo, until)
        if outcome is None:
            done.left.append(todo.bug_id)
            continue
        done.checked += 1
        done.reproducing += outcome
    done.seconds = clock() - started
    return done


def final_checks(store: CampaignStore, until: float) -> ChecksDone:
    """The final pass's checks: every bug of ``store`` that would be ready to file, until ``until``."""
    return run_checks(scripts_to_check(store), until)


def newest_by_minimal(store: CampaignStore, until: float, clock: Callable[[], float] = time.monotonic) -> int:
    """Rerun on the newest code the checked minimal script of each bug whose repro.py could not run there (t54: a
    JAX remat crash's repro.py met another tracer error on keras-nightly, while the script the issue attaches ran to
    its end there: the bug is fixed). Its verdict replaces the stored one where it decides (reproduces, or ran to
    its end: fixed); how many were rerun. None starts with less than :data:`SCRIPT_CHECK_S` left before ``until``."""
    python = recorded_next_python(store.get_meta("config", {}) or {})
    rerun = 0
    for bug in store.triage.load_bugs() if python else []:
        newest = bug.newest or {}
        if newest.get("result") != CANNOT_RUN or bug.merged_into is not None or not bug.bug_dir:
            continue
        folder = BugFolder.read(Path(bug.bug_dir))
        kept = cached_minimal(folder)
        if kept is None or not kept.reproduces or not kept.text:
            continue
        if until - clock() < SCRIPT_CHECK_S:
            break
        began = time.time()
        run = run_candidate(folder, Candidate(kept.text, kept.files, python=str(python)),
                            max(1.0, until - clock()))
        rerun += 1
        ended = run.exit_code == 0  # ran to its end: the bug did not show
        if not (run.reproduces or ended):
            continue
        outcome = {**newest, "result": STILL_REPRODUCES if run.reproduces else FIXED_UPSTREAM,
                   "detail": ("the issue's minimal script " + ("reproduces there" if run.reproduces else
                              "ran to its end there: the bug does not show") +
                              f"; repro.py could not run there ({newest.get('detail') or 'no detail'})")[:400],
                   "seconds": round(time.time() - began, 1), "checked": time.time(), "remembered": None,
                   "by": "minimal script"}
        store.triage.update_bug(bug.id, newest=outcome)
        (Path(bug.bug_dir) / NEWEST_FILE).write_text(json.dumps(outcome, indent=1, sort_keys=True))
    return rerun
