"""Campaigns on a real Ray cluster on this machine, through the real CLI: the same mutants and findings as a
local run with the same seed and --jobs, a plugin backend on the nodes, and a node removed mid-campaign losing
no mutant and no finding.

Each campaign executes every valid mutant (``--execute-all``) on keras-tensorflow and the test plugin
``crash-on-relu`` (ONNX Runtime behind tf2onnx, crashing on any Relu: findings on most models).
"""
from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]
PLUGIN = REPO / "tests" / "plugins" / "crash_on_relu.py"
COMMON = ("--seed", "5", "--iterations", "14", "--jobs", "2", "--execute-all", "--backends", "keras-tensorflow",
          "--backend-plugin", str(PLUGIN), "--no-reduce")
RAY_ENV = {"RAY_USAGE_STATS_ENABLED": "0", "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0"}


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("cluster")
    (directory / "seeds").mkdir()
    shutil.copy(REPO / "seeds" / "lenet5.json", directory / "seeds" / "lenet5.json")
    return directory


def _fuzz_args(name: str, *extra: str) -> list[str]:
    return [sys.executable, "-m", "memo", "fuzz", *COMMON, "--seeds-dir", "seeds", "--out", name, *extra]


def _env() -> dict[str, str]:
    return {**os.environ, **RAY_ENV, "PYTHONPATH": str(REPO)}


def _fuzz(workdir: Path, name: str, *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(_fuzz_args(name, "--quiet", *extra), cwd=workdir, capture_output=True, text=True,
                          timeout=900, env=_env())


def _campaign(directory: Path) -> dict[str, Any]:
    with sqlite3.connect(directory / "campaign.sqlite") as db:
        mutants = list(db.execute("SELECT iteration, slot, operator, ir FROM mutants WHERE iteration >= 0 "
                                  "ORDER BY iteration"))
        valid = db.execute("SELECT COUNT(*) FROM mutants WHERE valid = 1").fetchone()[0]
        executions = db.execute("SELECT mutant_id, result FROM executions").fetchall()
        verdicts = sorted(db.execute("SELECT m.iteration, m.slot, v.kind, v.backend FROM verdicts v "
                                     "JOIN mutants m ON m.id = v.mutant_id"))
        meta = dict(db.execute("SELECT key, value FROM meta"))
    return {"mutants": mutants, "valid": valid, "executions": executions, "verdicts": verdicts,
            "cluster": json.loads(meta["cluster"]) if "cluster" in meta else None}


@pytest.fixture(scope="module")
def local_run(workdir: Path) -> dict[str, Any]:
    done = _fuzz(workdir, "local")
    assert done.returncode == 0, done.stderr
    return _campaign(workdir / "local")


def _same_campaign(run: dict[str, Any], local: dict[str, Any]) -> None:
    assert run["mutants"] == local["mutants"], "the same --seed and --jobs give the same mutants on a cluster"
    assert len(run["executions"]) == run["valid"] == local["valid"], "every valid mutant and seed executed once"
    assert not [r for _, r in run["executions"] if "error" in json.loads(r)], "no execution failed inside memo"
    assert run["verdicts"] == local["verdicts"], "the same verdicts, plugin backend included"


def test_a_two_node_cluster_runs_the_local_campaign_with_a_plugin(workdir: Path, local_run: dict[str, Any]) -> None:
    done = _fuzz(workdir, "cluster", "--cluster", "local:2")
    assert done.returncode == 0, done.stderr
    run = _campaign(workdir / "cluster")
    _same_campaign(run, local_run)
    assert any(kind == "crash" and backend == "crash-on-relu" for *_, kind, backend in run["verdicts"]), \
        "the plugin ran on the nodes and its planted crash was found"
    nodes = run["cluster"]["nodes"]
    assert len(nodes) == 2 and all(node["state"] == "ready" and node["executed"] > 0 for node in nodes)
    assert sum(node["executed"] for node in nodes) >= len(run["executions"]), "every execution ran on a node"
    assert "cluster 2 nodes ready" in done.stdout


def test_a_node_removed_mid_campaign_loses_no_mutant_and_no_finding_and_a_new_one_joins(workdir: Path, local_run: dict[str, Any]) -> None:
    os.environ.update(RAY_ENV)
    from ray.cluster_utils import Cluster

    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 0, "include_dashboard": False})
    try:
        doomed = cluster.add_node(num_cpus=1, memory=6 * 2**30)
        cluster.add_node(num_cpus=1, memory=6 * 2**30)
        process = subprocess.Popen(_fuzz_args("removal", "--json", "--cluster", cluster.address), cwd=workdir,
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=_env())
        assert process.stdout is not None
        removed_at = None
        for line in process.stdout:
            event = json.loads(line)
            if event["event"] == "progress" and event.get("executed", 0) >= 4 and removed_at is None:
                cluster.remove_node(doomed, allow_graceful=False)
                removed_at = event["executed"]
                cluster.add_node(num_cpus=1, memory=6 * 2**30)  # a node joining mid-campaign gets an actor
        _, stderr = process.communicate(timeout=900)
        assert process.returncode == 0, stderr
        assert removed_at is not None, "the campaign was still running when the node went"
    finally:
        cluster.shutdown()
    run = _campaign(workdir / "removal")
    _same_campaign(run, local_run)
    states = sorted(node["state"].split(":")[0] for node in run["cluster"]["nodes"])
    # the joined node got an actor; whether it was ready before the last model depends on the machine's load
    assert states in (["lost", "ready", "ready"], ["lost", "ready", "starting"]), run["cluster"]


