"""Remembered script runs (memo.bugdb.script_runs): the same files with the same interpreter are answered from the
record; a changed file, or a run that ran out of time, runs again. Real fresh processes of a tiny script."""
from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest

from memo.bugdb.recheck import run_script
from memo.bugdb.script_runs import folder_digest

SCRIPT = """import pathlib, sys
log = pathlib.Path(sys.argv[0]).resolve().parent.parent / "runs.log"
log.write_text(log.read_text() + "x" if log.exists() else "x")
print("value", pathlib.Path("input.txt").read_text(), "in", pathlib.Path.cwd())
sys.exit(1)
"""


@pytest.fixture
def folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("MEMO_SCRIPT_RUNS", str(tmp_path / "runs.sqlite"))
    bug = tmp_path / "bug"
    bug.mkdir()
    (bug / "repro.py").write_text(SCRIPT)
    (bug / "input.txt").write_text("1")
    return bug


def _runs(folder: Path) -> int:
    log = folder.parent / "runs.log"
    return len(log.read_text()) if log.exists() else 0


def test_a_second_run_of_the_same_files_is_answered_from_the_record(folder: Path) -> None:
    first = run_script(folder, sys.executable, 60, remember=True)
    second = run_script(folder, sys.executable, 60, remember=True)
    assert _runs(folder) == 1
    assert (first.returncode, first.output) == (second.returncode, second.output) == (1, f"value 1 in {folder}\n")
    assert not first.remembered and second.remembered  # the answer says where it comes from
    assert first.ran_at is None and second.ran_at is not None and abs(second.ran_at - time.time()) < 60  # and when
    (folder / "bug.json").write_text("{}")  # memo's own records are not the script's input
    (folder / "newest.json").write_text("{}")
    run_script(folder, sys.executable, 60, remember=True)
    assert _runs(folder) == 1


def test_a_changed_input_or_no_remembering_runs_the_script(folder: Path) -> None:
    run_script(folder, sys.executable, 60, remember=True)
    (folder / "input.txt").write_text("2")
    changed = run_script(folder, sys.executable, 60, remember=True)
    assert _runs(folder) == 2 and changed.output.startswith("value 2")
    run_script(folder, sys.executable, 60)  # memo repro, the database's recheck: always a fresh process
    assert _runs(folder) == 3


def test_a_run_out_of_time_is_not_remembered(folder: Path) -> None:
    (folder / "repro.py").write_text(SCRIPT.replace("sys.exit(1)", "import time; time.sleep(30)"))
    assert run_script(folder, sys.executable, 2, remember=True).timed_out
    assert run_script(folder, sys.executable, 2, remember=True).timed_out
    assert _runs(folder) == 2


def test_the_remembered_output_names_the_folder_it_is_read_in(folder: Path, tmp_path: Path) -> None:
    run_script(folder, sys.executable, 60, remember=True)
    moved = tmp_path / "elsewhere"
    folder.rename(moved)
    again = run_script(moved, sys.executable, 60, remember=True)
    assert _runs(moved) == 1 and again.output == f"value 1 in {moved}\n"


def test_the_digest_leaves_out_memo_records_and_the_minimal_folder(folder: Path) -> None:
    before = folder_digest(folder, "repro.py")
    (folder / "minimal").mkdir()
    (folder / "minimal" / "check.json").write_text("{}")
    (folder / "minimal" / "bug_repro.py").write_text("print(1)")
    assert folder_digest(folder, "repro.py") == before
    assert folder_digest(folder, "other.py") != before
