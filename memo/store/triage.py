"""Triage's tables (``bugs``, ``bug_occurrences``, ``localizations``, ``triage_errors``), reached as
``store.triage``; see :mod:`memo.store.schema` for what each holds."""
from __future__ import annotations

import json
import sqlite3
import time
from typing import Any, Iterable, Mapping

from memo.bug_files import standing
from memo.json_types import JsonObject
from memo.store.records import BugRow, LocalizationRow, TriageError
from memo.store.schema import dict_rows


class TriageTables:
    """Reads and writes of triage's tables on the campaign store's connection (its transactions apply)."""

    def __init__(self, db: sqlite3.Connection) -> None:
        self._db = db

    # ------------------------------------------------------------------ bugs
    def load_bugs(self) -> list[BugRow]:
        """Every bug, oldest first."""
        return [BugRow.from_row(row) for row in dict_rows(self._db, "SELECT * FROM bugs ORDER BY first_seen, id")]

    def load_bug(self, bug_id: str) -> BugRow | None:
        rows = dict_rows(self._db, "SELECT * FROM bugs WHERE id = ?", (bug_id,))
        return BugRow.from_row(rows[0]) if rows else None

    def bug_ids(self) -> set[str]:
        return {row[0] for row in self._db.execute("SELECT id FROM bugs")}

    def upsert_bug(self, bug_id: str, *, kind: str, library: str, stage: str | None, parts: JsonObject,
                   first_verdict: int, first_mutant: int, first_seen: float, last_seen: float, occurrences: int,
                   layer_class: str | None) -> None:
        """Insert a bug, or refresh the occurrence figures of a known one (what triage wrote stays)."""
        self._db.execute(
            "INSERT INTO bugs(id, kind, library, stage, parts, first_verdict, first_mutant, first_seen, last_seen,"
            " occurrences, layer_class) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT(id) DO UPDATE SET"
            " first_verdict = excluded.first_verdict, first_mutant = excluded.first_mutant,"
            " first_seen = excluded.first_seen, last_seen = excluded.last_seen,"
            " occurrences = excluded.occurrences",
            (bug_id, kind, library, stage, json.dumps(parts, sort_keys=True), first_verdict, first_mutant,
             first_seen, last_seen, occurrences, layer_class))

    def update_bug(self, bug_id: str, **values: Any) -> None:
        """Set columns of one bug (dict values are stored as JSON, booleans as 0/1)."""
        if not values:
            return
        encoded = {k: (json.dumps(v) if isinstance(v, dict) else int(v) if isinstance(v, bool) else v)
                   for k, v in values.items()}
        assignments = ", ".join(f"{key} = ?" for key in encoded)
        self._db.execute(f"UPDATE bugs SET {assignments} WHERE id = ?", (*encoded.values(), bug_id))

    def delete_bugs(self, bug_ids: Iterable[str]) -> None:
        self._db.executemany("DELETE FROM bugs WHERE id = ?", [(bug_id,) for bug_id in bug_ids])

    def merge_bug(self, bug_id: str, final_key: str) -> str | None:
        """Record ``bug_id``'s root-cause keys (space-separated, see :func:`memo.triage.signature.reduced_key`);
        bugs that share a key, directly or through another bug, are merged into the earliest of those reduced (or
        adopted from the bug database), else the earliest: ``memo report`` keys the folders it writes from kept
        artifacts, unreduced, and t62's reduced, ready onnx2pytorch entry merged into an older such one.
        Returns the bug ``bug_id`` was merged into (None: it is the primary entry)."""
        self._db.execute("UPDATE bugs SET final_key = ? WHERE id = ?", (final_key, bug_id))
        rows = self._db.execute("SELECT id, first_seen, final_key, reduction FROM bugs "
                                "WHERE final_key IS NOT NULL").fetchall()
        primary = merge_primaries({row[0]: ((not _standing(row[3]), row[1]), str(row[2]).split()) for row in rows})
        self._db.executemany("UPDATE bugs SET merged_into = ? WHERE id = ?",
                             [(None if first == other else first, other) for other, first in primary.items()])
        return None if primary[bug_id] == bug_id else primary[bug_id]

    # ------------------------------------------------------------------ occurrences
    def replace_occurrences(self, groups: Mapping[str, Iterable[tuple[int, int]]]) -> None:
        """Replace every occurrence by ``{bug_id: [(verdict_id, mutant_id), ...]}``."""
        self._db.execute("DELETE FROM bug_occurrences")
        for bug_id, pairs in groups.items():
            self._db.executemany("INSERT INTO bug_occurrences(verdict_id, bug_id, mutant_id) VALUES (?, ?, ?)",
                                 [(verdict_id, bug_id, mutant_id) for verdict_id, mutant_id in pairs])

    def bug_mutants(self, bug_id: str) -> list[int]:
        """The mutants in which ``bug_id`` occurred."""
        return [row[0] for row in self._db.execute("SELECT DISTINCT mutant_id FROM bug_occurrences WHERE bug_id = ?",
                                                   (bug_id,))]

    def bug_verdicts(self, bug_id: str) -> list[int]:
        """The verdicts (occurrences) of ``bug_id``."""
        return [row[0] for row in self._db.execute("SELECT verdict_id FROM bug_occurrences WHERE bug_id = ?",
                                                   (bug_id,))]

    def bugs_by_mutant(self) -> dict[int, set[str]]:
        """``{mutant_id: {bug ids that occurred in it}}``."""
        bugs: dict[int, set[str]] = {}
        for mutant_id, bug_id in self._db.execute("SELECT mutant_id, bug_id FROM bug_occurrences"):
            bugs.setdefault(mutant_id, set()).add(bug_id)
        return bugs

    # ------------------------------------------------------------------ localizations
    def localizations(self) -> dict[int, LocalizationRow]:
        """Every localization by verdict id."""
        return {row["verdict_id"]: LocalizationRow.from_row(row)
                for row in dict_rows(self._db, "SELECT * FROM localizations")}

    def save_localization(self, verdict_id: int, layer: str | None, layer_class: str | None,
                          details: JsonObject) -> None:
        self._db.execute("INSERT OR REPLACE INTO localizations(verdict_id, layer, layer_class, details, created)"
                         " VALUES (?, ?, ?, ?, ?)", (verdict_id, layer, layer_class, json.dumps(details), time.time()))

    # ------------------------------------------------------------------ errors
    def record_error(self, bug_id: str | None, step: str, message: str) -> None:
        """Keep a triage failure for the report (never raises: recording must not hide the original error)."""
        try:
            self._db.execute("INSERT INTO triage_errors(bug_id, step, message, created) VALUES (?, ?, ?, ?)",
                             (bug_id, step, message[:4000], time.time()))
        except Exception:  # noqa: BLE001  (a locked or read-only database: the caller's summary still has it)
            pass

    def errors(self) -> list[TriageError]:
        """Every recorded triage failure, oldest first."""
        return [TriageError(**row) for row in dict_rows(self._db, "SELECT * FROM triage_errors ORDER BY id")]


