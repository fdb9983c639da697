"""The cluster's pure parts, without Ray: addresses, a node's capacity, artifacts as bytes, results brought back."""
from __future__ import annotations

from pathlib import Path

import pytest

from memo.artifact import Artifact, artifact_in
from memo.artifact_files import BASE_FILES
from memo.backends.result import BackendResult, ExecutionResult, StageResult
from memo.campaign.progress import cluster_line
from memo.cluster.connect import parse_address
from memo.cluster.executor import bring_back
from memo.cluster.node import node_capacity, pack_files, unpack_files
from memo.errors import UsageError


def test_addresses_are_checked_before_anything_starts() -> None:
    assert parse_address("local:2") == 2
    assert parse_address("auto") is None
    assert parse_address("10.0.0.5:6379") is None
    assert parse_address("ray://head.example:10001") is None
    for bad in ("local:0", "local:99", "bogus", "http://x:1", "head"):
        with pytest.raises(UsageError):
            parse_address(bad)


def test_a_node_gets_worker_sets_and_slots_by_the_local_rule() -> None:
    assert node_capacity(1, 10.0) == (1, 2)  # one core: two models at once on one set
    assert node_capacity(2, 23.0) == (1, 3)  # this machine: what a local campaign runs
    assert node_capacity(16, 64.0) == (5, 15)  # memory allows five sets of three
    assert node_capacity(64, 12.0) == (1, 3)  # cores without memory add nothing


def _artifact(directory: Path) -> Artifact:
    directory.mkdir(parents=True, exist_ok=True)
    for name in BASE_FILES:
        (directory / name).write_bytes(name.encode())
    return artifact_in(directory)


def test_artifact_files_travel_as_bytes_and_stay_inside_their_folder(tmp_path: Path) -> None:
    artifact = _artifact(tmp_path / "head" / "17")
    (artifact.directory / "outputs").mkdir()
    (artifact.directory / "outputs" / "old.npz").write_bytes(b"old")
    files = pack_files(artifact.directory, BASE_FILES)
    assert sorted(files) == sorted(BASE_FILES), "only the model, inputs and IR go to the node"
    unpack_files(tmp_path / "node" / "17", files)
    assert (tmp_path / "node" / "17" / "inputs.npz").read_bytes() == b"inputs.npz"
    assert pack_files(tmp_path / "node" / "17", exclude=BASE_FILES) == {}
    with pytest.raises(ValueError, match="leaves"):
        unpack_files(tmp_path / "node" / "17", {"../../evil": b"x"})
    assert not (tmp_path / "evil").exists()


def test_a_result_comes_back_with_the_heads_paths_and_files(tmp_path: Path) -> None:
    artifact = _artifact(tmp_path / "head" / "17")
    stale = artifact.outputs_path("keras-tensorflow")
    stale.parent.mkdir(parents=True)
    stale.write_bytes(b"from an earlier run")
    kept = artifact.outputs_path("keras-jax")  # not run this time: its earlier outputs stay, as in a local run
    kept.write_bytes(b"earlier jax")
    node_dir = "/tmp/memo-node-x/abc/17"
    result = ExecutionResult(artifact_dir=node_dir, reference="keras-tensorflow", output_names=["out"])
    result.backends["keras-tensorflow"] = BackendResult(
        name="keras-tensorflow", consumes="keras", outputs_path=f"{node_dir}/outputs/keras-tensorflow.npz",
        stages=[StageResult(stage="execute", status="ok")])
    result.backends["tf2onnx"] = BackendResult(name="tf2onnx", consumes="keras", role="converter",
                                               outputs_path=f"{node_dir}/onnx/model.onnx",
                                               stages=[StageResult(stage="convert", status="ok")])
    result.backends["onnxruntime"] = BackendResult(name="onnxruntime", consumes="onnx", stages=[
        StageResult(stage="execute", status="crash", message="boom")])
    result.backends["keras-jax"] = BackendResult(name="keras-jax", consumes="keras", stages=[
        StageResult(stage="known", status="skipped")])
    (artifact.directory / "outputs" / "onnxruntime.npz").write_bytes(b"stale ort")
    written = {"outputs/keras-tensorflow.npz": b"new tf", "onnx/model.onnx": b"onnx bytes"}

    back = bring_back(artifact, result.to_json(), written)

    assert back.artifact_dir == str(artifact.directory)
    assert back.backends["keras-tensorflow"].outputs_path == str(stale)
    assert stale.read_bytes() == b"new tf"
    assert back.backends["tf2onnx"].outputs_path == str(artifact.directory / "onnx" / "model.onnx")
    assert (artifact.directory / "onnx" / "model.onnx").read_bytes() == b"onnx bytes"
    assert not (artifact.directory / "outputs" / "onnxruntime.npz").exists(), "a crashed backend leaves no stale file"
    assert kept.read_bytes() == b"earlier jax"


def test_the_progress_line_names_every_node() -> None:
    line = cluster_line({"address": "local:2", "nodes": [
        {"node": "1f3c9e0000aa", "host": "vm", "worker_sets": 1, "executed": 12, "state": "ready"},
        {"node": "77ab01000011", "host": "vm", "worker_sets": 1, "executed": 3, "state": "lost: ActorDiedError"}]})
    assert line.startswith("1 nodes ready, 1 worker sets")
    assert "vm:1f3c9e 12 runs (1 sets)" in line
    assert "vm:77ab01 3 runs (1 sets, lost: ActorDiedError)" in line


def test_a_node_whose_new_actor_has_not_started_still_shows_as_lost() -> None:
    from memo.cluster.connect import NodeInfo
    from memo.cluster.executor import Node

    info = NodeInfo(node_id="a" * 40, host="vm", cpus=1.0, memory_gb=6.0)
    assert Node(info=info, actor=None, sets=1, slots=1).state() == "starting"
    restarted = Node(info=info, actor=None, sets=1, slots=1, lost_before="left the cluster")
    assert restarted.state().startswith("lost: left the cluster")
    restarted.ready = True
    assert restarted.state() == "ready", "a node that came back and started is ready again"
    restarted.lost = "did not answer when the campaign ended"
    assert restarted.state() == "lost: did not answer when the campaign ended"
