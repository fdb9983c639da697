"""Library coverage in the store, the report (HTML, JSON), ``memo coverage --library`` and a backend's result; the
feedback's pure parts (the search's reward, who becomes a parent, the executed share)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from memo.backends.result import BackendResult, ExecutionResult, LibraryLines, StageResult
from memo.campaign.feedback import Awaiting, Outcome, runs_anyway
from memo.cli import main
from memo.coverage import Coverage
from memo.report import write_report
from memo.report.library import library_data, library_table, library_text
from memo.search.base import SearchState
from memo.search.mh import MetropolisHastings
from memo.store import CampaignStore
from memo.triage.dedup import update_bugs
from tests.unit.triage_store import HOSTILE, make_campaign

STARTED = 1_700_000_000.0


def _record(store: CampaignStore) -> None:
    """Two seeds' runs, then two mutants: the second mutant reaches one module nobody reached before."""
    totals = {"tf2onnx": 200, "keras-tensorflow": 1000}
    store.library.add(1, seed=True, created=STARTED + 5, totals=totals,
                      new={"tf2onnx": {"tf2onnx/tfonnx.py": [1, 2, 3]}, "keras-tensorflow": {"keras/src/a.py": [9]}})
    store.library.add(2, seed=True, created=STARTED + 6, totals=totals, new={"tf2onnx": {"tf2onnx/tfonnx.py": [4]}})
    store.library.add(3, seed=False, created=STARTED + 60, totals=totals, new={"tf2onnx": {"tf2onnx/tfonnx.py": [5]}})
    store.library.add(4, seed=False, created=STARTED + 120, totals=totals,
                      new={"tf2onnx": {f"tf2onnx/onnx_opset/{HOSTILE}.py": [1, 2]}})
    store.library.add(4, seed=False, created=STARTED + 121, totals=totals, new={"tf2onnx": {"tf2onnx/tfonnx.py": [1]}})


def test_the_store_keeps_each_line_with_the_model_that_reached_it_first(tmp_path: Path) -> None:
    with CampaignStore(tmp_path / "c", create=True) as store:
        _record(store)
        counts = {c.library: (c.covered, c.by_seeds, c.total) for c in store.library.counts()}
        assert counts == {"keras-tensorflow": (1, 1, 1000), "tf2onnx": (7, 4, 200)}, "line 1 is stored once"
        assert [(m.file, m.new_lines) for m in store.library.top_modules()] == [
            (f"tf2onnx/onnx_opset/{HOSTILE}.py", 2), ("tf2onnx/tfonnx.py", 1)], "the seeds' lines are no mutant's"
        assert sorted(store.library.lines())[0] == ("keras-tensorflow", "keras/src/a.py", 9)


def test_library_data_has_figures_baseline_modules_and_a_curve_per_library(tmp_path: Path) -> None:
    with CampaignStore(tmp_path / "c", create=True) as store:
        assert library_data(store) is None
        store.set_meta("started", STARTED)
        _record(store)
        data = library_data(store)
    assert data is not None
    assert data["figures"] == {"keras-tensorflow": {"covered": 1, "total": 1000},
                               "tf2onnx": {"covered": 7, "total": 200}}
    assert data["curves"]["tf2onnx"][-1] == (120.0, 7.0) and data["curves"]["tf2onnx"][0] == (5.0, 1.0)
    text = library_text(data)
    assert "tf2onnx" in text and "3.5" in text and "onnx_opset" in text
    table = library_table(data["figures"], {"tf2onnx": 4}).splitlines()
    assert table[0].split() == ["library", "covered", "total", "%", "seeds", "beyond", "seeds"]
    assert table[2].split() == ["tf2onnx", "7", "200", "3.5", "4", "3"]


def test_the_report_shows_the_library_section_escaped_and_the_json_the_figures(tmp_path: Path) -> None:
    directory = tmp_path / "campaigns" / "unit"
    with make_campaign(directory) as store:
        _record(store)
        update_bugs(store)
    html = write_report(directory, tmp_path / "r.html").read_text()
    assert 'id="library-coverage"' in html and "<td>tf2onnx</td><td>7</td><td>200</td><td>3.5</td>" in html
    assert "tf2onnx lines (of 200)" in html, "one curve per library, drawn as the model-level ones"
    assert "one executed mutant in" not in html, "a campaign with no sampling recorded traced every model"
    assert HOSTILE not in html, "a file name is escaped"
    markdown = write_report(directory, tmp_path / "r.md", "markdown").read_text()
    assert "## Library code coverage" in markdown and "| tf2onnx | 7 | 200 | 3.5 | 4 | 3 |" in markdown
    data = json.loads(write_report(directory, tmp_path / "r.json", "json").read_text())
    assert data["library_coverage"] == {"keras-tensorflow": {"covered": 1, "total": 1000},
                                        "tf2onnx": {"covered": 7, "total": 200}}


