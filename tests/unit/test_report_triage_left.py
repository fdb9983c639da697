"""The report says how much triage is left and gives the one command that continues it."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from memo.report import write_report
from memo.report.triage_figures import triage_status
from memo.triage.dedup import update_bugs
from memo.triage.pending import S_PER_PENDING_BUG, pending_localizations
from tests.unit.triage_store import make_campaign


def test_pending_triage_is_counted_and_the_report_gives_the_command_that_continues_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # the campaign is then nameable as campaigns/unit
    directory = tmp_path / "campaigns" / "unit"
    with make_campaign(directory) as store:
        update_bugs(store)
        crashes = [bug.id for bug in store.triage.load_bugs() if bug.kind == "crash" and not bug.unlocalized]
    data = json.loads(write_report(directory, tmp_path / "r.json", "json").read_text())
    left = data["triage_left"]
    assert left["bugs"] == len(crashes) == 2 and left["localizations"] == 1  # the keras-jax NaN
    assert left["distinct"] == 2 and left["note"] == "", "two root guesses: nothing to say of duplicates"
    budget = max(120, 60 * -(-(S_PER_PENDING_BUG * 2 + 4) // 60))
    assert left["command"] == f"python -m memo report unit --triage --budget {budget:.0f}"
    html = write_report(directory, tmp_path / "r.html").read_text()
    assert 'id="triage-left"' in html and left["command"] in html
    assert "Triage has not finished" in write_report(directory, tmp_path / "r.md", "markdown").read_text()

    with make_campaign(tmp_path / "elsewhere" / "c") as store:  # not under ./campaigns: named by its folder
        update_bugs(store)
        for bug in store.triage.load_bugs():
            folder = tmp_path / "bugs" / bug.id
            folder.mkdir(parents=True)
            store.triage.update_bug(bug.id, bug_dir=str(folder), reduction={"status": "reduced"})
    data = json.loads(write_report(tmp_path / "elsewhere" / "c", tmp_path / "c.json", "json").read_text())
    assert data["triage_left"]["bugs"] == 0 and str(tmp_path / "elsewhere" / "c") in data["triage_left"]["command"]


def test_the_median_size_is_that_of_the_reduced_bugs_only() -> None:
    def bug(original: int, reduced: int | None) -> dict:
        return {"original_layers": original, "reduced_layers": reduced, "reproduces": None, "status": "-"}

    # three reduced (to 1, 2 and 9 layers); two whose reduction had no time yet keep their 28 layers
    status = triage_status([bug(30, 1), bug(20, 2), bug(25, 9), bug(28, 28), bug(28, 28), bug(12, None)], [])
    assert status["reduced"] == 3 and status["median_layers"] == 2


def test_a_numeric_finding_localization_could_not_place_is_not_said_to_await_it(tmp_path: Path) -> None:
    directory = tmp_path / "campaigns" / "unit"
    with make_campaign(directory) as store:
        update_bugs(store)
        (verdict,) = pending_localizations(store)  # the keras-jax NaN
        store.triage.save_localization(verdict, None, None, {"reason": "no outputs from keras-jax on the probe model"})
        update_bugs(store)
    data = json.loads(write_report(directory, tmp_path / "r.json", "json").read_text())
    assert [(a["library"], a["findings"], a["unlocalizable"]) for a in data["awaiting_localization"]] == [
        ("keras-jax", 1, 1)]
    assert data["triage_left"]["localizations"] == 0
    html = write_report(directory, tmp_path / "r.html").read_text()
    assert "0 numeric findings await localization, 1 could not be localized" in html


def test_the_bugs_left_say_how_many_are_distinct_when_not_all_are() -> None:
    from memo.report.markdown import _triage_left
    from memo.triage.reduce_order import distinct_note

    note = distinct_note(34, 10)
    assert note == " (10 of them distinct and fileable; the others likely duplicates or on a retired library)"
    assert distinct_note(3, 3) == distinct_note(0, 0) == distinct_note(5, None) == ""
    text = _triage_left({"bugs": 34, "distinct": 10, "note": note, "localizations": 2, "command": "memo report c"})
    assert text.startswith(" Triage has not finished: 34 bugs to reduce and check (10 of them distinct and fileable;")
