"""A second engine on the file another engine crashed on (memo.triage.second_engine): ONNX's checker and ONNX
Runtime on the bug folder's file, in a child process, kept in bug.json and said in the issue text; and a weight
input that no stored tensor holds (memo.triage.stored_weights.computed_weight)."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from memo.triage.second_engine import SECOND_ENGINE_KEY, probe_second_engine, second_engine_text


def _folder(tmp_path: Path, library: str) -> Path:
    onnx = pytest.importorskip("onnx")
    pytest.importorskip("onnxruntime")
    from onnx import TensorProto, helper

    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])])
    folder = tmp_path / library
    folder.mkdir()
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), folder / "model.onnx")
    np.savez(folder / "inputs.npz", x=np.ones((2, 3), np.float32))
    (folder / "bug.json").write_text(json.dumps({"id": f"crash-{library}-x", "kind": "crash", "library": library,
                                                 "exception": "RuntimeError"}))
    return folder


def test_another_engines_crash_gets_the_checker_and_onnx_runtime_on_its_file(tmp_path: Path) -> None:
    folder = _folder(tmp_path, "openvino")
    answer = probe_second_engine(folder, tmp_path / "scratch")
    assert answer is not None and answer["status"] == "runs" and answer["shapes"] == [[2, 3]]
    assert answer["checker"] == "passes" and answer["engine"].startswith("onnxruntime ")
    info = json.loads((folder / "bug.json").read_text())
    assert info[SECOND_ENGINE_KEY] == answer  # kept: asked once
    text = second_engine_text(info)
    assert "`onnx.checker.check_model(..., full_check=True)` accepts the attached file" in text
    assert text.endswith("runs it (output shape (2, 3)).")


def test_onnx_runtimes_own_crash_and_a_converter_get_none(tmp_path: Path) -> None:
    assert probe_second_engine(_folder(tmp_path, "onnxruntime"), tmp_path / "s") is None
    assert probe_second_engine(_folder(tmp_path, "tf2onnx"), tmp_path / "s") is None
    assert second_engine_text({SECOND_ENGINE_KEY: {"status": "fails", "message": "x"}}) == ""


def test_a_weight_input_no_initializer_holds_is_named(tmp_path: Path) -> None:
    """t55's reader: onnx2pytorch's Gemm failure on a 113-node file, and the text did not say that the Gemm's B is
    computed in the graph (onnx2pytorch reads it as a stored tensor)."""
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper, numpy_helper

    from memo.triage.stored_weights import computed_weight

    def saved(stored: bool) -> Path:
        weight = numpy_helper.from_array(np.ones((3, 3), np.float32), "w")
        nodes = [helper.make_node("Gemm", ["x", "w" if stored else "b"], ["y"])]
        if not stored:
            nodes.insert(0, helper.make_node("MatMul", ["x", "w"], ["b"]))
        graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3, 3])],
                                  [helper.make_tensor_value_info("y", TensorProto.FLOAT, [3, 3])], [weight])
        path = tmp_path / f"{stored}.onnx"
        onnx.save(helper.make_model(graph), path)
        return path

    assert computed_weight(saved(False), "Gemm") == "its Gemm's B input is computed in the graph, not a stored initializer"
    assert computed_weight(saved(True), "Gemm") == ""
    assert computed_weight(saved(False), "Relu") == ""
    # t58: onnx2pytorch's Gemm and its Conv in a Loop body fail in convert/layer.py, which reads weights from the
    # initializers: one root cause, whatever the operator and the message
    from memo.model.ir import Layer, ModelIR
    from memo.triage.signature import reduced_keys
    from memo.triage.stored_weights import COMPUTED_WEIGHT, stored_weight_parts

    frames = ["onnx2pytorch/convert/layer.py:extract_params", "onnx2pytorch/convert/operations.py:convert_operations"]
    assert stored_weight_parts("onnx2pytorch", frames, saved(False)) == {COMPUTED_WEIGHT: "Gemm"}
    assert stored_weight_parts("onnx2pytorch", frames, saved(True)) == {}  # every weight stored: another cause
    assert stored_weight_parts("onnx2pytorch", frames[1:], saved(False)) == {}  # not the layer-building code
    assert stored_weight_parts("onnx2torch", frames, saved(False)) == {}

    def model(layer: str) -> ModelIR:
        return ModelIR([Layer("x", "InputLayer", {"batch_shape": [None, 3], "dtype": "float32"}),
                        Layer("l", layer, {}, ["x"])], ["l"], "m")
    gemm = {"kind": "crash", "library": "onnx2pytorch", "exception": "ValueError", COMPUTED_WEIGHT: "Gemm",
            "message": "Unexpected number of parameters: N"}
    conv = {"kind": "crash", "library": "onnx2pytorch", "exception": "TypeError", COMPUTED_WEIGHT: "Conv",
            "message": "Conv3d.__init__() missing N required positional arguments"}
    assert set(reduced_keys(gemm, model("Dense"))) & set(reduced_keys(conv, model("ConvLSTM3D")))
    unmarked = {key: value for key, value in conv.items() if key != COMPUTED_WEIGHT}
    assert not set(reduced_keys(gemm, model("Dense"))) & set(reduced_keys(unmarked, model("ConvLSTM3D")))


def test_an_importer_crash_on_a_computed_weight_is_titled_by_the_weight_not_the_loop(tmp_path: Path) -> None:
    """t69's reader: "[onnx2pytorch] Conv in a Loop body: TypeError: Conv2d.__init__() missing ..." sent the maintainer
    into Loop; a 2-node file whose Conv weight is computed fails the same way."""
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper, numpy_helper

    from memo.filing.folder import BugFolder
    from memo.filing.title import title

    weight = numpy_helper.from_array(np.ones((2, 1, 3, 3), np.float32), "w")
    graph = helper.make_graph([helper.make_node("Identity", ["w"], ["wc"]), helper.make_node("Conv", ["x", "wc"], ["y"])],
                              "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, 5, 5])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 2, 3, 3])], [weight])
    onnx.save(helper.make_model(graph), tmp_path / "model.onnx")
    message = "Conv2d.__init__() missing 2 required positional arguments: 'in_channels' and 'out_channels'"
    (tmp_path / "bug.json").write_text(json.dumps({
        "id": "crash-onnx2pytorch-x", "kind": "crash", "library": "onnx2pytorch", "exception": "TypeError",
        "error_message": message, "message": f"TypeError: {message}", "signature": {
            "frames": ["onnx2pytorch/convert/layer.py:convert_layer", "onnx2pytorch/operations/loop.py:__init__"]}}))
    folder = BugFolder.read(tmp_path)
    assert title(folder).startswith("[onnx2pytorch] Conv whose weight is no initializer: ")