def _standing(reduction: str | None) -> bool:
    """Whether a stored reduction document says the bug's folder model is reduced (or adopted from the bug
    database as it was reduced there)."""
    try:
        document = json.loads(reduction) if reduction else None
    except json.JSONDecodeError:
        return False
    return standing(document)


def merge_primaries(bugs: Mapping[str, tuple[Any, Iterable[str]]]) -> dict[str, str]:
    """``{bug id: the bug it is merged into, or itself}`` for ``{bug id: (order, root-cause keys)}``: bugs sharing
    a key are one group (transitively), whose first bug (by order, such as first_seen, then id) is the entry."""
    group_of_key: dict[str, str] = {}
    parent = {bug_id: bug_id for bug_id in bugs}

    def root(bug_id: str) -> str:
        while parent[bug_id] != bug_id:
            parent[bug_id] = parent[parent[bug_id]]
            bug_id = parent[bug_id]
        return bug_id

    for bug_id, (_seen, keys) in bugs.items():
        for key in keys:
            other = group_of_key.setdefault(key, bug_id)
            parent[root(other)] = root(bug_id)
    groups: dict[str, list[str]] = {}
    for bug_id in bugs:
        groups.setdefault(root(bug_id), []).append(bug_id)
    primary: dict[str, str] = {}
    for members in groups.values():
        first = min(members, key=lambda bug_id: (bugs[bug_id][0], bug_id))
        primary.update({bug_id: first for bug_id in members})
    return primary
