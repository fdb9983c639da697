"""Triage's own tables in the campaign database (created on first use, never touching the campaign's).

``bugs``: one row per signature. ``bug_occurrences``: which verdict belongs to which bug (rewritten on
every triage pass, so a signature that changes when localization completes simply moves its verdicts).
``localizations``: the first misbehaving node of each NaN / inconsistency verdict, computed once.
``triage_errors``: every failure of triage itself (a defect of memo, or a library failing where it should
not), so that a report can say why a bug was not reduced instead of triage failing silently.
A reduced bug carries ``final_key`` (its root-cause identity on the reduced model, see
:func:`memo.triage.signature.reduced_key`); a bug whose reduced form coincides with an earlier bug's gets
``merged_into`` that bug's id.
"""
from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import Any

from memo.store import CampaignStore

_SCHEMA = """
CREATE TABLE IF NOT EXISTS bugs (
    id TEXT PRIMARY KEY, kind TEXT NOT NULL, library TEXT NOT NULL, stage TEXT, parts TEXT NOT NULL,
    first_verdict INTEGER NOT NULL, first_mutant INTEGER NOT NULL, first_seen REAL NOT NULL, last_seen REAL NOT NULL,
    occurrences INTEGER NOT NULL, layer TEXT, layer_class TEXT, bug_dir TEXT, original_layers INTEGER,
    reduced_layers INTEGER, reduction TEXT, repro TEXT, reproduces INTEGER, checked REAL, final_key TEXT,
    merged_into TEXT);
CREATE TABLE IF NOT EXISTS bug_occurrences (
    verdict_id INTEGER PRIMARY KEY, bug_id TEXT NOT NULL, mutant_id INTEGER NOT NULL);
CREATE INDEX IF NOT EXISTS occurrences_by_bug ON bug_occurrences(bug_id);
CREATE TABLE IF NOT EXISTS localizations (
    verdict_id INTEGER PRIMARY KEY, layer TEXT, layer_class TEXT, details TEXT NOT NULL, created REAL NOT NULL);
CREATE TABLE IF NOT EXISTS triage_errors (
    id INTEGER PRIMARY KEY, bug_id TEXT, step TEXT NOT NULL, message TEXT NOT NULL, created REAL NOT NULL);
"""
# columns added after the first release of the bugs table (older campaigns get them on first use)
_ADDED_COLUMNS = (("bugs", "final_key", "TEXT"), ("bugs", "merged_into", "TEXT"))


@dataclass
class BugRow:
    """A deduplicated bug as stored; the report reads these."""

    id: str
    kind: str
    library: str
    stage: str | None
    parts: dict[str, Any]
    first_verdict: int
    first_mutant: int
    first_seen: float
    last_seen: float
    occurrences: int
    layer: str | None = None
    layer_class: str | None = None
    bug_dir: str | None = None
    original_layers: int | None = None
    reduced_layers: int | None = None
    reduction: dict[str, Any] = field(default_factory=dict)
    repro: str | None = None
    reproduces: bool | None = None
    checked: float | None = None
    final_key: str | None = None
    merged_into: str | None = None

    @property
    def attempted(self) -> bool:
        """Whether a triage pass has worked on this bug (its folder exists or its reduction has a status)."""
        return bool(self.bug_dir) or bool(self.reduction)

    @property
    def unlocalized(self) -> bool:
        """A NaN/inconsistency bucket whose findings still await localization: not a bug yet."""
        return self.kind in ("nan", "inconsistency") and self.parts.get("layer") == "?"

    @classmethod
    def from_row(cls, row: dict[str, Any]) -> "BugRow":
        data = dict(row)
        data["parts"] = json.loads(data["parts"])
        data["reduction"] = json.loads(data["reduction"]) if data.get("reduction") else {}
        data["reproduces"] = None if data.get("reproduces") is None else bool(data["reproduces"])
        return cls(**data)


