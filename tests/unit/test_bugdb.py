"""The bug database on its own: recording sightings, finding bugs by key, statuses and their history, recheck
verdicts, files, and writes by two processes at once (and a writer killed half-way)."""
from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from memo.bugdb import BugDatabase, CampaignRef, Sighting, export_bug_files, folder_files, parse_id, resolve
from memo.bugdb.export import as_json, as_markdown
from memo.errors import UsageError

ROOT = Path(__file__).resolve().parents[2]
CAMPAIGN_A = CampaignRef.of("nightly", "/runs/a", 1000.0)
CAMPAIGN_B = CampaignRef.of("nightly", "/runs/b", 2000.0)


def sighting(campaign: CampaignRef, bug: str, keys: list[str], *, occurrences: int = 1, reduced: bool = True,
             files: dict[str, bytes] | None = None, library: str = "onnxruntime") -> Sighting:
    stored = files if files is not None else {"repro.py": b"print('hi')\n", "model.keras": b"keras"}
    return Sighting(campaign=campaign, campaign_bug=bug, keys=keys, kind="crash", library=library, stage="load",
                    headline=f"{library} (load): Fail: {bug}", occurrences=occurrences,
                    versions={"onnxruntime": "1.22.0"}, first_seen=campaign.started or 0.0,
                    last_seen=(campaign.started or 0.0) + 10, reduced=reduced, files=lambda: (dict(stored), []))


def test_one_root_cause_seen_by_two_campaigns_is_one_bug(tmp_path: Path) -> None:
    with BugDatabase(tmp_path / "bugs.sqlite") as db:
        first = db.record(sighting(CAMPAIGN_A, "crash-onnxruntime-aaaa", ["sig:crash-onnxruntime-aaaa", "rc:k1"]))
        # another signature, same root-cause key: the same bug
        again = db.record(sighting(CAMPAIGN_B, "crash-onnxruntime-bbbb", ["sig:crash-onnxruntime-bbbb", "rc:k1"],
                                   occurrences=4))
        other = db.record(sighting(CAMPAIGN_B, "crash-mxnet-cccc", ["sig:crash-mxnet-cccc"], library="mxnet"))
        assert first == again == "M-0001" and other == "M-0002"
        bug = db.get("M-0001")
        assert bug.campaigns == ["nightly"] and len(bug.seen) == 2
        assert [s.campaign for s in bug.seen] == [CAMPAIGN_A.key, CAMPAIGN_B.key]
        assert bug.first.campaign == CAMPAIGN_A.key and bug.last.campaign == CAMPAIGN_B.key
        assert bug.to_json()["occurrences"] == 5
        assert db.find(["sig:crash-onnxruntime-bbbb"]).id == "M-0001"
        assert db.find(["sig:unknown"]) is None
        # recording the same campaign bug again updates its sighting instead of adding one
        db.record(sighting(CAMPAIGN_B, "crash-onnxruntime-bbbb", ["sig:crash-onnxruntime-bbbb"], occurrences=9))
        assert [s.occurrences for s in db.get("M-0001").seen] == [1, 9]
        assert [b.id for b in db.bugs(library=["mxnet"])] == ["M-0002"]


def test_a_sighting_bridging_two_bugs_folds_the_later_one(tmp_path: Path) -> None:
    with BugDatabase(tmp_path / "bugs.sqlite") as db:
        db.record(sighting(CAMPAIGN_A, "b1", ["sig:b1", "rc:one"]))
        db.record(sighting(CAMPAIGN_A, "b2", ["sig:b2", "rc:two"]))
        assert db.record(sighting(CAMPAIGN_B, "b3", ["sig:b3", "rc:one", "rc:two"])) == "M-0001"
        assert [bug.id for bug in db.bugs()] == ["M-0001"]  # each root cause listed once
        assert db.get("M-0002").status_text() == "duplicate M-0001"
        assert db.find(["rc:two"]).id == "M-0001"


def test_files_are_kept_once_and_reduced_ones_replace_unreduced(tmp_path: Path) -> None:
    with BugDatabase(tmp_path / "bugs.sqlite") as db:
        db.record(sighting(CAMPAIGN_A, "b1", ["sig:b1"], reduced=False, files={"repro.py": b"unreduced"}))
        assert db.files("M-0001") == {"repro.py": b"unreduced"} and not db.get("M-0001").reduced
        db.record(sighting(CAMPAIGN_B, "b1", ["sig:b1"], reduced=True, files={"repro.py": b"reduced"}))
        assert db.files("M-0001") == {"repro.py": b"reduced"} and db.get("M-0001").reduced
        calls: list[int] = []

        def loader() -> tuple[dict[str, bytes], list[str]]:
            calls.append(1)
            return {"repro.py": b"third"}, []
        later = sighting(CAMPAIGN_B, "b2", ["sig:b2", "sig:b1"])
        later.files = loader
        db.record(later)
        assert calls == [] and db.files("M-0001") == {"repro.py": b"reduced"}  # not even read
        folder = export_bug_files(db, "M-0001", tmp_path / "out")
        assert (folder / "repro.py").read_bytes() == b"reduced"


