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


def test_a_training_entry_adopted_from_an_older_folder_quotes_its_folders_run(tmp_path: Path) -> None:
    """t66's reader: an entry adopted from the bug database headed "0.0127 [optimizer adam-accumulate: ...]" (the
    campaign's finding) where its script, on plain Adam, prints 0.0355: a folder written before the reduced verdict
    was recorded quotes its bug.json message, the message of the run it was written from."""
    from memo.oracle import Verdict
    from memo.store import MutantRecord
    from tests.unit.triage_store import model

    directory = tmp_path / "campaigns" / "unit"
    with make_campaign(directory) as store:
        mutant = store.add_mutant(MutantRecord(9, "s", "NLA", "seed:s", "s", {}, model("Dense").dumps(), True,
                                               diverse=True))
        store.add_verdict(mutant, Verdict("training-inconsistency", "keras-torch", "optimizer",
                                          "optimizer: d/kernel: max |diff| 0.0127 [optimizer adam-accumulate]",
                                          extra={"training": {"array": "opt_2", "name": "d/kernel"}}))
        update_bugs(store)
        bug = next(bug for bug in store.triage.load_bugs() if bug.kind == "training-inconsistency")
        folder = directory / "bugs" / bug.id
        folder.mkdir(parents=True)
        (folder / "bug.json").write_text(json.dumps({"id": bug.id, "kind": bug.kind, "message":
                                                     "optimizer: d/kernel: max |diff| 0.0355 [optimizer adam]"}))
        store.triage.update_bug(bug.id, bug_dir=str(folder), reduction={"status": "known: M-0006"})
    data = json.loads(write_report(directory, tmp_path / "r.json", "json").read_text())
    entry = next(entry for entry in data["bugs"] if entry["id"] == bug.id)
    assert "0.0355 [optimizer adam]" in entry["message"], entry["message"]
