"""``BugDatabase``: every read and write of the bug database (the only module of memo with its SQL).

Each write is one ``BEGIN IMMEDIATE`` transaction: a campaign killed half-way leaves the database as it was
before or after a whole write, and two campaigns writing at once take turns (WAL, busy timeout).
"""
from __future__ import annotations

import json
import sqlite3
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator, Sequence

from memo.bugdb.records import (DUPLICATE, FIXED, FIXED_UPSTREAM, ID_PREFIX, NEW, RECHECK_RESULTS, STATUSES,
                                KnownBug, RecheckRecord, SeenIn, Sighting, StatusChange, public_id, reducer_of)
from memo.bug_files import BUG_FILE
from memo.bugdb.expected import kept_as
from memo.bugdb.schema import connect, connect_read_only
from memo.bugdb.versions import NeedsMigration
from memo.errors import UsageError
from memo.store.schema import immediate_transaction


def parse_id(text: str) -> int:
    """``M-0007`` (or ``m-7``, ``7``) -> 7; anything else is a usage error."""
    raw = text.strip().upper()
    raw = raw[len(ID_PREFIX):] if raw.startswith(ID_PREFIX) else raw
    if not raw.isdigit():
        raise UsageError(f"{text!r} is not a bug id of the bug database (they read like {public_id(1)})")
    return int(raw)