def test_a_newer_reducers_reduction_replaces_an_older_ones(tmp_path: Path) -> None:
    def reduced_by(version: int | None, script: bytes) -> dict[str, bytes]:
        reduction = {"status": "done"} if version is None else {"status": "done", "reducer": version}
        return {"bug.json": json.dumps({"reduction": reduction}).encode(), "repro.py": script}
    with BugDatabase(tmp_path / "bugs.sqlite") as db:
        db.record(sighting(CAMPAIGN_A, "b1", ["sig:b1"], files=reduced_by(None, b"four layers")))
        again = sighting(CAMPAIGN_B, "b1", ["sig:b1"], files=reduced_by(2, b"one layer"))
        again.reducer = 2
        db.record(again)
        assert db.files("M-0001")["repro.py"] == b"one layer"
        older = sighting(CAMPAIGN_B, "b2", ["sig:b2", "sig:b1"], files=reduced_by(1, b"older"))
        older.reducer = 1
        db.record(older)  # an older (or the same) reducer never replaces a reduction
        assert db.files("M-0001")["repro.py"] == b"one layer"


def test_folder_files_leave_out_what_passes_the_bound(tmp_path: Path) -> None:
    (tmp_path / "repro.py").write_text("x" * 10)
    (tmp_path / "model.keras").write_bytes(b"0" * 1000)
    files, left_out = folder_files(tmp_path, max_bytes=100)
    assert set(files) == {"repro.py"} and left_out == ["model.keras"]
    # an expected output is never just dropped (tests/unit/test_bugdb_expected.py): one memo cannot read is named
    (tmp_path / "expected.npz").write_bytes(b"0" * 1000)
    files, left_out = folder_files(tmp_path, max_bytes=100)
    assert set(files) == {"repro.py", "expected.digest.json"} and left_out == ["model.keras", "expected.npz"]
    assert "unreadable" in files["expected.digest.json"].decode()


def test_marking_checks_its_detail_and_keeps_history(tmp_path: Path) -> None:
    with BugDatabase(tmp_path / "bugs.sqlite") as db:
        db.record(sighting(CAMPAIGN_A, "b1", ["sig:b1"]))
        db.record(sighting(CAMPAIGN_A, "b2", ["sig:b2"]))
        assert db.mark("m-1", "filed", "https://github.com/microsoft/onnxruntime/issues/1").link.endswith("/1")
        with pytest.raises(UsageError, match="needs its URL"):
            db.mark("M-0001", "filed")
        with pytest.raises(UsageError, match="itself"):
            db.mark("M-0001", "duplicate", "M-0001")
        with pytest.raises(UsageError, match="no bug M-0009"):
            db.mark("M-0009", "wontfix", "reason")
        with pytest.raises(UsageError, match="unknown status"):
            db.mark("M-0001", "closed", "x")
        assert db.mark("M-0002", "duplicate", "1").detail == "M-0001"
        assert [c.status for c in db.history("M-0001")] == ["new", "filed"]
    with pytest.raises(UsageError, match="not a bug id"):
        parse_id("crash-onnxruntime-aaaa")


def test_recheck_verdicts_fix_and_flag_regressions(tmp_path: Path) -> None:
    with BugDatabase(tmp_path / "bugs.sqlite") as db:
        db.record(sighting(CAMPAIGN_A, "b1", ["sig:b1"]))
        assert db.record_recheck("M-0001", "reproduces", "", {}, 1.0, "onnxruntime 1.22.0") == ""
        assert db.record_recheck("M-0001", "fixed", "", {}, 1.0, "onnxruntime 1.23.0") == "fixed in onnxruntime 1.23.0"
        assert db.get("M-0001").status_text() == "fixed onnxruntime 1.23.0"
        change = db.record_recheck("M-0001", "reproduces", "", {}, 1.0, "onnxruntime 1.24.0")
        assert change.startswith("regression") and db.get("M-0001").regression
        assert db.get("M-0001").detail == "onnxruntime 1.23.0"  # the claimed fix stays visible
        assert db.record_recheck("M-0001", "error", "no python", {}, 0.0, "?") == ""
        assert [r.result for r in db.rechecks("M-0001")] == ["reproduces", "fixed", "reproduces", "error"]


def test_export_tables(tmp_path: Path) -> None:
    with BugDatabase(tmp_path / "bugs.sqlite") as db:
        db.record(sighting(CAMPAIGN_A, "b1", ["sig:b1"]))
        db.mark("M-0001", "filed", "https://example.org/1")
        bugs = db.bugs()
    table = as_markdown(bugs).splitlines()
    assert table[0] == "| id | library | kind | headline | status | link | first seen |"
    assert table[2].startswith("| M-0001 | onnxruntime | crash |") and "https://example.org/1" in table[2]
    assert '"status": "filed"' in as_json(bugs)


