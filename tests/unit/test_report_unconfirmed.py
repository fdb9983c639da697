"""A finding whose own model did not show it again, and whose script does not reproduce it, is not a bug."""
from __future__ import annotations

import json
from pathlib import Path

from memo.report import write_report
from memo.bug_files import Reduction
from memo.triage.dedup import update_bugs
from tests.unit.triage_store import make_campaign


def test_an_unconfirmed_finding_is_listed_apart_not_counted_as_a_bug(tmp_path: Path) -> None:
    directory = tmp_path / "campaigns" / "unit"
    with make_campaign(directory) as store:
        update_bugs(store)
        first, second = [bug.id for bug in store.triage.load_bugs() if bug.kind == "crash"][:2]
        store.triage.update_bug(first, reduction={"status": Reduction.NOT_AGAIN}, reproduces=False)
        store.triage.update_bug(second, reduction={"status": Reduction.NOT_AGAIN}, reproduces=True)  # its script did
    data = json.loads(write_report(directory, tmp_path / "r.json", "json").read_text())
    assert [u["id"] for u in data["unconfirmed"]] == [first]
    assert first not in {bug["id"] for bug in data["bugs"]} and second in {bug["id"] for bug in data["bugs"]}
    assert data["triage"]["bugs"] == len(data["bugs"])
    html = write_report(directory, tmp_path / "r.html").read_text()
    assert 'id="unconfirmed"' in html and "1 unconfirmed</a>" in html and f"<td>{first}</td>" in html
    markdown = write_report(directory, tmp_path / "r.md", "markdown").read_text()
    assert "## Unconfirmed findings" in markdown and f"| {first} |" in markdown
