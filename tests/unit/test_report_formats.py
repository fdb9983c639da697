"""Every report format lists the same bugs, and says where every other entry went (merged, unconfirmed, awaiting
localization); a triage pass ends at the state the next pass starts from, so the report a campaign writes at its end
lists what any later ``memo report`` lists (campaign b31: 54 entries in its own HTML, 52 after ``memo report``)."""
from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

from memo.report import write_report
from memo.triage import triage_campaign
from memo.triage.passes import rekey_reduced
from tests.unit.triage_store import add_finding, make_campaign, model


def _crash_in_jax(artifact_dir: str, message: str) -> dict:
    return {"artifact_dir": artifact_dir, "reference": "keras-tensorflow", "backends": {"keras-jax": {
        "name": "keras-jax", "consumes": "keras", "stages": [{"stage": "execute", "status": "error",
                                                               "exc_type": "XlaRuntimeError", "message": message}]}}}


def _campaign_with_two_folders(tmp_path: Path) -> Path:
    """The unit campaign plus two keras-jax crashes (two signatures) whose artifacts are kept, so that a pass
    without a budget writes both folders without reducing them."""
    from memo.artifact import prepare_artifact

    directory = tmp_path / "campaigns" / "c"
    with make_campaign(directory) as store:
        for iteration, message in ((9, "boom"), (10, "bang")):
            ir = model("Dense", "ReLU")
            artifact = prepare_artifact(ir, tmp_path / "mutants" / str(iteration), seed=1)
            (artifact.directory / "outputs").mkdir()
            np.savez(artifact.outputs_path("keras-tensorflow"), out_0=np.zeros((2, 4), np.float32))
            add_finding(store, iteration, ir, _crash_in_jax(str(artifact.directory), message),
                        [("crash", "keras-jax", "execute", f"XlaRuntimeError: {message}")], str(artifact.directory))
    return directory


def _counts(directory: Path, tmp_path: Path) -> dict[str, list[str]]:
    """The bug ids each format lists (and checks each format's own heading count against its list)."""
    data = json.loads(write_report(directory, tmp_path / "r.json", "json").read_text())
    html = write_report(directory, tmp_path / "r.html").read_text()
    markdown = write_report(directory, tmp_path / "r.md", "markdown").read_text()
    listed = {"json": [bug["id"] for bug in data["bugs"]],
              "html": re.findall(r'<details class="bug" id="bug-([^"]+)"', html),
              "markdown": re.findall(r"^## Bug (\S+)$", markdown, re.M)}
    assert f'<h2 id="bugs">Bugs ({len(listed["html"])})' in html
    assert f"## Bugs ({len(listed['markdown'])})" in markdown
    for bug in data["bugs"]:  # a merged entry is named in every format, inside the entry it went to
        for other in bug["merged"]:
            assert other["id"] in html and f"{other['id']} into {bug['id']}" in markdown
    for entry in data["awaiting_localization"]:
        assert entry["library"] in html and "## Numeric findings awaiting localization" in markdown
    return listed


def test_the_formats_list_the_same_bugs_after_a_pass_that_merged_unreduced_folders(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    directory = _campaign_with_two_folders(tmp_path)
    # both crashes name one root cause (as b31's two AdaptivePooling crashes did): one entry once keyed
    monkeypatch.setattr("memo.triage.rekey.reduced_key", lambda parts, ir: "one-root-cause")
    from memo.store import CampaignStore

    with CampaignStore(directory) as store:
        triage_campaign(store, time_budget_s=0)
        jax = [bug for bug in store.triage.load_bugs() if bug.library == "keras-jax" and bug.kind == "crash"]
        assert len(jax) == 2 and all(bug.bug_dir for bug in jax)
        assert all((bug.reduction or {}).get("status", "").startswith("not reduced") for bug in jax)
        # the pass merged them itself: the next pass's first step (the rekey) has nothing left to change
        assert sorted(bug.merged_into is None for bug in jax) == [False, True]
        assert rekey_reduced(store) == 0
    first = _counts(directory, tmp_path)
    assert first["json"] == first["html"] == first["markdown"] and len(first["json"]) == 3
    with CampaignStore(directory) as store:  # what `memo report` does before writing: the same bugs again
        triage_campaign(store, time_budget_s=0)
    assert _counts(directory, tmp_path) == first