def ensure_tables(store: CampaignStore) -> None:
    store.db.executescript(_SCHEMA)
    for table, column, kind in _ADDED_COLUMNS:
        present = {row[1] for row in store.db.execute(f"PRAGMA table_info({table})")}
        if column not in present:
            store.db.execute(f"ALTER TABLE {table} ADD COLUMN {column} {kind}")


def has_tables(store: CampaignStore) -> bool:
    row = store.db.execute("SELECT COUNT(*) FROM sqlite_master WHERE type='table' AND name='bugs'").fetchone()
    return bool(row[0])


def load_bugs(store: CampaignStore) -> list[BugRow]:
    if not has_tables(store):
        return []
    return [BugRow.from_row(row) for row in store.rows("SELECT * FROM bugs ORDER BY first_seen, id")]


def load_bug(store: CampaignStore, bug_id: str) -> BugRow | None:
    if not has_tables(store):
        return None
    rows = store.rows("SELECT * FROM bugs WHERE id = ?", (bug_id,))
    return BugRow.from_row(rows[0]) if rows else None


def localizations(store: CampaignStore) -> dict[int, dict[str, Any]]:
    if not has_tables(store):
        return {}
    return {row["verdict_id"]: row for row in store.rows("SELECT * FROM localizations")}


def save_localization(store: CampaignStore, verdict_id: int, layer: str | None, layer_class: str | None,
                      details: dict[str, Any]) -> None:
    store.db.execute("INSERT OR REPLACE INTO localizations(verdict_id, layer, layer_class, details, created)"
                     " VALUES (?, ?, ?, ?, ?)", (verdict_id, layer, layer_class, json.dumps(details), time.time()))


def update_bug(store: CampaignStore, bug_id: str, **values: Any) -> None:
    """Set columns of one bug (dict values are stored as JSON, booleans as 0/1)."""
    if not values:
        return
    encoded = {k: (json.dumps(v) if isinstance(v, dict) else int(v) if isinstance(v, bool) else v)
               for k, v in values.items()}
    assignments = ", ".join(f"{key} = ?" for key in encoded)
    store.db.execute(f"UPDATE bugs SET {assignments} WHERE id = ?", (*encoded.values(), bug_id))


def record_error(store: CampaignStore, bug_id: str | None, step: str, message: str) -> None:
    """Keep a triage failure for the report (never raises: recording must not hide the original error)."""
    try:
        ensure_tables(store)
        store.db.execute("INSERT INTO triage_errors(bug_id, step, message, created) VALUES (?, ?, ?, ?)",
                         (bug_id, step, message[:4000], time.time()))
    except Exception:  # noqa: BLE001  (a locked or read-only database: the caller's summary still has it)
        pass


def triage_errors(store: CampaignStore) -> list[dict[str, Any]]:
    if not has_tables(store):
        return []
    present = store.db.execute("SELECT COUNT(*) FROM sqlite_master WHERE type='table' AND name='triage_errors'")
    if not present.fetchone()[0]:
        return []
    return store.rows("SELECT * FROM triage_errors ORDER BY id")


def merge(store: CampaignStore, bug_id: str, final_key: str) -> str | None:
    """Record ``bug_id``'s root-cause key; every bug with that key is merged into the earliest one.
    Returns the bug ``bug_id`` was merged into (None: it is the primary entry)."""
    store.db.execute("UPDATE bugs SET final_key = ? WHERE id = ?", (final_key, bug_id))
    same = [row["id"] for row in store.rows("SELECT id FROM bugs WHERE final_key = ? ORDER BY first_seen, id",
                                            (final_key,))]
    primary = same[0]
    store.db.execute("UPDATE bugs SET merged_into = NULL WHERE id = ?", (primary,))
    store.db.executemany("UPDATE bugs SET merged_into = ? WHERE id = ?", [(primary, other) for other in same[1:]])
    return None if primary == bug_id else primary
