"""Bug databases written by another memo: an older one a migration reaches is migrated in place and keeps its bugs;
any other (older without a migration, newer, not a bug database) stops every command with one line and a non-zero
exit, and the file is left as it was. The databases here are built by hand, as the older memo wrote them."""
from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from memo.bugdb import SCHEMA_VERSION, BugDatabase, BugDatabaseVersionError
from memo.cli import main

# The first release's tables (schema 1), as memo 0.1 created them: no ``bugs.expected`` column.
SCHEMA_1 = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE bugs (
    num INTEGER PRIMARY KEY AUTOINCREMENT, kind TEXT NOT NULL, library TEXT NOT NULL, stage TEXT NOT NULL,
    headline TEXT NOT NULL, origin TEXT NOT NULL, status TEXT NOT NULL DEFAULT 'new',
    detail TEXT NOT NULL DEFAULT '', regression INTEGER NOT NULL DEFAULT 0, reduced INTEGER NOT NULL DEFAULT 0,
    files_left_out TEXT NOT NULL DEFAULT '', created REAL NOT NULL, updated REAL NOT NULL);
CREATE TABLE bug_keys (key TEXT PRIMARY KEY, bug INTEGER NOT NULL REFERENCES bugs(num));
CREATE TABLE bug_files (bug INTEGER NOT NULL, name TEXT NOT NULL, data BLOB NOT NULL, PRIMARY KEY (bug, name));
CREATE TABLE campaigns (key TEXT PRIMARY KEY, name TEXT NOT NULL, directory TEXT NOT NULL, started REAL);
CREATE TABLE sightings (
    bug INTEGER NOT NULL, campaign TEXT NOT NULL, campaign_bug TEXT NOT NULL, occurrences INTEGER NOT NULL,
    versions TEXT NOT NULL, first_seen REAL NOT NULL, last_seen REAL NOT NULL, PRIMARY KEY (bug, campaign, campaign_bug));
CREATE TABLE status_history (id INTEGER PRIMARY KEY, bug INTEGER NOT NULL, status TEXT NOT NULL, detail TEXT NOT NULL,
    note TEXT NOT NULL, changed REAL NOT NULL);
CREATE TABLE rechecks (id INTEGER PRIMARY KEY, bug INTEGER NOT NULL, result TEXT NOT NULL, detail TEXT NOT NULL,
    versions TEXT NOT NULL, seconds REAL NOT NULL, checked REAL NOT NULL);
INSERT INTO bugs(kind, library, stage, headline, origin, status, detail, created, updated)
    VALUES ('crash', 'onnxruntime', 'load', 'onnxruntime (load): Fail', 'memo 0.1', 'filed',
            'https://github.com/microsoft/onnxruntime/issues/1', 1000.0, 1000.0);
INSERT INTO bug_keys VALUES ('sig:crash-onnxruntime-aaaa', 1);
"""


def old_database(path: Path, version: int | None) -> Path:
    """A bug database as an older memo left it: schema 1's tables and one filed bug, ``version`` recorded
    (None: none, as before versions were recorded)."""
    with sqlite3.connect(path) as db:
        db.executescript(SCHEMA_1)
        if version is not None:
            db.execute("INSERT INTO meta VALUES ('schema_version', ?)", (str(version),))
    db.close()
    return path


def _version(path: Path) -> str:
    db = sqlite3.connect(path)
    try:
        return db.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()[0]
    finally:
        db.close()


def test_a_schema_1_database_is_migrated_in_place_and_keeps_its_bugs(tmp_path: Path) -> None:
    path = old_database(tmp_path / "bugs.sqlite", 1)
    with BugDatabase(path) as db:
        bug = db.find(["sig:crash-onnxruntime-aaaa"])
        assert bug is not None and bug.id == "M-0001" and bug.status == "filed"
    assert _version(path) == str(SCHEMA_VERSION) == "2"
    columns = {row[1] for row in sqlite3.connect(path).execute("PRAGMA table_info(bugs)")}
    assert "expected" in columns
    with BugDatabase(path) as db:  # opened again: nothing left to migrate
        assert [b.id for b in db.bugs()] == ["M-0001"]


def test_a_reader_migrates_an_older_database_it_may_write(tmp_path: Path) -> None:
    path = old_database(tmp_path / "bugs.sqlite", 1)
    with BugDatabase(path, read_only=True) as db:
        assert db.find(["sig:crash-onnxruntime-aaaa"]).id == "M-0001"
    assert _version(path) == "2"


@pytest.mark.parametrize("version, line", [
    (None, "was written by an older memo (schema 0); run `memo bugs export` with that version or pass --bugs-db none"),
    (0, "was written by an older memo (schema 0); run `memo bugs export` with that version or pass --bugs-db none"),
    (9, "was written by a newer memo (schema 9; this memo knows 2): upgrade memo, or pass --bugs-db none"),
])
def test_a_database_no_migration_reaches_is_refused_and_left_as_it_was(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], version: int | None, line: str) -> None:
    path = old_database(tmp_path / "bugs.sqlite", version)
    before = path.read_bytes()
    for read_only in (False, True):
        with pytest.raises(BugDatabaseVersionError) as refused:
            BugDatabase(path, read_only=read_only)
        assert str(refused.value) == f"bug database {path} {line}"
    assert main(["bugs", "--bugs-db", str(path), "list"]) == 2
    err = capsys.readouterr().err
    assert err == f"memo: error: bug database {path} {line}\n"
    assert path.read_bytes() == before and not Path(f"{path}-wal").exists()


def test_a_campaign_database_is_not_taken_for_a_bug_database(tmp_path: Path) -> None:
    from memo.store import CampaignStore

    CampaignStore(tmp_path / "c", create=True).close()
    path = tmp_path / "c" / "campaign.sqlite"
    before = path.read_bytes()
    with pytest.raises(BugDatabaseVersionError, match="is not a memo bug database"):
        BugDatabase(path)
    assert path.read_bytes() == before


def test_fuzz_and_report_stop_on_an_old_database_and_none_overrides_the_recorded_one(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    from memo.commands.fuzz import _check_bugs_db
    from tests.unit.triage_store import make_campaign

    monkeypatch.delenv("MEMO_BUGS_DB", raising=False)
    old = old_database(tmp_path / "old.sqlite", 0)
    with pytest.raises(BugDatabaseVersionError, match=r"older memo \(schema 0\)"):
        _check_bugs_db(str(old))  # before the campaign starts
    _check_bugs_db(str(tmp_path / "not-yet.sqlite"))  # created by the campaign's first triage pass
    directory = tmp_path / "campaigns" / "unit"
    with make_campaign(directory) as store:
        store.set_meta("config", {**store.get_meta("config"), "bugs_db": str(old)})
    out = tmp_path / "r.json"
    assert main(["report", str(directory), "--format", "json", "-o", str(out)]) == 2
    assert "older memo (schema 0)" in capsys.readouterr().err and not out.exists()
    assert main(["report", str(directory), "--format", "json", "-o", str(out), "--bugs-db", "none"]) == 0
    assert '"database": null' in out.read_text()
    monkeypatch.setenv("MEMO_BUGS_DB", "none")
    assert main(["report", str(directory), "--format", "json", "-o", str(out)]) == 0