class BugDatabase:
    """The bug database at ``path`` (created on first use; ``read_only``: an existing one, never written). Use as
    a context manager, or :meth:`close`."""

    def __init__(self, path: Path, *, read_only: bool = False) -> None:
        self.path = Path(path)
        try:
            self._db = self._open_read_only() if read_only else connect(self.path)
        except sqlite3.DatabaseError as exc:
            raise UsageError(f"bug database {self.path}: {exc}") from exc

    def _open_read_only(self) -> sqlite3.Connection:
        """A reader of an older database migrates it first where it may write the file (the migration is what
        any writer would do); where it may not, the reader stops with the migration's one line."""
        try:
            return connect_read_only(self.path)
        except NeedsMigration as refusal:
            try:
                connect(self.path).close()
            except sqlite3.DatabaseError:
                raise refusal from None
            return connect_read_only(self.path)

    def __enter__(self) -> "BugDatabase":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._db.close()

    @contextmanager
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        with immediate_transaction(self._db) as db:
            yield db

    # ------------------------------------------------------------------ recording campaigns' bugs
    def record(self, sighting: Sighting) -> str:
        """Insert the campaign bug as a new database bug, or add it to the one any of its keys finds; returns the
        database bug's id. Files are stored when the bug has none yet, or only unreduced ones and these are
        reduced, or ones an older reducer reduced (else the first reduced model is kept)."""
        now = time.time()
        with self._transaction() as db:
            num = self._find(db, sighting.keys)
            if num is None:
                num = db.execute(
                    "INSERT INTO bugs(kind, library, stage, headline, origin, created, updated)"
                    " VALUES (?, ?, ?, ?, ?, ?, ?)",
                    (sighting.kind, sighting.library, sighting.stage, sighting.headline, sighting.campaign_bug, now,
                     now)).lastrowid
                db.execute("INSERT INTO status_history(bug, status, detail, note, changed) VALUES (?, ?, '', ?, ?)",
                           (num, NEW, f"first seen in {sighting.campaign.name} as {sighting.campaign_bug}", now))
            self._fold_bridged(db, num, sighting, now)
            db.executemany("INSERT OR IGNORE INTO bug_keys(key, bug) VALUES (?, ?)",
                           [(key, num) for key in sighting.keys])
            campaign = sighting.campaign
            db.execute("INSERT OR REPLACE INTO campaigns(key, name, directory, started) VALUES (?, ?, ?, ?)",
                       (campaign.key, campaign.name, campaign.directory, campaign.started))
            db.execute(
                "INSERT INTO sightings(bug, campaign, campaign_bug, occurrences, versions, first_seen, last_seen)"
                " VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT(bug, campaign, campaign_bug) DO UPDATE SET"
                " occurrences = excluded.occurrences, versions = excluded.versions, last_seen = excluded.last_seen",
                (num, campaign.key, sighting.campaign_bug, sighting.occurrences,
                 json.dumps(dict(sighting.versions), sort_keys=True), sighting.first_seen, sighting.last_seen))
            has_files, reduced = db.execute(
                "SELECT EXISTS(SELECT 1 FROM bug_files WHERE bug = ?), reduced FROM bugs WHERE num = ?",
                (num, num)).fetchone()
            if sighting.files is not None and (not has_files or (sighting.reduced and (
                    not reduced or (sighting.reducer or 0) > (self._stored_reducer(db, num) or 0)))):
                files, left_out = sighting.files()
                if files:
                    db.execute("DELETE FROM bug_files WHERE bug = ?", (num,))
                    db.executemany("INSERT INTO bug_files(bug, name, data) VALUES (?, ?, ?)",
                                   [(num, name, sqlite3.Binary(data)) for name, data in files.items()])
                    db.execute("UPDATE bugs SET reduced = ?, files_left_out = ?, headline = ?, expected = ?"
                               " WHERE num = ?",
                               (int(sighting.reduced), " ".join(left_out), sighting.headline, kept_as(files), num))
            db.execute("UPDATE bugs SET updated = ? WHERE num = ?", (now, num))
        return public_id(num)

    @staticmethod
    def _stored_reducer(db: sqlite3.Connection, num: int) -> int | None:
        """The version of the reducer that made the bug's stored reduction (its stored bug.json's)."""
        row = db.execute("SELECT data FROM bug_files WHERE bug = ? AND name = ?", (num, BUG_FILE)).fetchone()
        try:
            return reducer_of(json.loads(bytes(row[0])).get("reduction")) if row else None
        except (ValueError, AttributeError):  # an unreadable bug.json: no recorded reducer
            return None

    def _fold_bridged(self, db: sqlite3.Connection, num: int, sighting: Sighting, now: float) -> None:
        """A sighting whose keys find several bugs shows them to be one root cause: the later ones, while still
        ``new``, become duplicates of the oldest (``num``), and their keys move to it."""
        marks = ", ".join("?" for _ in sighting.keys)
        others = [row[0] for row in db.execute(
            f"SELECT DISTINCT k.bug FROM bug_keys k JOIN bugs b ON b.num = k.bug WHERE k.key IN ({marks})"
            " AND k.bug != ? AND b.status = ?", (*sighting.keys, num, NEW))]
        for other in others:
            db.execute("UPDATE bug_keys SET bug = ? WHERE bug = ?", (num, other))
            self._set_status(db, other, DUPLICATE, public_id(num),
                             f"same root cause as {public_id(num)}: {sighting.campaign.name}'s "
                             f"{sighting.campaign_bug} has keys of both", regression=False)

    @staticmethod
    def _find(db: sqlite3.Connection, keys: Sequence[str]) -> int | None:
        if not keys:
            return None
        marks = ", ".join("?" for _ in keys)
        row = db.execute(f"SELECT MIN(bug) FROM bug_keys WHERE key IN ({marks})", tuple(keys)).fetchone()
        return row[0] if row and row[0] is not None else None

    # ------------------------------------------------------------------ reading
    def find(self, keys: Sequence[str]) -> KnownBug | None:
        """The database bug any of ``keys`` finds (the oldest, if they find several)."""
        num = self._find(self._db, list(keys))
        return self._load([num])[0] if num is not None else None

    def get(self, bug_id: str) -> KnownBug:
        """One bug by its public id; an unknown id is a usage error."""
        found = self._load([parse_id(bug_id)])
        if not found:
            raise UsageError(f"no bug {bug_id} in the bug database {self.path}")
        return found[0]

    def bugs(self, *, status: Sequence[str] = (), library: Sequence[str] = (),
             kind: Sequence[str] = ()) -> list[KnownBug]:
        """Every bug, oldest first, filtered by any of the given statuses (default: all but duplicates, so that
        each root cause is listed once), libraries and kinds."""
        return [bug for bug in self._load(None)
                if (bug.status in status if status else bug.status != DUPLICATE) and (not library or bug.library in library)
                and (not kind or bug.kind in kind)]

    def _load(self, nums: list[int] | None) -> list[KnownBug]:
        where, params = ("", ()) if nums is None else (
            f" WHERE num IN ({', '.join('?' for _ in nums)})", tuple(nums))
        rows = self._db.execute(
            "SELECT num, kind, library, stage, headline, origin, status, detail, regression, reduced,"
            f" files_left_out, created, updated, expected FROM bugs{where} ORDER BY num", params).fetchall()
        seen: dict[int, list[SeenIn]] = {}
        for (num, key, name, campaign_bug, occurrences, versions, first_seen, last_seen) in self._db.execute(
                "SELECT s.bug, s.campaign, c.name, s.campaign_bug, s.occurrences, s.versions, s.first_seen,"
                f" s.last_seen FROM sightings s JOIN campaigns c ON c.key = s.campaign"
                f"{where.replace('num', 's.bug')} ORDER BY s.first_seen", params):
            seen.setdefault(num, []).append(SeenIn(campaign=key, campaign_name=name, campaign_bug=campaign_bug,
                                                   occurrences=occurrences, versions=json.loads(versions),
                                                   first_seen=first_seen, last_seen=last_seen))
        keys: dict[int, list[str]] = {}
        for key, num in self._db.execute(f"SELECT key, bug FROM bug_keys{where.replace('num', 'bug')} ORDER BY key",
                                         params):
            keys.setdefault(num, []).append(key)
        return [KnownBug(num=row[0], kind=row[1], library=row[2], stage=row[3], headline=row[4], origin=row[5],
                         status=row[6], detail=row[7], regression=bool(row[8]), reduced=bool(row[9]),
                         files_left_out=row[10].split(), created=row[11], updated=row[12],
                         seen=seen.get(row[0], []), keys=keys.get(row[0], []), expected=row[13]) for row in rows]

    def files(self, bug_id: str) -> dict[str, bytes]:
        """The bug's stored files by name (its reduced model, inputs, bug.json, repro.py...)."""
        num = self.get(bug_id).num
        return {name: bytes(data) for name, data in
                self._db.execute("SELECT name, data FROM bug_files WHERE bug = ? ORDER BY name", (num,))}

    def history(self, bug_id: str) -> list[StatusChange]:
        num = self.get(bug_id).num
        return [StatusChange(*row) for row in self._db.execute(
            "SELECT status, detail, note, changed FROM status_history WHERE bug = ? ORDER BY id", (num,))]

    def rechecks(self, bug_id: str) -> list[RecheckRecord]:
        num = self.get(bug_id).num
        return [RecheckRecord(result=row[0], detail=row[1], versions=json.loads(row[2]), seconds=row[3],
                              checked=row[4]) for row in self._db.execute(
            "SELECT result, detail, versions, seconds, checked FROM rechecks WHERE bug = ? ORDER BY id", (num,))]

    # ------------------------------------------------------------------ status
    def mark(self, bug_id: str, status: str, detail: str = "", note: str = "") -> KnownBug:
        """Set a bug's status (``filed URL``, ``fixed VERSION``, ``wontfix REASON``, ``duplicate ID``, ``new``) and
        keep the change in its history; marking clears the regression flag."""
        if status not in STATUSES:
            raise UsageError(f"unknown status {status!r} (choose from {', '.join(STATUSES)})")
        detail = detail.strip()
        if STATUSES[status] and not detail:
            raise UsageError(f"marking a bug {status} needs its {STATUSES[status]}")
        bug = self.get(bug_id)
        if status == DUPLICATE:
            other = self.get(detail)
            if other.num == bug.num:
                raise UsageError(f"{bug.id} cannot be a duplicate of itself")
            detail = other.id
        with self._transaction() as db:
            self._set_status(db, bug.num, status, detail, note or "marked by hand", regression=False)
        return self.get(bug.id)

    @staticmethod
    def _set_status(db: sqlite3.Connection, num: int, status: str, detail: str, note: str, *,
                    regression: bool) -> None:
        now = time.time()
        db.execute("UPDATE bugs SET status = ?, detail = ?, regression = ?, updated = ? WHERE num = ?",
                   (status, detail, int(regression), now, num))
        db.execute("INSERT INTO status_history(bug, status, detail, note, changed) VALUES (?, ?, ?, ?, ?)",
                   (num, status, detail, note, now))

    def record_recheck(self, bug_id: str, result: str, detail: str, versions: dict[str, str], seconds: float,
                       installed: str, *, upstream: bool = False) -> str:
        """Keep one recheck verdict and apply it: a bug that no longer reproduces becomes ``fixed installed``;
        a bug marked fixed that reproduces again is flagged as a regression (its status and version stay, so the
        claimed fix remains visible); a fixed bug confirmed fixed again loses the flag. Returns what changed.
        ``upstream``: the recheck ran on the newest code (development builds, :mod:`memo.newest`): a new bug that
        no longer reproduces there is ``fixed-upstream installed``, and one so marked that reproduces there again
        is new again."""
        if result not in RECHECK_RESULTS:
            raise ValueError(f"unknown recheck result {result!r}")
        bug = self.get(bug_id)
        change = ""
        with self._transaction() as db:
            db.execute("INSERT INTO rechecks(bug, result, detail, versions, seconds, checked) VALUES (?, ?, ?, ?, ?, ?)",
                       (bug.num, result, detail[:4000], json.dumps(versions, sort_keys=True), seconds, time.time()))
            if upstream:
                return self._apply_upstream(db, bug, result, installed)
            if result == "fixed" and bug.status != FIXED and bug.status != DUPLICATE:
                self._set_status(db, bug.num, FIXED, installed, f"recheck: no longer reproduces on {installed}",
                                 regression=False)
                change = f"fixed in {installed}"
            elif result == "fixed" and bug.regression:
                self._set_status(db, bug.num, FIXED, installed, f"recheck: fixed again on {installed}",
                                 regression=False)
                change = f"fixed again in {installed}"
            elif result == "reproduces" and bug.status == FIXED and not bug.regression:
                self._set_status(db, bug.num, FIXED, bug.detail,
                                 f"recheck: regression, reproduces again on {installed}", regression=True)
                change = f"regression: marked fixed in {bug.detail}, reproduces on {installed}"
        return change

    def _apply_upstream(self, db: sqlite3.Connection, bug: KnownBug, result: str, installed: str) -> str:
        """A recheck on the newest code applied (see :meth:`record_recheck`)."""
        if result == "fixed" and bug.status == NEW:
            self._set_status(db, bug.num, FIXED_UPSTREAM, installed, f"no longer reproduces on {installed}",
                             regression=False)
            return f"fixed upstream in {installed}"
        if result == "reproduces" and bug.status == FIXED_UPSTREAM:
            self._set_status(db, bug.num, NEW, "", f"reproduces again on {installed}", regression=True)
            return f"regression: reproduces again on {installed}"
        return ""

    def mark_fixed_upstream(self, bug_id: str, build: str) -> bool:
        """Record that the newest code no longer shows a new bug (a campaign's triage reran it there); False when the
        bug's status is anything but new (filed, won't fix... stay as a person set them)."""
        bug = self.get(bug_id)
        if bug.status != NEW:
            return False
        with self._transaction() as db:
            self._set_status(db, bug.num, FIXED_UPSTREAM, build or "the newest code",
                             "campaign triage: no longer reproduces on the newest code", regression=False)
        return True

    def reopen_upstream(self, bug_id: str, build: str) -> bool:
        """Record that the newest code still shows a bug marked fixed upstream (a campaign's triage reran it there):
        new again. t58 listed M-0168 as ready to file, reproducing on keras-nightly, beside the database's
        "fixed-upstream" that a rerun on another stack's build had set. False for any other status."""
        bug = self.get(bug_id)
        if bug.status != FIXED_UPSTREAM:
            return False
        with self._transaction() as db:
            self._set_status(db, bug.num, NEW, "", f"campaign triage: still reproduces on {build or 'the newest code'}",
                             regression=False)
        return True
