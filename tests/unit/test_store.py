"""The campaign store: atomic mutant + state writes, queries, reopening."""
from __future__ import annotations

from pathlib import Path

import pytest

from memo.errors import UsageError
from memo.oracle.verdict import Failure, Verdict
from memo.store import CampaignStore, MutantRecord


def _mutant(i: int) -> MutantRecord:
    return MutantRecord(iteration=i, slot="lenet5", operator="NLA", parent="seed:lenet5", seed="lenet5",
                        lineage={"added": ["Conv2D"]}, ir_json="{}", valid=True, diverse=i % 2 == 0,
                        delta={"types": ["Conv2D"]}, gen_seconds=0.01)


def test_mutants_verdicts_and_state_persist(tmp_path: Path) -> None:
    with CampaignStore(tmp_path / "c1", create=True) as store:
        store.set_meta("config", {"seed": 3, "backends": ["keras-tensorflow"]})
        for i in range(3):
            with store.transaction():
                mid = store.add_mutant(_mutant(i))
                store.add_execution(mid, {"backends": {}}, 0.5, None)
                crash = Verdict("crash", "onnxruntime", "execute", "boom <b>", failure=Failure("error", "E", 1.0))
                store.add_verdict(mid, crash)
                store.save_state(i, {"iteration": i})
        store.add_coverage_point(1.0, 2, 3, 3, {"types": (5, 90), "pairs": (7, 900), "params": (9, 1000)})
    with CampaignStore(tmp_path / "c1") as store:
        assert store.get_meta("config")["seed"] == 3
        assert store.count_mutants(seeds=True) == 3 and store.count_mutants(diverse=True, seeds=True) == 2
        assert store.load_state() == (2, {"iteration": 2})
        verdicts = store.verdicts(("crash",))
        assert len(verdicts) == 3 and verdicts[0].verdict.message == "boom <b>" and verdicts[0].mutant_id == 1
        assert verdicts[0].verdict.failure == Failure("error", "E", 1.0)
        assert store.coverage_history()[0]["pairs"] == 7
        assert store.operator_counts() == {"NLA": (3, 2)}


def test_a_failed_transaction_leaves_nothing(tmp_path: Path) -> None:
    with CampaignStore(tmp_path / "c2", create=True) as store:
        with pytest.raises(RuntimeError):
            with store.transaction():
                store.add_mutant(_mutant(0))
                store.save_state(0, {"iteration": 0})
                raise RuntimeError("killed mid-write")
        assert store.count_mutants(seeds=True) == 0 and store.load_state() is None


def test_opening_a_missing_campaign_is_a_usage_error(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="no campaign"):
        CampaignStore(tmp_path / "nothing")


def _version_1_store(directory: Path, *, recorded: bool = True) -> Path:
    """A store as memo wrote it at schema version 1: no ``bugs.newest`` column (older ones lacked more)."""
    import json
    import sqlite3

    from memo.store.schema import CAMPAIGN_TABLES, DB_NAME, TRIAGE_TABLES

    directory.mkdir(parents=True)
    db = sqlite3.connect(directory / DB_NAME)
    old_bugs = TRIAGE_TABLES.replace(", final_key TEXT,\n    merged_into TEXT, newest TEXT, blame TEXT)", ")")
    assert old_bugs != TRIAGE_TABLES
    db.executescript(CAMPAIGN_TABLES + old_bugs)
    if recorded:
        db.execute("INSERT INTO meta(key, value) VALUES ('schema_version', ?)", (json.dumps(1),))
    db.execute("INSERT INTO meta(key, value) VALUES ('config', ?)", (json.dumps({"seed": 7}),))
    db.commit()
    db.close()
    return directory


@pytest.mark.parametrize("recorded", [True, False])
def test_a_version_1_store_is_migrated_on_open_and_reads_the_same(tmp_path: Path, recorded: bool) -> None:
    import sqlite3

    from memo.store.schema import DB_NAME, SCHEMA_VERSION

    directory = _version_1_store(tmp_path / "old", recorded=recorded)
    with CampaignStore(directory) as store:
        assert store.get_meta("schema_version") == SCHEMA_VERSION == 3
        assert store.get_meta("config") == {"seed": 7}
        assert store.triage.load_bugs() == []
    columns = {row[1] for row in sqlite3.connect(directory / DB_NAME).execute("PRAGMA table_info(bugs)")}
    assert {"final_key", "merged_into", "newest"} <= columns
    with CampaignStore(directory) as store:  # opened again: nothing left to migrate
        assert store.get_meta("schema_version") == 3


def test_a_version_2_store_gains_the_signature_columns_and_its_findings_are_signed_once(tmp_path: Path) -> None:
    import sqlite3

    from memo.kinds import BUG_KINDS
    from memo.store.schema import DB_NAME
    from memo.triage import sign_findings, signature
    from memo.triage.dedup import update_bugs
    from tests.unit.triage_store import make_campaign

    directory = tmp_path / "v2"
    make_campaign(directory).close()
    db = sqlite3.connect(directory / DB_NAME)  # as memo wrote it at schema 2: no signatures, no blame
    for table, column in (("verdicts", "signature"), ("verdicts", "parts"), ("bugs", "blame")):
        db.execute(f"ALTER TABLE {table} DROP COLUMN {column}")
    db.execute("UPDATE meta SET value = '2' WHERE key = 'schema_version'")
    db.commit()
    db.close()
    with CampaignStore(directory) as store:
        assert store.get_meta("schema_version") == 3
        unsigned = store.unsigned_findings(BUG_KINDS)
        assert len(unsigned) == 5, "the migration adds the columns; the old findings await their one signing"
        update_bugs(store)
        expected = {row.id: signature(row.verdict, row.result, None) for row in unsigned}
        stored = {row.id: row.signed.signature for row in store.signed_verdicts(BUG_KINDS) if row.signed}
        assert stored == expected
        assert sign_findings(store) == 0, "signed once: nothing is left for the next reader"
        assert {bug.id for bug in store.triage.load_bugs()} == set(expected.values())


def test_a_new_store_records_its_version(tmp_path: Path) -> None:
    from memo.store.schema import SCHEMA_VERSION

    with CampaignStore(tmp_path / "new", create=True) as store:
        assert store.get_meta("schema_version") == SCHEMA_VERSION


def test_a_newer_store_or_another_file_is_refused_with_one_line(tmp_path: Path) -> None:
    import sqlite3

    from memo.store.schema import DB_NAME, StoreVersionError

    with CampaignStore(tmp_path / "newer", create=True) as store:
        store.set_meta("schema_version", 4)
    before = (tmp_path / "newer" / DB_NAME).read_bytes()
    with pytest.raises(StoreVersionError, match=r"newer memo \(schema 4; this memo knows 3\)") as raised:
        CampaignStore(tmp_path / "newer")
    assert isinstance(raised.value, UsageError) and "\n" not in str(raised.value)
    assert (tmp_path / "newer" / DB_NAME).read_bytes() == before
    other = tmp_path / "other"
    other.mkdir()
    sqlite3.connect(other / DB_NAME).executescript("CREATE TABLE bugs (id TEXT); CREATE TABLE meta (key TEXT)")
    with pytest.raises(StoreVersionError, match="is not a memo campaign store"):
        CampaignStore(other)