def test_location(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("MEMO_BUGS_DB", raising=False)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path))
    assert resolve(None) == tmp_path / "memo" / "bugs.sqlite"
    assert resolve(None, use_default=False) is None
    assert resolve(None, fallback="/x/recorded.sqlite") == Path("/x/recorded.sqlite")
    monkeypatch.setenv("MEMO_BUGS_DB", str(tmp_path / "env.sqlite"))
    assert resolve(None, fallback="/x/recorded.sqlite") == tmp_path / "env.sqlite"
    assert resolve("none") is None and resolve("/flag.sqlite") == Path("/flag.sqlite")


WRITER = """
import sys, time
from memo.bugdb import BugDatabase, CampaignRef, Sighting
path, name, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
campaign = CampaignRef.of(name, "/runs/" + name, time.time())
with BugDatabase(path) as db:
    print("ready", flush=True)
    for i in range(count):
        # half the root causes are shared by both writers, half are each writer's own
        key = f"rc:shared-{i}" if i % 2 == 0 else f"rc:{name}-{i}"
        db.record(Sighting(campaign=campaign, campaign_bug=f"{name}-{i}", keys=[f"sig:{name}-{i}", key],
                           kind="crash", library="onnxruntime", stage="load", headline="h", occurrences=1,
                           versions={}, first_seen=0.0, last_seen=0.0, reduced=True,
                           files=lambda: ({"repro.py": b"x" * 20000}, [])))
"""


def _writer(path: Path, name: str, count: int) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.Popen([sys.executable, "-c", WRITER, str(path), name, str(count)], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def test_two_processes_writing_at_once_both_land(tmp_path: Path) -> None:
    path = tmp_path / "bugs.sqlite"
    BugDatabase(path).close()
    writers = [_writer(path, name, 40) for name in ("alpha", "beta")]
    for writer in writers:
        out, err = writer.communicate(timeout=120)
        assert writer.returncode == 0, err
    with BugDatabase(path) as db:
        bugs = db.bugs()
        # 20 shared root causes + 20 of each writer's own, each once, with every sighting
        assert len(bugs) == 60
        assert sum(len(bug.seen) for bug in bugs) == 80
        assert sorted(len(bug.seen) for bug in bugs).count(2) == 20


def test_a_writer_killed_half_way_leaves_a_sound_database(tmp_path: Path) -> None:
    path = tmp_path / "bugs.sqlite"
    BugDatabase(path).close()
    writer = _writer(path, "killed", 100000)
    assert writer.stdout is not None and writer.stdout.readline().strip() == "ready"
    time.sleep(1.5)
    writer.send_signal(signal.SIGKILL)
    writer.wait(timeout=30)
    raw = sqlite3.connect(path)
    assert raw.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    raw.close()
    with BugDatabase(path) as db:
        bugs = db.bugs()
        assert bugs, "the writer recorded nothing in 1.5 s"
        # every bug that landed landed whole: its sighting, its keys and its files
        assert all(len(bug.seen) == 1 and len(bug.keys) == 2 for bug in bugs)
        assert all(db.files(bug.id) == {"repro.py": b"x" * 20000} for bug in bugs[-3:])


def test_fuzz_records_the_database_it_resolves(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from memo.campaign.config import CampaignConfig
    from memo.cli import build_parser
    from memo.commands.fuzz import _bugs_db

    monkeypatch.delenv("MEMO_BUGS_DB", raising=False)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    parse = build_parser().parse_args
    assert _bugs_db(parse(["fuzz", "--iterations", "1"])) == str(tmp_path / "data" / "memo" / "bugs.sqlite")
    assert _bugs_db(parse(["fuzz", "--iterations", "1", "--bugs-db", "none"])) is None
    shared = tmp_path / "team" / "bugs.sqlite"
    assert _bugs_db(parse(["fuzz", "--iterations", "1", "--bugs-db", str(shared)])) == str(shared)
    old = CampaignConfig(name="c").to_json()
    del old["bugs_db"]  # a campaign stored before the database: resumes without one
    assert CampaignConfig.from_json(old).bugs_db is None


def test_a_read_only_database_can_be_read_but_not_written(tmp_path: Path) -> None:
    path = tmp_path / "bugs.sqlite"
    with BugDatabase(path) as db:
        db.record(sighting(CAMPAIGN_A, "b1", ["sig:b1"]))
    path.chmod(0o444)
    with BugDatabase(path, read_only=True) as db:
        assert db.find(["sig:b1"]).id == "M-0001"
        if os.geteuid() != 0:  # root writes through file modes
            with pytest.raises(sqlite3.OperationalError):
                db.mark("M-0001", "wontfix", "x")
    with pytest.raises(UsageError, match="bug database"):
        BugDatabase(tmp_path / "missing.sqlite", read_only=True)


def test_the_bugs_database_option_goes_before_or_after_the_action() -> None:
    from memo.cli import build_parser

    parse = build_parser().parse_args
    assert parse(["bugs", "--bugs-db", "a.sqlite", "list"]).bugs_db == "a.sqlite"
    assert parse(["bugs", "list", "--bugs-db", "b.sqlite", "--json"]).bugs_db == "b.sqlite"
    assert parse(["bugs", "recheck", "--bugs-db", "c.sqlite"]).bugs_db == "c.sqlite"
    assert parse(["bugs", "list"]).bugs_db is None
