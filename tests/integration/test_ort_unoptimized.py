"""ONNX Runtime's graph optimizations off (memo.triage.ort_unoptimized), in a real child process: p41's
crash-onnxruntime-33cb1a009a, tf2onnx's NCHW cubic Resize between two Transposes, which ONNX Runtime's transpose
optimizer moves to NHWC, where the cubic kernel refuses scales below 1 at session creation. With every optimization
off the same file loads and runs; the issue text says so."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from memo.bug_files import read_bug_file
from memo.triage.ort_unoptimized import FAILS, RUNS, UNOPTIMIZED_KEY, probe_unoptimized, unoptimized_text


def _resize_file(path: Path) -> None:
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    nodes = [helper.make_node("Transpose", ["x"], ["t"], perm=[0, 3, 1, 2]),
             helper.make_node("Resize", ["t", "roi", "scales"], ["r"], mode="cubic", cubic_coeff_a=-0.5,
                              exclude_outside=1, coordinate_transformation_mode="half_pixel", nearest_mode="floor"),
             helper.make_node("Transpose", ["r"], ["y"], perm=[0, 2, 3, 1])]
    graph = helper.make_graph(nodes, "resize", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [None, 30, 30, 4])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                              [numpy_helper.from_array(np.array([], np.float32), "roi"),
                               numpy_helper.from_array(np.array([1, 1, 1 / 15, 1 / 30], np.float32), "scales")])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 15)]), path)


def _folder(root: Path, kind: str) -> Path:
    root.mkdir()
    _resize_file(root / "model.onnx")
    np.savez(root / "inputs.npz", x=np.random.default_rng(0).standard_normal((1, 30, 30, 4)).astype(np.float32))
    (root / "bug.json").write_text(json.dumps({"id": "b", "kind": kind, "library": "onnxruntime",
                                               "reference": "keras-tensorflow"}))
    return root


def test_a_crash_only_the_optimized_session_raises_is_put_on_a_pass(tmp_path: Path) -> None:
    import onnxruntime

    folder = _folder(tmp_path / "crash", "crash")
    with pytest.raises(Exception, match="Cubic"):  # the default session: the optimizer's NHWC Resize is refused
        onnxruntime.InferenceSession(str(folder / "model.onnx"), providers=["CPUExecutionProvider"])
    answer = probe_unoptimized(folder, tmp_path / "scratch")
    assert answer == {"status": RUNS, "message": "", "agrees": None}
    info = read_bug_file(folder)
    assert info[UNOPTIMIZED_KEY] == answer  # kept: asked once
    assert "ORT_DISABLE_ALL" in unoptimized_text(info) and "optimization passes" in unoptimized_text(info)


def test_a_failure_without_optimizations_is_the_kernels_and_other_libraries_are_not_probed(tmp_path: Path) -> None:
    folder = _folder(tmp_path / "broken", "crash")
    (folder / "model.onnx").write_bytes(b"not an onnx file")
    answer = probe_unoptimized(folder, tmp_path / "scratch")
    assert answer is not None and answer["status"] == FAILS and answer["message"]
    assert "fails as well" in unoptimized_text(read_bug_file(folder))
    other = _folder(tmp_path / "other", "crash")
    (other / "bug.json").write_text(json.dumps({"id": "c", "kind": "crash", "library": "onnx2torch"}))
    assert probe_unoptimized(other, tmp_path / "scratch2") is None


def test_numeric_findings_compare_with_the_expected_outputs(tmp_path: Path) -> None:
    wrong = _folder(tmp_path / "wrong", "inconsistency")
    np.savez(wrong / "expected.npz", out_0=np.full((1, 2, 1, 4), 100.0, np.float32))
    assert probe_unoptimized(wrong, tmp_path / "s1") == {"status": RUNS, "message": "", "agrees": False}
    with np.load(tmp_path / "s1" / "unoptimized.npz") as data:
        computed = data["out_0"]
    right = _folder(tmp_path / "right", "inconsistency")
    np.savez(right / "expected.npz", out_0=computed)
    assert probe_unoptimized(right, tmp_path / "s2") == {"status": RUNS, "message": "", "agrees": True}
    assert unoptimized_text({"kind": "inconsistency", UNOPTIMIZED_KEY: {"status": RUNS, "agrees": True}}).endswith(
        "the difference comes from one of its optimization passes.")
    assert "kernel itself" in unoptimized_text({"kind": "inconsistency",
                                                UNOPTIMIZED_KEY: {"status": RUNS, "agrees": False}})
    assert unoptimized_text({"kind": "inconsistency"}) == ""
