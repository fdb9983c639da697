"""Every table of the campaign database, created (and migrated) when a store opens it.

The campaign's tables hold what ``memo fuzz`` generated and ran: ``meta``, ``state`` (the resume point),
``mutants``, ``executions``, ``verdicts``, ``coverage_history``; with ``--library-coverage``, ``library_lines``
(each line of a library's code a model reached, once: the model that reached it first, whether it was a seed, and
when) and ``library_totals`` (each library's executable statements).

Triage's tables hold what it derived from them. ``bugs``: one row per signature. ``bug_occurrences``: which
verdict belongs to which bug (rewritten on every triage pass, so a signature that changes when
localization completes simply moves its verdicts). ``localizations``: the first misbehaving node of each
NaN / inconsistency verdict, computed once. ``triage_errors``: every failure of triage itself (a defect of
memo, or a library failing where it should not), so that a report can say why a bug was not reduced
instead of triage failing silently. A reduced bug carries ``final_key`` (its root-cause identity on the
reduced model, see :func:`memo.triage.signature.reduced_key`); a bug whose reduced form coincides with an
earlier bug's gets ``merged_into`` that bug's id.

The file records its format version (``meta.schema_version``, :data:`SCHEMA_VERSION`), as the bug database does
(:mod:`memo.bugdb.versions`): a store of an older version is migrated when it is opened, in one transaction with
the creation of what is missing; a newer one (or a file that is no campaign store) is refused with one line before
anything is written (:class:`StoreVersionError`, a usage error: exit 2). A store from before versions were
recorded reads as version 1.
"""
from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from contextlib import contextmanager
from typing import Any, Callable, Iterator

from memo.errors import UsageError

DB_NAME = "campaign.sqlite"
SCHEMA_VERSION = 3
VERSION_KEY = "schema_version"
# What every campaign store holds, whatever its version: how another SQLite file (a bug database) is told apart.
MARKER_TABLES = frozenset({"meta", "mutants", "verdicts"})

CAMPAIGN_TABLES = """
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
    backend TEXT NOT NULL, stage TEXT, message TEXT NOT NULL, metrics TEXT NOT NULL,
    created REAL NOT NULL, signature TEXT, parts TEXT);
CREATE INDEX IF NOT EXISTS verdicts_by_kind ON verdicts(kind, backend);
CREATE TABLE IF NOT EXISTS coverage_history (
    id INTEGER PRIMARY KEY, elapsed REAL NOT NULL, iteration INTEGER NOT NULL, generated INTEGER NOT NULL,
    executed INTEGER NOT NULL, types INTEGER NOT NULL, pairs INTEGER NOT NULL, params INTEGER NOT NULL,
    extra TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS library_lines (
    library TEXT NOT NULL, file TEXT NOT NULL, line INTEGER NOT NULL, mutant_id INTEGER NOT NULL,
    seed INTEGER NOT NULL, created REAL NOT NULL, PRIMARY KEY (library, file, line));
CREATE TABLE IF NOT EXISTS library_totals (library TEXT PRIMARY KEY, total INTEGER NOT NULL);
"""

TRIAGE_TABLES = """
CREATE TABLE IF NOT EXISTS bugs (
    id TEXT PRIMARY KEY, kind TEXT NOT NULL, library TEXT NOT NULL, stage TEXT, parts TEXT NOT NULL,
    first_verdict INTEGER NOT NULL, first_mutant INTEGER NOT NULL, first_seen REAL NOT NULL, last_seen REAL NOT NULL,
    occurrences INTEGER NOT NULL, layer TEXT, layer_class TEXT, bug_dir TEXT, original_layers INTEGER,
    reduced_layers INTEGER, reduction TEXT, repro TEXT, reproduces INTEGER, checked REAL, final_key TEXT,
    merged_into TEXT, newest TEXT, blame TEXT);
CREATE TABLE IF NOT EXISTS bug_occurrences (
    verdict_id INTEGER PRIMARY KEY, bug_id TEXT NOT NULL, mutant_id INTEGER NOT NULL);
CREATE INDEX IF NOT EXISTS occurrences_by_bug ON bug_occurrences(bug_id);
CREATE TABLE IF NOT EXISTS localizations (
    verdict_id INTEGER PRIMARY KEY, layer TEXT, layer_class TEXT, details TEXT NOT NULL, created REAL NOT NULL);
CREATE TABLE IF NOT EXISTS triage_errors (
    id INTEGER PRIMARY KEY, bug_id TEXT, step TEXT NOT NULL, message TEXT NOT NULL, created REAL NOT NULL);
"""



class StoreVersionError(UsageError):
    """A campaign store this memo must not write: a newer format, or not a campaign store at all."""


def _add_columns(db: sqlite3.Connection, table: str, columns: tuple[tuple[str, str], ...]) -> None:
    """Add each column ``table`` lacks (a version-1 store may have some: memo added them on open then)."""
    present = {row[1] for row in db.execute(f"PRAGMA table_info({table})")}
    for column, kind in columns:
        if column not in present:
            db.execute(f"ALTER TABLE {table} ADD COLUMN {column} {kind}")


