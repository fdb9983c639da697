"""A bug folder's file names and its ``bug.json``: below triage, which writes the folders, and the bug database,
which stores and rechecks them (:mod:`memo.triage.bugdir` holds the layout and the rest)."""
from __future__ import annotations

import json
from enum import StrEnum
from pathlib import Path

from memo.json_types import JsonObject


class Reduction(StrEnum):
    """How a bug's reduction ended: ``bug.json``'s and the campaign store's ``reduction.status``. Stored as the
    value (a StrEnum writes its value to JSON), so stores and folders written before it read the same;
    :meth:`of` reads one back."""

    DONE = "done"
    TIMEOUT = "timeout"  # its time limit cut it short: a later pass continues from the folder's model
    NOT_REDUCED = "not reduced (no time or no executor)"  # a later pass reduces it
    # the finding's own model did not show it again: the report lists it as unconfirmed
    NOT_AGAIN = "not reduced: the model did not show the bug again when re-run (flaky or environment-dependent)"
    FINAL_CHECK_FAILED = "final check failed; original model kept"
    MODEL_NOT_STORED = "model not stored"
    # stored with what follows a colon: "triage failed: ValueError: ...", "known: M-0003, reduced model and script
    # copied from the bug database (...)" (a bug the database knew, adopted instead of reduced)
    TRIAGE_FAILED = "triage failed"
    KNOWN = "known"

    @classmethod
    def of(cls, reduction: object) -> Reduction | None:
        """The status of a stored ``reduction`` document (or a status string); None when there is none or memo
        does not know it."""
        status = reduction.get("status") if isinstance(reduction, dict) else reduction
        if not isinstance(status, str) or not status:
            return None
        for prefixed in (cls.TRIAGE_FAILED, cls.KNOWN):
            if status.startswith(prefixed.value + ":"):
                return prefixed
        try:
            return cls(status)
        except ValueError:
            return None

    def saying(self, detail: str) -> str:
        """The status stored with ``detail`` after it (:data:`TRIAGE_FAILED`, :data:`KNOWN`)."""
        return f"{self.value}: {detail}"

    @property
    def standing(self) -> bool:
        """Whether the folder's model is reduced (or adopted from the bug database as it was reduced there): such a
        bug stands for its root cause, before its merge group's unreduced members."""
        return self in (Reduction.DONE, Reduction.KNOWN)

    @property
    def retried(self) -> bool:
        """Whether a later pass continues (or starts) this reduction from the folder's model."""
        return self in (Reduction.TIMEOUT, Reduction.NOT_REDUCED)


def retried(reduction: object) -> bool:
    """Whether the stored ``reduction`` (a document or its status) is one a later pass continues."""
    status = Reduction.of(reduction)
    return status is not None and status.retried


def standing(reduction: object) -> bool:
    """Whether the stored ``reduction`` (a document or its status) is one its bug stands for its root cause by."""
    status = Reduction.of(reduction)
    return status is not None and status.standing

BUGS_DIR = "bugs"
BUG_FILE = "bug.json"
REPRO_FILE = "repro.py"
MODEL_FILE = "model.keras"
INPUTS_FILE = "inputs.npz"
IR_FILE = "ir.json"
EXPECTED_FILE = "expected.npz"
MINIMAL_DIR, MINIMAL_CHECK_FILE = "minimal", "check.json"  # the minimal script's check (memo.filing.check)
NEWEST_FILE = "newest.json"  # the script rerun on the newest code (memo.triage.newest): the issue text quotes it


def read_bug_file(folder: Path) -> JsonObject:
    """The folder's ``bug.json``; {} when it is missing or unreadable."""
    path = Path(folder) / BUG_FILE
    if not path.exists():
        return {}
    try:
        data = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError):
        return {}
    return data if isinstance(data, dict) else {}


def write_bug_file(folder: Path, data: JsonObject) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / BUG_FILE).write_text(json.dumps(data, indent=2, default=str))
