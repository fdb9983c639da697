"""Remembered runs of bug scripts: a script run in a fresh process again, with the same files and the same installed
distributions, is answered from the record instead of started.

Why: a campaign reruns every bug it adopts from the bug database (its ``repro.py`` on the release, then on the newest
code, then its minimal script), each a fresh interpreter importing TensorFlow, torch or JAX: 10 to 20 CPU seconds
apiece. In the first ten minutes of a campaign that knew 60 bugs those processes took half of the machine's CPU
(campaign split10, docs/benchmarks.md), the models' own libraries the other half. A script's outcome depends on its
files and on the interpreter's packages (memo's scripts seed everything they draw), so the record is keyed by both:
a changed script, model or input, and any package installed, upgraded or removed (the newest-code environment's daily
builds), starts the script again. Runs that ran out of time or could not start are never remembered: they say more
about the machine's load than about the bug.

The record is a SQLite file beside the user's bug database (``script-runs.sqlite``); ``$MEMO_SCRIPT_RUNS`` names
another, or ``off`` for none. ``memo repro`` and ``memo bugs recheck`` always run the script.
"""
from __future__ import annotations

import functools
import hashlib
import json
import os
import sqlite3
import subprocess
import time
from pathlib import Path

from memo.bug_files import BUG_FILE, NEWEST_FILE
from memo.bugdb.location import OFF, default_path

ENV_VAR = "MEMO_SCRIPT_RUNS"
FILE_NAME = "script-runs.sqlite"
MEMO_RECORDS = frozenset({BUG_FILE, NEWEST_FILE, "check.json"})
"""Files memo writes about a script's runs, which the script never reads: not part of its key."""
SKIPPED_DIRS = frozenset({"__pycache__", "minimal"})
"""Folders beside the script it never reads (the minimal script is checked in a folder of its own)."""
SCHEMA = ("CREATE TABLE IF NOT EXISTS runs (key TEXT PRIMARY KEY, returncode INTEGER NOT NULL, output TEXT NOT NULL,"
          " stderr TEXT NOT NULL, created REAL NOT NULL)")


def runs_path() -> Path | None:
    """Where the runs are remembered: ``$MEMO_SCRIPT_RUNS``, else beside the default bug database; None for off."""
    value = os.environ.get(ENV_VAR, "").strip()
    if value.lower() in OFF:
        return None
    return Path(value).expanduser() if value else default_path().with_name(FILE_NAME)


@functools.lru_cache(maxsize=16)
def interpreter_fingerprint(python: str) -> str | None:
    """A digest of the interpreter's version and of every distribution it has installed (name and version); None
    when it cannot say (then nothing is remembered for it)."""
    code = ("import importlib.metadata as m, sys\n"
            "print(sys.version)\n"
            "print('\\n'.join(sorted(f\"{d.metadata['Name']}=={d.version}\" for d in m.distributions())))")
    try:
        done = subprocess.run([python, "-I", "-c", code], capture_output=True, text=True, timeout=60, check=True)
    except (OSError, subprocess.SubprocessError):
        return None
    return hashlib.sha256(done.stdout.encode()).hexdigest()


def folder_digest(folder: Path, script: str) -> str:
    """A digest of ``script`` and every file of ``folder`` it may read (all but :data:`MEMO_RECORDS` and
    :data:`SKIPPED_DIRS`), with their paths."""
    digest = hashlib.sha256(script.encode() + b"\0")
    for path in sorted(folder.rglob("*")):
        relative = path.relative_to(folder)
        if (not path.is_file() or relative.name in MEMO_RECORDS
                or any(part in SKIPPED_DIRS for part in relative.parts[:-1])):
            continue
        digest.update(str(relative).encode() + b"\0" + hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()


def run_key(folder: Path, python: str, script: str, options: str) -> str | None:
    """The record's key of running ``folder/script`` with ``python`` (``options``: how its output is kept); None
    when the interpreter's packages cannot be read."""
    fingerprint = interpreter_fingerprint(python)
    if fingerprint is None:
        return None
    return hashlib.sha256(json.dumps([folder_digest(folder, script), fingerprint, options]).encode()).hexdigest()


class ScriptRuns:
    """The remembered runs in one SQLite file; every method is safe to call from several threads and processes
    (one connection per call) and never raises for the file's sake: a run not found is run."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def _connect(self) -> sqlite3.Connection:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        db = sqlite3.connect(self.path, timeout=30, isolation_level=None)
        db.execute(SCHEMA)
        return db

    def get(self, key: str) -> tuple[int, str, str, float] | None:
        """``(returncode, output, stderr, created)`` of the remembered run (``created``: when it ran, epoch
        seconds), or None."""
        try:
            db = self._connect()
            try:
                row = db.execute("SELECT returncode, output, stderr, created FROM runs WHERE key = ?",
                                 (key,)).fetchone()
            finally:
                db.close()
        except (sqlite3.Error, OSError):
            return None
        return (int(row[0]), str(row[1]), str(row[2]), float(row[3])) if row else None

    def put(self, key: str, returncode: int, output: str, stderr: str) -> None:
        try:
            db = self._connect()
            try:
                db.execute("INSERT OR REPLACE INTO runs(key, returncode, output, stderr, created) VALUES (?, ?, ?, ?, ?)",
                           (key, returncode, output, stderr, time.time()))
            finally:
                db.close()
        except (sqlite3.Error, OSError):
            pass


def remembered_runs() -> ScriptRuns | None:
    """The record triage uses (:func:`runs_path`), or None when it is off."""
    path = runs_path()
    return ScriptRuns(path) if path is not None else None
