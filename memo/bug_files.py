"""A bug folder's file names and its ``bug.json``: below triage, which writes the folders, and the bug database,
which stores and rechecks them (:mod:`memo.triage.bugdir` holds the layout and the rest)."""
from __future__ import annotations

import json
from pathlib import Path

from memo.json_types import JsonObject

# The reduction status of a finding whose own model did not show it again: the report lists it as unconfirmed.
NOT_AGAIN = "not reduced: the model did not show the bug again when re-run (flaky or environment-dependent)"

BUGS_DIR = "bugs"
BUG_FILE = "bug.json"
REPRO_FILE = "repro.py"
MODEL_FILE = "model.keras"
INPUTS_FILE = "inputs.npz"
IR_FILE = "ir.json"
EXPECTED_FILE = "expected.npz"
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
