"""The newest-code check (issue 39): where its interpreter comes from, how development builds are named, which report
section a bug lands in after its rerun there, and what the bug database records."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

from memo.bugdb import BugDatabase, CampaignRef, Sighting
from memo.errors import UsageError
from memo.newest import (CANNOT_RUN, FIXED_UPSTREAM, NEXT_PYTHON_ENV, STILL_REPRODUCES, build_text, installed_as,
                         is_off, next_python)
from memo.report.sections import section_of, status_text
from memo.triage.newest import recorded_next_python

CAMPAIGN = CampaignRef.of("c1", "/tmp/c1", 1.0)


def test_an_explicit_interpreter_wins_and_none_switches_the_check_off(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(NEXT_PYTHON_ENV, "/nowhere/python")
    assert next_python(sys.executable) == str(Path(sys.executable).absolute())
    assert next_python("none") is None and next_python("NONE") is None
    with pytest.raises(UsageError, match=r"^\$MEMO_NEXT_PYTHON /nowhere/python: no Python interpreter there"):
        next_python()  # the environment variable, when set, must name an interpreter
    with pytest.raises(UsageError, match="^--next-python /no/such: no Python interpreter there"):
        next_python("/no/such")
    monkeypatch.setenv(NEXT_PYTHON_ENV, sys.executable)
    assert next_python() == str(Path(sys.executable).absolute())


def test_a_campaign_records_its_interpreter_and_an_older_one_uses_the_default(monkeypatch: pytest.MonkeyPatch,
                                                                              tmp_path: Path) -> None:
    monkeypatch.setenv(NEXT_PYTHON_ENV, sys.executable)
    assert recorded_next_python({}) is None  # started before the check existed: only memo report --next-python
    assert recorded_next_python({"next_python": ""}) is None  # started with none
    assert recorded_next_python({"next_python": sys.executable}) == sys.executable
    assert recorded_next_python({"next_python": str(tmp_path / "gone")}) is None  # removed since
    assert is_off("none") and not is_off(None) and not is_off(sys.executable)


def test_a_release_is_found_as_its_development_build() -> None:
    versions = {"keras-nightly": "3.16.0.dev2026102704", "jax": "0.10.2", "jaxlib": "missing"}
    assert installed_as("keras", versions) == ("keras-nightly", "3.16.0.dev2026102704")
    assert installed_as("jax", versions) == ("jax", "0.10.2")
    assert installed_as("torch", versions) is None
    assert build_text(("keras", "jax", "jaxlib"), versions, "missing") == "keras-nightly 3.16.0.dev2026102704, jax 0.10.2"
    assert build_text(("torch",), versions, "missing") == ""


def _entry(**values: object) -> dict[str, object]:
    entry: dict[str, object] = {"kind": "crash", "reproduces": True, "reduced_layers": 2, "original_layers": 9,
                                "reduction": {"status": "done"}, "truth": {}, "newest": {}, "newest_pending": False,
                                "minimal": {"reproduces": True, "lines": 12, "reason": ""}}
    entry.update(values)
    entry["section"] = section_of(entry)
    entry["status"] = status_text(entry)
    return entry


def test_the_newest_code_decides_ready_or_fixed_upstream() -> None:
    build = "keras-nightly 3.16.0.dev2026102704, jax 0.10.2"
    still = _entry(newest={"result": STILL_REPRODUCES, "build": build})
    assert still["section"] == "ready"
    fixed = _entry(newest={"result": FIXED_UPSTREAM, "build": build, "detail": "ran without an exception"})
    assert fixed["section"] == "fixed-upstream"
    assert fixed["status"] == f"fixed upstream: no longer reproduces on {build}"
    broken = _entry(newest={"result": CANNOT_RUN, "build": build, "detail": "ImportError"})
    assert broken["section"] == "ready"  # ready on the release, with the caveat the entry shows
    waiting = _entry(newest_pending=True)
    assert (waiting["section"], waiting["status"]) == ("not-ready", "not rechecked on the newest code yet")
    assert _entry()["section"] == "ready"  # no newest-code environment: nothing to wait for
    known = _entry(known_bug={"status": "fixed-upstream", "detail": "onnxruntime 1.33.0"})
    assert known["section"] == "fixed-upstream" and "no longer reproduces on onnxruntime 1.33.0 (recorded by the bug " \
        "database from an earlier campaign; not rerun)" in known["status"]  # where the verdict comes from
    # t65: this campaign's rerun could not run there; the database's record from an earlier one decides
    undecided = _entry(newest={"result": CANNOT_RUN, "build": build}, known_bug=known["known_bug"])
    assert undecided["section"] == "fixed-upstream" and "onnxruntime 1.33.0 (recorded by the bug database" in \
        undecided["status"]
    assert _entry(newest={"result": STILL_REPRODUCES, "build": build}, known_bug=known["known_bug"])["section"] == \
        "ready"  # a rerun that decided: this campaign's word
    not_reproducing = _entry(reproduces=False, newest={"result": FIXED_UPSTREAM})
    assert not_reproducing["section"] == "not-reproducing"  # the release itself no longer shows it


def _sighting(bug: str) -> Sighting:
    return Sighting(campaign=CAMPAIGN, campaign_bug=bug, keys=[f"sig:{bug}"], kind="crash", library="onnxruntime",
                    stage="load", headline="h", occurrences=1, versions={}, first_seen=1.0, last_seen=2.0,
                    reduced=True, files=None)


def test_the_bug_database_records_a_fix_upstream_and_its_regression(tmp_path: Path) -> None:
    with BugDatabase(tmp_path / "bugs.sqlite") as db:
        first, second = db.record(_sighting("b1")), db.record(_sighting("b2"))
        assert db.record_recheck(first, "fixed", "", {}, 1.0, "onnx-weekly 1.24.0.dev20261026",
                                 upstream=True) == "fixed upstream in onnx-weekly 1.24.0.dev20261026"
        assert db.get(first).status_text() == "fixed-upstream onnx-weekly 1.24.0.dev20261026"
        change = db.record_recheck(first, "reproduces", "", {}, 1.0, "onnx-weekly 1.24.0.dev20261102", upstream=True)
        assert change.startswith("regression") and db.get(first).status == "new"
        db.mark(second, "filed", "https://github.com/x/y/issues/1")
        assert not db.mark_fixed_upstream(second, "b")  # a person's status stays
        assert db.mark_fixed_upstream(first, "keras-nightly 3.16.0.dev2026102704")
        assert db.get(first).status == "fixed-upstream"
        # a campaign's triage that still sees it on the newest code: new again (t58's M-0168); a person's status stays
        assert db.reopen_upstream(first, "keras-nightly 3.16.0.dev2026102704") and db.get(first).status == "new"
        assert not db.reopen_upstream(first, "b") and not db.reopen_upstream(second, "b")
        assert db.get(second).status == "filed"
        assert db.mark_fixed_upstream(first, "keras-nightly 3.16.0.dev2026102704")
        # a release recheck that no longer shows it: fixed in that release
        assert db.record_recheck(first, "fixed", "", {}, 1.0, "keras 3.16.0").startswith("fixed in")


def test_an_issue_text_names_development_builds_only_where_they_ran(tmp_path: Path) -> None:
    """The environment line of an issue text: "development builds" when the rerun had one (keras-nightly,
    keras-openvino...), "the newest releases" when no library of the bug publishes one (OpenVINO alone)."""
    import json

    from memo.bug_files import NEWEST_FILE
    from memo.filing.folder import BugFolder
    from memo.filing.issue import newest_lines

    def line(versions: dict[str, str], build: str) -> list[str]:
        (tmp_path / NEWEST_FILE).write_text(json.dumps({"result": "reproduces", "build": build, "versions": versions}))
        return newest_lines(BugFolder(tmp_path, {}))

    assert line({"openvino": "2026.4.1"}, "openvino 2026.4.1") == [
        "- still reproduces on the newest releases (openvino 2026.4.1; no development build of them is published)"]
    assert line({"keras-nightly": "3.16.0.dev2026102704", "jax": "0.10.2"}, "keras-nightly 3.16.0.dev2026102704") == [
        "- still reproduces on the newest code (keras-nightly 3.16.0.dev2026102704; development builds: "
        "keras-nightly 3.16.0.dev2026102704, the others the newest releases)"]