def test_the_report_says_when_only_a_share_of_the_mutants_was_traced(tmp_path: Path) -> None:
    directory = tmp_path / "campaigns" / "unit"
    with make_campaign(directory) as store:
        _record(store)
        store.set_meta("config", {**(store.get_meta("config", {}) or {}), "library_every": 3})
        update_bugs(store)
    html = write_report(directory, tmp_path / "r.html").read_text()
    assert "every seed and one executed mutant in 3" in html and "lower bound" in html


def test_a_campaign_without_library_coverage_has_no_section(tmp_path: Path) -> None:
    directory = tmp_path / "campaigns" / "unit"
    with make_campaign(directory) as store:
        update_bugs(store)
    assert 'id="library-coverage"' not in write_report(directory, tmp_path / "r.html").read_text()
    assert json.loads(write_report(directory, tmp_path / "r.json", "json").read_text())["library_coverage"] == {}


def test_memo_coverage_library_prints_the_table(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with CampaignStore(tmp_path / "c", create=True) as store:
        _record(store)
    assert main(["coverage", "--library", str(tmp_path / "c")]) == 0
    out = capsys.readouterr().out
    assert "tf2onnx" in out and "keras-tensorflow" in out and "modules with the most lines" in out
    assert main(["coverage", "--library", str(tmp_path / "c"), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["figures"]["tf2onnx"] == {"covered": 7, "total": 200}


def test_memo_coverage_library_refuses_a_campaign_without_it(tmp_path: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    CampaignStore(tmp_path / "c", create=True).close()
    assert main(["coverage", "--library", str(tmp_path / "c")]) != 0
    assert "recorded no library coverage" in capsys.readouterr().err
    assert main(["coverage"]) != 0, "neither model paths nor --library"


def test_a_result_carries_its_library_lines_through_json_and_drops_them_for_the_store() -> None:
    lines = LibraryLines(total=200, files={"tf2onnx/tfonnx.py": [1, 2]})
    backend = BackendResult("tf2onnx", "keras", "converter", [StageResult("convert", "ok")], library={"tf2onnx": lines})
    result = ExecutionResult("a", "keras-tensorflow", backends={"tf2onnx": backend,
                                                                "onnx2torch": BackendResult("onnx2torch", "onnx")})
    again = ExecutionResult.from_json(json.loads(json.dumps(result.to_json())))
    assert again.backends["tf2onnx"].library == {"tf2onnx": lines}
    assert again.library_reached() == [("tf2onnx", 200, {"tf2onnx/tfonnx.py": [1, 2]})]
    assert "library" not in result.without_library_lines().to_json()["backends"]["tf2onnx"]
    assert "library" not in result.to_json()["backends"]["onnx2torch"], "a result without lines reads as before"


def test_new_library_lines_count_as_diverse_once_in_the_search() -> None:
    search = MetropolisHastings(SearchState(["s"], ["NLA", "LA"]))
    search.library_feedback(("s", "NLA"), 12, diverse=False)
    search.library_feedback(("s", "LA"), 3, diverse=True)
    search.library_feedback(("s", "LA"), 0, diverse=False)
    assert search.state.seeds[("s", "NLA")].diverse == 1 and search.state.seeds[("s", "LA")].diverse == 0
    assert search.state.seeds[("s", "NLA")].reward > search.state.seeds[("s", "LA")].reward > 0


def test_a_library_candidate_becomes_a_parent_only_with_new_library_lines() -> None:
    item = Awaiting(1, 7, 9, "s", "m7", "s", "{}", Coverage(), candidate=False, operator="NLA", diverse=False,
                    library_candidate=True)
    assert not item.becomes_parent(Outcome(reference_ran=True))
    assert item.becomes_parent(Outcome(reference_ran=True, library_new=3))
    assert not item.becomes_parent(Outcome(reference_ran=False, library_new=3))
    assert Awaiting.from_json(json.loads(json.dumps(item.to_json()))) == item
    assert [n for n in range(1, 13) if runs_anyway(n, True)] == [4, 8, 12]
    assert [n for n in range(1, 49) if runs_anyway(n, False)] == [16, 32, 48]