# from version N -> what makes it N + 1, inside the opening transaction (after the missing tables are created)
MIGRATIONS: dict[int, Callable[[sqlite3.Connection], None]] = {
    # 2: a bug's root-cause key on its reduced model and the bug it merged into (triage's merge), and its script's
    # rerun on the newest code (memo.triage.newest): columns version 1 added whenever a store was opened
    1: lambda db: _add_columns(db, "bugs", (("final_key", "TEXT"), ("merged_into", "TEXT"), ("newest", "TEXT"))),
    # 3: a finding's signature and its parts, computed once when it is recorded (memo.triage.dedup.recorded_parts),
    # and the library a bug is filed against as triage decided it (memo.triage.blame); an older store's findings
    # are signed by the first triage pass or campaign start that reads them (memo.triage.dedup.sign_findings)
    2: lambda db: (_add_columns(db, "verdicts", (("signature", "TEXT"), ("parts", "TEXT"))),
                   _add_columns(db, "bugs", (("blame", "TEXT"),))),
}


def stored_version(db: sqlite3.Connection, path: Path) -> int | None:
    """The version the store at ``path`` was written in; None for an empty file (a new store); 1 for a store from
    before versions were recorded. :class:`StoreVersionError` for a file that is no campaign store."""
    tables = {row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    if not tables:
        return None
    if not MARKER_TABLES <= tables:
        raise StoreVersionError(f"{path} is not a memo campaign store (it has no "
                                f"{', '.join(sorted(MARKER_TABLES - tables))} table)")
    row = db.execute("SELECT value FROM meta WHERE key = ?", (VERSION_KEY,)).fetchone()
    try:
        return int(json.loads(row[0])) if row is not None else 1
    except (ValueError, TypeError):
        raise StoreVersionError(f"campaign store {path}: unreadable schema version {row[0]!r}") from None


def check(path: Path, version: int | None) -> None:
    """Raise unless a store of ``version`` may be written by this memo: a new one, this version, or an older one the
    migrations bring up to it."""
    if version is None or version == SCHEMA_VERSION:
        return
    if version > SCHEMA_VERSION:
        raise StoreVersionError(f"campaign store {path} was written by a newer memo (schema {version}; this memo "
                                f"knows {SCHEMA_VERSION}): open it with that memo, or upgrade")
    if not all(step in MIGRATIONS for step in range(version, SCHEMA_VERSION)):
        raise StoreVersionError(f"campaign store {path} was written by an older memo (schema {version}) that no "
                                "migration reaches: open it with that memo")


def connect(path: Path) -> sqlite3.Connection:
    """Open the database in autocommit mode (transactions are explicit, see ``CampaignStore.transaction``)
    with WAL, so that ``memo report`` reads while ``memo fuzz`` writes; create what is missing and migrate an older
    store, in one transaction. :class:`StoreVersionError` before anything is written for a store this memo must not
    write."""
    path = Path(path)
    return open_versioned(path, 30.0, lambda db: check(path, stored_version(db, path)),
                          lambda db: create_or_migrate(db, path), ("journal_mode=WAL", "synchronous=NORMAL"))


def open_versioned(path: Path, timeout_s: float, check_version: Callable[[sqlite3.Connection], None],
                   create_or_migrate_db: Callable[[sqlite3.Connection], object],
                   pragmas: tuple[str, ...]) -> sqlite3.Connection:
    """A versioned SQLite file (a campaign store, a bug database) opened for writing in autocommit mode: its version
    checked before anything is written (the pragmas change the file), then ``pragmas`` set, then what is missing
    created and an older version migrated in one transaction; closed again if any of it raises."""
    db = sqlite3.connect(path, timeout=timeout_s, isolation_level=None)
    try:
        check_version(db)
        for pragma in pragmas:
            db.execute(f"PRAGMA {pragma}")
        with immediate_transaction(db):
            create_or_migrate_db(db)
    except BaseException:
        db.close()
        raise
    return db


@contextmanager
def immediate_transaction(db: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    """One ``BEGIN IMMEDIATE`` transaction on an autocommit connection: every write inside commits together or
    not at all (the campaign store and the bug database alike)."""
    db.execute("BEGIN IMMEDIATE")
    try:
        yield db
    except BaseException:
        db.execute("ROLLBACK")
        raise
    db.execute("COMMIT")


def create_or_migrate(db: sqlite3.Connection, path: Path) -> int | None:
    """Inside the opening transaction: create every missing table and index, migrate an older store (its version
    read again: another process may have migrated it meanwhile) and record the version; returns the version the
    store had (None: new)."""
    version = stored_version(db, path)
    check(path, version)
    for statement in (CAMPAIGN_TABLES + TRIAGE_TABLES).split(";"):  # executescript would commit the transaction
        if statement.strip():
            db.execute(statement)
    for step in range(version or SCHEMA_VERSION, SCHEMA_VERSION):
        MIGRATIONS[step](db)
    if version != SCHEMA_VERSION:
        db.execute("INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)", (VERSION_KEY, json.dumps(SCHEMA_VERSION)))
    return version


def dict_rows(db: sqlite3.Connection, sql: str, params: tuple[Any, ...] = ()) -> list[dict[str, Any]]:
    """The rows of one query as ``{column: value}`` dicts (the store's private query helper)."""
    cursor = db.execute(sql, params)
    names = [d[0] for d in cursor.description]
    return [dict(zip(names, row)) for row in cursor.fetchall()]
