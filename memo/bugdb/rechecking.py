"""One database bug rechecked: its files written to a scratch folder, its script run by a checker (``memo bugs
recheck`` passes :func:`memo.bugdb.recheck.recheck_folder`), the verdict recorded and applied
(:meth:`memo.bugdb.database.BugDatabase.record_recheck`)."""
from __future__ import annotations

import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping, Protocol

from memo.backends import find_spec
from memo.bugdb.database import BugDatabase
from memo.bugdb.files import export_bug_files
from memo.bugdb.records import KnownBug
from memo.json_types import JsonObject
from memo.newest import build_text


class CheckResult(Protocol):
    """What a checker returns (``memo.bugdb.recheck.RecheckResult``)."""

    result: str  # reproduces | fixed | error
    detail: str
    versions: dict[str, str]
    seconds: float
    expected: str  # which expected output a numeric bug was judged by ("" for none)


class Checker(Protocol):
    def __call__(self, folder: Path, *, timeout_s: float = ...) -> CheckResult: ...


@dataclass(frozen=True)
class Rechecked:
    """One bug's recheck, as ``memo bugs recheck --json`` prints it."""

    id: str
    result: str
    detail: str
    versions: dict[str, str]
    seconds: float
    installed: str
    change: str  # what it did to the bug's status ("fixed in ...", "regression: ..."), empty if nothing
    expected: str = ""  # which expected output a numeric bug was judged by: as recorded, compressed, rerun

    def to_json(self) -> JsonObject:
        return {"id": self.id, "result": self.result, "detail": self.detail, "versions": self.versions,
                "seconds": self.seconds, "installed": self.installed, "change": self.change,
                "expected": self.expected}


def installed_version(library: str, versions: Mapping[str, str]) -> str:
    """The blamed library's installed version as a status detail: its spec's distributions that the check saw
    (``onnxruntime 1.22.0``; ``keras 3.15.1, jax 0.10.2``), else every version the check saw."""
    spec = find_spec(library)
    text = build_text(tuple(spec.distributions) if spec is not None else (), versions, "")
    return text or ", ".join(f"{name} {versions[name]}" for name in sorted(versions)) or "unknown version"


def recheck_bug(db: BugDatabase, bug: KnownBug, check: Checker, *, timeout_s: float,
                upstream: bool = False) -> Rechecked:
    """Run ``bug``'s script through ``check`` in a scratch folder and record the verdict."""
    if "repro.py" not in db.files(bug.id):
        return record_outcome(db, bug, None, upstream=upstream)
    with tempfile.TemporaryDirectory(prefix=f"memo-recheck-{bug.id}-") as scratch:
        return record_outcome(db, bug, check(export_bug_files(db, bug.id, Path(scratch)), timeout_s=timeout_s),
                              upstream=upstream)


def record_outcome(db: BugDatabase, bug: KnownBug, outcome: CheckResult | None, *,
                   upstream: bool = False) -> Rechecked:
    """Record a checker's verdict on ``bug`` (None: the bug has no script to run) and apply it to its status;
    ``upstream``: the check ran on the newest code (:meth:`memo.bugdb.database.BugDatabase.record_recheck`)."""
    if outcome is None:
        result, detail, versions, seconds = "error", "no repro.py stored for this bug", {}, 0.0
    else:
        result, detail = outcome.result, outcome.detail
        versions, seconds = dict(outcome.versions), float(outcome.seconds)
    installed = installed_version(bug.library, versions)
    change = db.record_recheck(bug.id, result, detail, versions, seconds, installed, upstream=upstream)
    return Rechecked(id=bug.id, result=result, detail=detail, versions=versions, seconds=seconds,
                     installed=installed, change=change, expected=getattr(outcome, "expected", "") or "")
