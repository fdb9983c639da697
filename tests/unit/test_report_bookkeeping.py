"""The report's bookkeeping: one count of "ready to file" for the header and the sections, retired or legacy entries
kept apart and never counted ready, a remembered newest-code verdict said to be remembered (never a 0-s rerun), and
an issue text's newest-code line naming the builds of the library it is filed against."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from memo.bug_files import NEWEST_FILE
from memo.filing.folder import BugFolder
from memo.filing.issue import newest_lines
from memo.report.sections import READY, section_counts, section_of, status_text, ready_count
from memo.report.triage_figures import triage_status
from memo.triage import newest as newest_module
from memo.triage.newest import earlier_run, is_remembered, newest_check, provenance


def _entry(**values: Any) -> dict[str, Any]:
    entry: dict[str, Any] = {"id": "b", "kind": "crash", "reproduces": True, "reduced_layers": 1,
                             "original_layers": 6, "occurrences": 1, "first_seen": 0.0,
                             "minimal": {"reproduces": True, "lines": 20}}
    entry.update(values)
    entry["section"] = section_of(entry)
    entry["status"] = status_text(entry)
    return entry


def test_header_and_sections_count_ready_alike_and_retired_is_not_ready() -> None:
    entries = [_entry(), _entry(), _entry(upstream={"status": "retired"}), _entry(upstream={"status": "legacy"}),
               _entry(reproduces=False)]
    sections = {s["key"]: s["count"] for s in section_counts(entries)}
    assert ready_count(entries) == sections["ready"] == 2
    assert sections["retired"] == 2
    assert triage_status(entries, [])["ready"] == 2
    retired = [e for e in entries if e["section"] == "retired"]
    assert all("ready" not in e["status"] and "not fileable" in e["status"] for e in retired)
    assert sum(1 for e in entries if e["status"] == READY) == ready_count(entries)
    keys = [s["key"] for s in section_counts(entries)]
    assert keys.index("retired") > keys.index("ready")  # kept visible, below the ready section


def test_a_remembered_verdict_says_so_and_is_never_a_zero_second_rerun() -> None:
    legacy = {"result": "fixed", "build": "keras-nightly 3.16", "seconds": 0.0}
    assert is_remembered(legacy)
    assert "date not recorded" in provenance(legacy) and "0.0 s" not in provenance(legacy)
    earlier = {"result": "fixed", "build": "keras-nightly 3.16", "seconds": 24.1, "checked": 1795899276.6}
    said = provenance({**legacy, "remembered": earlier_run(legacy, earlier)})
    assert said.startswith("memo ran this script on keras-nightly 3.16 on 2026-") and "(24.1 s)" in said
    assert "unchanged since" in said and "not rerun" not in said
    other_build = earlier_run(legacy, {**earlier, "build": "keras-nightly 3.15"})
    assert other_build["checked"] is None  # another build's run is not the one remembered
    assert provenance({"result": "fixed", "build": "x", "seconds": 12.0}) == ""  # a run made then
    # t55's reader: "its date not recorded" cannot be checked; the remembered run's own date is kept
    dated = provenance({**legacy, "remembered": {"checked": 1795899276.6, "build": "x", "seconds": None}})
    assert dated.startswith("memo ran this script on x on 2026-") and "date not recorded" not in dated


def test_newest_check_marks_a_run_answered_from_memory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from memo.bugdb.recheck import RecheckResult

    (tmp_path / "bug.json").write_text(json.dumps({"id": "b", "library": "keras-torch", "newest_before": {
        "result": "fixed", "build": "keras-nightly 3.16.0.dev1, torch 2.15.0", "seconds": 24.1, "checked": 1.8e9}}))
    versions = {"keras-nightly": "3.16.0.dev1", "torch": "2.15.0"}
    monkeypatch.setattr(newest_module, "recheck_folder", lambda *a, **k: RecheckResult(
        "fixed", "does not reproduce", versions, 0.01, "py", 1, remembered=True))
    outcome = newest_check(tmp_path, "keras-torch", "py", timeout_s=10, remember=True)
    assert outcome["seconds"] is None and outcome["remembered"]["seconds"] == 24.1
    assert "(24.1 s)" in provenance(outcome)
    monkeypatch.setattr(newest_module, "recheck_folder", lambda *a, **k: RecheckResult(
        "fixed", "does not reproduce", versions, 9.0, "py", 1))
    fresh = newest_check(tmp_path, "keras-torch", "py", timeout_s=10, remember=True)
    assert fresh["seconds"] == 9.0 and "remembered" not in fresh and provenance(fresh) == ""


def _newest(tmp_path: Path, **values: Any) -> None:
    (tmp_path / NEWEST_FILE).write_text(json.dumps(values))


def test_the_newest_line_names_the_blamed_library_not_the_one_rerun(tmp_path: Path) -> None:
    _newest(tmp_path, result="reproduces", library="onnx2pytorch", seconds=5.0,
            build="onnx2pytorch 0.6.0, torch 2.15.0, onnx-weekly 1.24.0.dev1",
            versions={"onnx2pytorch": "0.6.0", "torch": "2.15.0", "onnx-weekly": "1.24.0.dev1"})
    lines = newest_lines(BugFolder(tmp_path, {"library": "onnx2pytorch", "kind": "crash"}, blamed="tf2onnx"))
    assert len(lines) == 1 and lines[0].startswith("- not rechecked on tf2onnx's newest code")
    assert "ran onnx2pytorch's script" in lines[0]
    own = newest_lines(BugFolder(tmp_path, {"library": "onnx2pytorch", "kind": "crash"}))
    assert own[0].startswith("- still reproduces on onnx2pytorch's newest code (onnx2pytorch 0.6.0")
    assert "development builds: onnx-weekly 1.24.0.dev1" in own[0]


def test_the_newest_line_names_the_blamed_librarys_builds_where_the_rerun_ran_it(tmp_path: Path) -> None:
    _newest(tmp_path, result="reproduces", library="keras-openvino", seconds=7.6, build="keras-nightly 3.16, openvino 1",
            versions={"keras-nightly": "3.16", "openvino": "1", "keras-openvino": "0.0.1"})
    lines = newest_lines(BugFolder(tmp_path, {"library": "keras-openvino", "kind": "crash"}, blamed="openvino"))
    assert lines == ["- still reproduces on openvino's newest release (openvino 1; no development build of it is "
                     "published)"]
    _newest(tmp_path, result="reproduces", library="keras-openvino", seconds=0.0, build="keras-nightly 3.16, openvino 1",
            versions={"keras-nightly": "3.16", "openvino": "1"})
    remembered = newest_lines(BugFolder(tmp_path, {"library": "keras-openvino", "kind": "crash"}))
    assert "memo ran this script on these packages before" in remembered[0] and "0.0 s" not in remembered[0]


def test_nan_an_engine_drops_where_the_spec_is_silent_is_not_ready_but_kept_apart() -> None:
    settled = {"decision": "confirmed", "reason": "NaN not propagated: engine gives 255"}
    entry = _entry(kind="inconsistency", truth=settled)
    assert entry["section"] == "spec-open" and ready_count([entry]) == 0
    through = _entry(kind="inconsistency", truth={"decision": "confirmed",
                                                  "reason": "special values against the operator's contract: ..."})
    assert through["section"] == "spec-open"  # a NaN made and removed inside (AutoContrast's 0/0 through Min/Max)
    confirmed = _entry(kind="inconsistency", truth={"decision": "confirmed", "reason": "accused 40 tolerances"})
    assert confirmed["section"] == "ready"


def test_keras_front_end_bugs_are_filed_at_keras_tracker() -> None:
    from memo.backends.documented import upstream_of

    assert upstream_of("keras").tracker == upstream_of("keras-tensorflow").tracker
    assert "keras-team/keras" in upstream_of("keras").tracker
