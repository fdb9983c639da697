"""The campaign store: one SQLite database per campaign, the single source for the report and for resume.

Every mutant is written in the same transaction as the campaign state that produced it, so a campaign
killed at any instant (even ``kill -9``) resumes exactly after the last committed mutant: at most the
mutant in flight is lost, never a stored finding. WAL mode lets ``memo report`` read while ``fuzz`` runs.
"""
from __future__ import annotations

import json
import shutil
import sqlite3
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Iterator

from memo.errors import UsageError

DB_NAME = "campaign.sqlite"
SCHEMA_VERSION = 1
_IN_CHUNK = 500  # ids per "IN (...)" query (SQLite limits the parameters of one statement)

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS state (id INTEGER PRIMARY KEY CHECK (id = 1), iteration INTEGER NOT NULL,
                                  data TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS mutants (
    id INTEGER PRIMARY KEY, iteration INTEGER NOT NULL UNIQUE, slot TEXT NOT NULL, operator TEXT NOT NULL,
    parent TEXT NOT NULL, seed TEXT NOT NULL, lineage TEXT NOT NULL, ir TEXT, valid INTEGER NOT NULL,
    error TEXT, diverse INTEGER NOT NULL, delta TEXT NOT NULL, gen_seconds REAL NOT NULL, created REAL NOT NULL);
CREATE TABLE IF NOT EXISTS executions (
    mutant_id INTEGER PRIMARY KEY REFERENCES mutants(id), result TEXT NOT NULL, seconds REAL NOT NULL,
    artifact_dir TEXT);
CREATE TABLE IF NOT EXISTS verdicts (
    id INTEGER PRIMARY KEY, mutant_id INTEGER NOT NULL REFERENCES mutants(id), kind TEXT NOT NULL,
    backend TEXT NOT NULL, stage TEXT, message TEXT NOT NULL, metrics TEXT NOT NULL, signature TEXT,
    created REAL NOT NULL);
CREATE INDEX IF NOT EXISTS verdicts_by_kind ON verdicts(kind, backend);
CREATE TABLE IF NOT EXISTS coverage_history (
    id INTEGER PRIMARY KEY, elapsed REAL NOT NULL, iteration INTEGER NOT NULL, generated INTEGER NOT NULL,
    executed INTEGER NOT NULL, types INTEGER NOT NULL, pairs INTEGER NOT NULL, params INTEGER NOT NULL,
    extra TEXT NOT NULL);
"""


@dataclass
class MutantRecord:
    """One generated mutant, valid or not, and what it added to coverage."""

    iteration: int
    slot: str
    operator: str
    parent: str
    seed: str
    lineage: dict[str, Any]
    ir_json: str | None
    valid: bool
    error: str | None = None
    diverse: bool = False
    delta: dict[str, Any] = field(default_factory=dict)
    gen_seconds: float = 0.0


@dataclass
class VerdictRecord:
    mutant_id: int
    kind: str
    backend: str
    stage: str | None
    message: str
    metrics: dict[str, Any]
    signature: str | None = None


class CampaignStore:
    """A campaign's database. Use as a context manager or call :meth:`close`."""

    def __init__(self, directory: Path, *, create: bool = False) -> None:
        self.directory = Path(directory)
        self.path = self.directory / DB_NAME
        if not create and not self.path.exists():
            raise UsageError(f"no campaign at {self.directory} (expected {self.path})")
        self.directory.mkdir(parents=True, exist_ok=True)
        self.db = sqlite3.connect(self.path, timeout=30.0, isolation_level=None)
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute("PRAGMA synchronous=NORMAL")
        self.db.executescript(_SCHEMA)
        if create and self.get_meta("schema_version") is None:
            self.set_meta("schema_version", SCHEMA_VERSION)

    # ------------------------------------------------------------------ plumbing
    def __enter__(self) -> "CampaignStore":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self.db.close()

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """All writes inside commit together or not at all."""
        self.db.execute("BEGIN IMMEDIATE")
        try:
            yield self.db
        except BaseException:
            self.db.execute("ROLLBACK")
            raise
        self.db.execute("COMMIT")

    # ------------------------------------------------------------------ meta and state
    def set_meta(self, key: str, value: Any) -> None:
        self.db.execute("INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)", (key, json.dumps(value)))

    def get_meta(self, key: str, default: Any = None) -> Any:
        row = self.db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return json.loads(row[0]) if row else default

    def save_state(self, iteration: int, data: dict[str, Any]) -> None:
        self.db.execute("INSERT OR REPLACE INTO state(id, iteration, data) VALUES (1, ?, ?)",
                        (iteration, json.dumps(data)))

    def load_state(self) -> tuple[int, dict[str, Any]] | None:
        row = self.db.execute("SELECT iteration, data FROM state WHERE id = 1").fetchone()
        return (row[0], json.loads(row[1])) if row else None

    # ------------------------------------------------------------------ records
    def add_mutant(self, record: MutantRecord) -> int:
        cursor = self.db.execute(
            "INSERT INTO mutants(iteration, slot, operator, parent, seed, lineage, ir, valid, error, diverse, delta,"
            " gen_seconds, created) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (record.iteration, record.slot, record.operator, record.parent, record.seed, json.dumps(record.lineage),
             record.ir_json, int(record.valid), record.error, int(record.diverse), json.dumps(record.delta),
             record.gen_seconds, time.time()))
        return int(cursor.lastrowid)

    def add_execution(self, mutant_id: int, result: dict[str, Any], seconds: float,
                      artifact_dir: str | None) -> None:
        self.db.execute("INSERT OR REPLACE INTO executions(mutant_id, result, seconds, artifact_dir) VALUES (?,?,?,?)",
                        (mutant_id, json.dumps(result), seconds, artifact_dir))

    def add_verdict(self, record: VerdictRecord) -> int:
        cursor = self.db.execute(
            "INSERT INTO verdicts(mutant_id, kind, backend, stage, message, metrics, signature, created)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (record.mutant_id, record.kind, record.backend, record.stage, record.message,
             json.dumps(record.metrics), record.signature, time.time()))
        return int(cursor.lastrowid)

    def add_coverage_point(self, elapsed: float, iteration: int, generated: int, executed: int,
                           counts: dict[str, tuple[int, int]]) -> None:
        primary = {name: counts.get(name, (0, 0))[0] for name in ("types", "pairs", "params")}
        extra = {name: list(value) for name, value in counts.items()}
        self.db.execute(
            "INSERT INTO coverage_history(elapsed, iteration, generated, executed, types, pairs, params, extra)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (elapsed, iteration, generated, executed, primary["types"], primary["pairs"], primary["params"],
             json.dumps(extra)))

    # ------------------------------------------------------------------ queries
    def count(self, table: str, where: str = "1") -> int:
        if table not in ("mutants", "executions", "verdicts", "coverage_history"):
            raise ValueError(table)
        return int(self.db.execute(f"SELECT COUNT(*) FROM {table} WHERE {where}").fetchone()[0])

    def rows(self, sql: str, params: tuple[Any, ...] = ()) -> list[dict[str, Any]]:
        cursor = self.db.execute(sql, params)
        names = [d[0] for d in cursor.description]
        return [dict(zip(names, row)) for row in cursor.fetchall()]

    def verdicts(self, kinds: tuple[str, ...] | None = None) -> list[dict[str, Any]]:
        sql = "SELECT * FROM verdicts"
        params: tuple[Any, ...] = ()
        if kinds:
            sql += f" WHERE kind IN ({','.join('?' * len(kinds))})"
            params = tuple(kinds)
        return self.rows(sql + " ORDER BY id", params)

    def mutant(self, mutant_id: int) -> dict[str, Any] | None:
        found = self.rows("SELECT * FROM mutants WHERE id = ?", (mutant_id,))
        return found[0] if found else None

    def coverage_history(self) -> list[dict[str, Any]]:
        return self.rows("SELECT * FROM coverage_history ORDER BY id")

    # ------------------------------------------------------------------ artifacts on disk
    def artifact_dirs(self, mutant_ids: Iterable[int]) -> dict[int, str | None]:
        """The stored artifact folder of each mutant (None: deleted, never kept, or not executed)."""
        ids = list(dict.fromkeys(int(m) for m in mutant_ids))
        found: dict[int, str | None] = dict.fromkeys(ids)
        for start in range(0, len(ids), _IN_CHUNK):
            chunk = ids[start:start + _IN_CHUNK]
            found.update(self.db.execute(
                f"SELECT mutant_id, artifact_dir FROM executions WHERE mutant_id IN ({','.join('?' * len(chunk))})",
                chunk).fetchall())
        return found

    def release_artifact(self, mutant_id: int) -> int:
        """Delete a mutant's artifact folder and record it as gone; returns the bytes freed (0 if none).

        The folder goes first: on a full disk the database update may need the space it frees. A folder
        deleted without the update is harmless, since readers check that the folder still exists and
        :func:`memo.artifact.ensure_artifact` rebuilds it from the stored IR.
        """
        from memo.campaign.disk import tree_bytes  # noqa: PLC0415  (memo.campaign imports this module)

        directory = self.artifact_dirs([mutant_id])[int(mutant_id)]
        if directory is None:
            return 0
        freed = tree_bytes(Path(directory))
        shutil.rmtree(directory, ignore_errors=True)
        self.db.execute("UPDATE executions SET artifact_dir = NULL WHERE mutant_id = ?", (int(mutant_id),))
        return freed

    def clear_artifact_dirs(self) -> int:
        """Record every artifact folder as gone (after ``memo clean`` deleted them); returns how many."""
        return self.db.execute("UPDATE executions SET artifact_dir = NULL WHERE artifact_dir IS NOT NULL").rowcount
