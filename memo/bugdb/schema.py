"""The bug database's tables, created when it is opened; see docs/bugs.md.

``bugs``: one row per root cause, across campaigns (``num`` gives the public id ``M-0001``). ``bug_keys``: the
keys that find a bug: ``sig:<campaign bug id>`` (a finding's signature, known before reduction) and ``rc:<digest>``
(a root-cause key of the reduced model, :func:`memo.triage.signature.reduced_keys`); a key belongs to one bug.
``bug_files``: the reduced model, inputs, ``bug.json`` and ``repro.py`` as blobs. ``campaigns``: every campaign
that recorded a sighting. ``sightings``: a campaign bug seen as a database bug (occurrences, library versions).
``status_history``: every status change. ``rechecks``: every ``memo bugs recheck`` verdict.

Every statement is ``IF NOT EXISTS`` and columns are only ever added; the file's format version and the
migrations from older ones are :mod:`memo.bugdb.versions`'s.
"""
from __future__ import annotations

import sqlite3
from pathlib import Path

from memo.bugdb.versions import SCHEMA_VERSION, VERSION_KEY, check, migrate, stored_version
from memo.store.schema import open_versioned

BUSY_TIMEOUT_S = 60.0

TABLES = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS bugs (
    num INTEGER PRIMARY KEY AUTOINCREMENT, kind TEXT NOT NULL, library TEXT NOT NULL, stage TEXT NOT NULL,
    headline TEXT NOT NULL, origin TEXT NOT NULL, status TEXT NOT NULL DEFAULT 'new',
    detail TEXT NOT NULL DEFAULT '', regression INTEGER NOT NULL DEFAULT 0, reduced INTEGER NOT NULL DEFAULT 0,
    files_left_out TEXT NOT NULL DEFAULT '', created REAL NOT NULL, updated REAL NOT NULL,
    expected TEXT NOT NULL DEFAULT '');
CREATE TABLE IF NOT EXISTS bug_keys (key TEXT PRIMARY KEY, bug INTEGER NOT NULL REFERENCES bugs(num));
CREATE INDEX IF NOT EXISTS keys_by_bug ON bug_keys(bug);
CREATE TABLE IF NOT EXISTS bug_files (
    bug INTEGER NOT NULL REFERENCES bugs(num), name TEXT NOT NULL, data BLOB NOT NULL, PRIMARY KEY (bug, name));
CREATE TABLE IF NOT EXISTS campaigns (
    key TEXT PRIMARY KEY, name TEXT NOT NULL, directory TEXT NOT NULL, started REAL);
CREATE TABLE IF NOT EXISTS sightings (
    bug INTEGER NOT NULL REFERENCES bugs(num), campaign TEXT NOT NULL REFERENCES campaigns(key),
    campaign_bug TEXT NOT NULL, occurrences INTEGER NOT NULL, versions TEXT NOT NULL, first_seen REAL NOT NULL,
    last_seen REAL NOT NULL, PRIMARY KEY (bug, campaign, campaign_bug));
CREATE TABLE IF NOT EXISTS status_history (
    id INTEGER PRIMARY KEY, bug INTEGER NOT NULL REFERENCES bugs(num), status TEXT NOT NULL, detail TEXT NOT NULL,
    note TEXT NOT NULL, changed REAL NOT NULL);
CREATE TABLE IF NOT EXISTS rechecks (
    id INTEGER PRIMARY KEY, bug INTEGER NOT NULL REFERENCES bugs(num), result TEXT NOT NULL, detail TEXT NOT NULL,
    versions TEXT NOT NULL, seconds REAL NOT NULL, checked REAL NOT NULL);
"""


def connect_read_only(path: Path) -> sqlite3.Connection:
    """Open an existing database for reading only (a report never writes, and works on a read-only file); a
    version other than this memo's raises :class:`memo.bugdb.versions.BugDatabaseVersionError`."""
    db = sqlite3.connect(f"file:{Path(path).resolve()}?mode=ro", uri=True, timeout=BUSY_TIMEOUT_S,
                         isolation_level=None)
    try:
        db.execute(f"PRAGMA busy_timeout={int(BUSY_TIMEOUT_S * 1000)}")
        check(Path(path), stored_version(db, Path(path)), writing=False)
    except BaseException:
        db.close()
        raise
    return db


def connect(path: Path) -> sqlite3.Connection:
    """Open (and create) the database at ``path``: autocommit mode (every write is an explicit ``BEGIN
    IMMEDIATE`` transaction), WAL so that readers never block a writer, and a busy timeout so that two
    campaigns writing at once wait for each other instead of failing. An older database is migrated in place
    (one transaction) when a migration reaches this memo's version; any other version raises
    :class:`memo.bugdb.versions.BugDatabaseVersionError` before anything is written."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    return open_versioned(path, BUSY_TIMEOUT_S, lambda db: check(path, stored_version(db, path), writing=True),
                          lambda db: _create_or_migrate(db, path),
                          ("journal_mode=WAL", "synchronous=NORMAL", "foreign_keys=ON"))


def _create_or_migrate(db: sqlite3.Connection, path: Path) -> None:
    """Inside the opening transaction: migrate an older database (read again: another process may have migrated
    it meanwhile), then create whatever is missing and record the version of a new one."""
    version = stored_version(db, path)
    check(path, version, writing=True)
    if version is not None and version < SCHEMA_VERSION:
        migrate(db, version)
    # statement by statement: executescript would commit the transaction first
    for statement in TABLES.split(";"):
        if statement.strip():
            db.execute(statement)
    db.execute("INSERT OR IGNORE INTO meta(key, value) VALUES (?, ?)", (VERSION_KEY, str(SCHEMA_VERSION)))