def test_a_head_killed_with_kill_9_leaves_nothing_running_and_resume_finishes_the_campaign(
        workdir: Path, local_run: dict[str, Any]) -> None:
    import psutil

    process = subprocess.Popen(_fuzz_args("killed", "--json", "--cluster", "local:2"), cwd=workdir,
                               stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=_env(),
                               start_new_session=True)
    assert process.stdout is not None
    tree: list[psutil.Process] = []
    for line in process.stdout:
        event = json.loads(line)
        if event["event"] == "progress" and event.get("executed", 0) >= 4:
            tree = psutil.Process(process.pid).children(recursive=True)
            process.kill()  # SIGKILL: no clean-up in the head at all
            break
    process.wait(timeout=30)
    assert tree, "the campaign was killed while its cluster ran"
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and any(p.is_running() and p.status() != psutil.STATUS_ZOMBIE for p in tree):
        time.sleep(0.5)
    left = [p for p in tree if p.is_running() and p.status() != psutil.STATUS_ZOMBIE]
    assert not left, f"processes of the killed head's cluster still run: {[p.name() for p in left]}"
    resumed = subprocess.run([sys.executable, "-m", "memo", "fuzz", "--resume", "killed", "--cluster", "local:2",
                              "--quiet"], cwd=workdir, capture_output=True, text=True, timeout=900, env=_env())
    assert resumed.returncode == 0, resumed.stderr
    _same_campaign(_campaign(workdir / "killed"), local_run)


def test_a_cluster_that_cannot_be_reached_is_one_line_and_no_campaign(workdir: Path) -> None:
    for address, message in (("nowhere", "expected auto, HOST:PORT"), ("127.0.0.1:1", "cannot connect")):
        started = time.monotonic()
        done = _fuzz(workdir, f"unreachable-{address.replace(':', '-')}", "--cluster", address)
        assert done.returncode == 2, done.stderr
        errors = [line for line in done.stderr.splitlines() if line.startswith("memo: error")]
        assert len(errors) == 1 and message in errors[0], done.stderr
        assert not (workdir / f"unreachable-{address.replace(':', '-')}").exists()
        assert time.monotonic() - started < 120
