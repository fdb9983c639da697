"""The bug database's format version (``meta.schema_version``) and the migrations between versions.

A database is written only by a memo that reads its version: the same version as is; an older one whose every
later change is additive (columns and tables added, never removed nor retyped) is migrated in place, in one
transaction, when it is opened for writing; anything else (an older version no migration reaches, a newer one, a
file that is not a bug database) stops with one line saying what to do, never mixing two formats in one file.
"""
from __future__ import annotations

import sqlite3
from pathlib import Path

from memo.errors import UsageError

SCHEMA_VERSION = 2
VERSION_KEY = "schema_version"
# What every bug database holds, whatever its version (the first release's tables): how a campaign's
# campaign.sqlite, which has a ``meta`` table and a ``schema_version`` too, is told from a bug database.
MARKER_TABLES = frozenset({"meta", "bugs", "bug_keys", "sightings"})

# from version N -> the statements that make it N + 1 (additive only: each is safe on a database of version N)
MIGRATIONS: dict[int, tuple[str, ...]] = {
    # 2: how the bug's expected output is kept (files.EXPECTED_KEPT: stored, compressed, digest), for the recheck
    1: ("ALTER TABLE bugs ADD COLUMN expected TEXT NOT NULL DEFAULT ''",),
}


class BugDatabaseVersionError(UsageError):
    """The bug database's format is one this memo must not write (nor read): an older one without a migration,
    a newer one, or not a bug database at all."""


class NeedsMigration(BugDatabaseVersionError):
    """An older database a migration brings up to date, opened for reading only."""


def stored_version(db: sqlite3.Connection, path: Path) -> int | None:
    """The version the database at ``path`` was written in; None for an empty file (a new database); 0 for a bug
    database from before versions were recorded. Raises :class:`BugDatabaseVersionError` for another database."""
    tables = {row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    if not tables:
        return None
    if not MARKER_TABLES <= tables:
        missing = ", ".join(sorted(MARKER_TABLES - tables))
        raise BugDatabaseVersionError(f"{path} is not a memo bug database (it has no {missing} table); pass the bug "
                                      "database with --bugs-db, or --bugs-db none")
    row = db.execute("SELECT value FROM meta WHERE key = ?", (VERSION_KEY,)).fetchone()
    try:
        return int(row[0]) if row is not None else 0
    except ValueError:
        raise BugDatabaseVersionError(f"bug database {path}: unreadable schema version {row[0]!r}") from None


def migratable(version: int) -> bool:
    """Whether a database of ``version`` reaches :data:`SCHEMA_VERSION` by the migrations alone."""
    return version <= SCHEMA_VERSION and all(step in MIGRATIONS for step in range(version, SCHEMA_VERSION))


def refuse(path: Path, version: int) -> BugDatabaseVersionError:
    """The one line for a version this memo cannot use."""
    if version > SCHEMA_VERSION:
        return BugDatabaseVersionError(
            f"bug database {path} was written by a newer memo (schema {version}; this memo knows {SCHEMA_VERSION}): "
            "upgrade memo, or pass --bugs-db none")
    return BugDatabaseVersionError(
        f"bug database {path} was written by an older memo (schema {version}); run `memo bugs export` with that "
        "version or pass --bugs-db none")


def check(path: Path, version: int | None, *, writing: bool) -> None:
    """Raise unless a database of ``version`` may be opened as asked: the current version always; an older
    migratable one only for writing (it is migrated then: see :func:`migrate`)."""
    if version is None or version == SCHEMA_VERSION:
        return
    if not migratable(version):
        raise refuse(path, version)
    if not writing:
        raise NeedsMigration(
            f"bug database {path} is at schema {version} and needs migrating to {SCHEMA_VERSION}: any `memo bugs` "
            "command does it (this one only reads)")


def migrate(db: sqlite3.Connection, version: int) -> int:
    """Apply the migrations from ``version`` inside the caller's transaction; returns the new version."""
    for step in range(version, SCHEMA_VERSION):
        for statement in MIGRATIONS[step]:
            db.execute(statement)
    db.execute("INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)", (VERSION_KEY, str(SCHEMA_VERSION)))
    return SCHEMA_VERSION
