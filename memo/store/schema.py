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

Every statement is ``IF NOT EXISTS`` and columns are only ever added, so databases of every earlier memo
open unchanged (the on-disk format is ``SCHEMA_VERSION`` 1).
"""
from __future__ import annotations

import sqlite3
from pathlib import Path
from contextlib import contextmanager
from typing import Any, Iterator

DB_NAME = "campaign.sqlite"
SCHEMA_VERSION = 1

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
    created REAL NOT NULL);
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
    merged_into TEXT, newest TEXT);
CREATE TABLE IF NOT EXISTS bug_occurrences (
    verdict_id INTEGER PRIMARY KEY, bug_id TEXT NOT NULL, mutant_id INTEGER NOT NULL);
CREATE INDEX IF NOT EXISTS occurrences_by_bug ON bug_occurrences(bug_id);
CREATE TABLE IF NOT EXISTS localizations (
    verdict_id INTEGER PRIMARY KEY, layer TEXT, layer_class TEXT, details TEXT NOT NULL, created REAL NOT NULL);
CREATE TABLE IF NOT EXISTS triage_errors (
    id INTEGER PRIMARY KEY, bug_id TEXT, step TEXT NOT NULL, message TEXT NOT NULL, created REAL NOT NULL);
"""

# columns added after the first release of their table (older campaigns get them when opened)
_ADDED_COLUMNS = (("bugs", "final_key", "TEXT"), ("bugs", "merged_into", "TEXT"), ("bugs", "newest", "TEXT"))


def connect(path: Path) -> sqlite3.Connection:
    """Open the database in autocommit mode (transactions are explicit, see ``CampaignStore.transaction``)
    with WAL, so that ``memo report`` reads while ``memo fuzz`` writes, and create what is missing."""
    db = sqlite3.connect(path, timeout=30.0, isolation_level=None)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA synchronous=NORMAL")
    create_tables(db)
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


def create_tables(db: sqlite3.Connection) -> None:
    """Create every missing table and index and add the columns later releases introduced."""
    db.executescript(CAMPAIGN_TABLES + TRIAGE_TABLES)
    for table, column, kind in _ADDED_COLUMNS:
        present = {row[1] for row in db.execute(f"PRAGMA table_info({table})")}
        if column not in present:
            db.execute(f"ALTER TABLE {table} ADD COLUMN {column} {kind}")


def dict_rows(db: sqlite3.Connection, sql: str, params: tuple[Any, ...] = ()) -> list[dict[str, Any]]:
    """The rows of one query as ``{column: value}`` dicts (the store's private query helper)."""
    cursor = db.execute(sql, params)
    names = [d[0] for d in cursor.description]
    return [dict(zip(names, row)) for row in cursor.fetchall()]
