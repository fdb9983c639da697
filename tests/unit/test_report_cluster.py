"""The report's Cluster section: the nodes a cluster campaign used, in HTML, Markdown and JSON; none locally."""
from __future__ import annotations

import json
from pathlib import Path

from memo.report import write_report
from memo.triage.dedup import update_bugs
from tests.unit.triage_store import HOSTILE, make_campaign

CLUSTER = {"address": "local:2", "nodes": [
    {"node": "1f3c9e0a7b2d", "host": f"node-a{HOSTILE}", "cpus": 1.0, "memory_gb": 10.3, "worker_sets": 1,
     "slots": 2, "executed": 41, "in_flight": 0, "rerun": 2, "state": "ready"},
    {"node": "77ab0100ffee", "host": "node-b", "cpus": 1.0, "memory_gb": 10.3, "worker_sets": 1, "slots": 2,
     "executed": 7, "in_flight": 0, "rerun": 0, "state": "lost: ActorDiedError"}]}


def _campaign(tmp_path: Path, cluster: dict | None) -> Path:
    directory = tmp_path / "campaigns" / "unit"
    with make_campaign(directory) as store:
        if cluster is not None:
            store.set_meta("cluster", cluster)
        update_bugs(store)
    return directory


def test_a_cluster_campaign_lists_its_nodes_everywhere(tmp_path: Path) -> None:
    campaign = _campaign(tmp_path, CLUSTER)
    html = write_report(campaign, tmp_path / "r.html").read_text()
    assert 'id="cluster"' in html and "<code>local:2</code>" in html
    assert "1f3c9e0a7b2d" in html and "lost: ActorDiedError" in html and "<td>41</td>" in html
    assert HOSTILE not in html, "a host name is escaped"
    markdown = write_report(campaign, tmp_path / "r.md", "markdown").read_text()
    assert "## Cluster (local:2)" in markdown
    assert "| 77ab0100ffee | node-b | 1.0 | 10.3 GB | 1 | 7 | 0 | lost: ActorDiedError |" in markdown
    data = json.loads(write_report(campaign, tmp_path / "r.json", "json").read_text())
    assert data["summary"]["cluster"] == CLUSTER


def test_a_local_campaign_has_no_cluster_section(tmp_path: Path) -> None:
    campaign = _campaign(tmp_path, None)
    assert 'id="cluster"' not in write_report(campaign, tmp_path / "r.html").read_text()
    assert "## Cluster" not in write_report(campaign, tmp_path / "r.md", "markdown").read_text()
    assert json.loads(write_report(campaign, tmp_path / "r.json", "json").read_text())["summary"]["cluster"] is None
