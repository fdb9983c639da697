"""A bug blamed on a converter (its file is wrong; the engine reading it only shows it) gets a minimal script that
runs the converter and shows what is wrong in the file it writes, and an issue text that says so (issue 38). m40's
crash-onnx2pytorch-523fd597c3: tf2onnx writes Resize with float scales (0.9444444 on 18) whose floor gives 16 by the
specification and 17 in ONNX Runtime's float32; onnx2pytorch follows the specification and fails at a later Add.
Its bug.json keeps what triage found (the ONNX reference's opinion, the first node whose shape differs); no library
runs here."""
from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

from memo.filing.check import MinimalScript, symptoms
from memo.filing.folder import BugFolder
from memo.filing.issue import render_issue, title
from memo.filing.script import candidates, script_library, spec_bound_lines

BUG = "crash-onnx2pytorch-523fd597c3"


def _folder(tmp_path: Path) -> BugFolder:
    path = Path(shutil.copytree(Path(__file__).resolve().parents[1] / "corpus" / "bugs" / BUG, tmp_path / BUG))
    np.savez(path / "inputs.npz", input_layer_1=np.zeros((2, 75, 75, 3), np.float32))
    return BugFolder.read(path)


def test_a_converters_bug_script_runs_the_converter_and_shows_its_file(tmp_path: Path) -> None:
    folder = _folder(tmp_path)
    assert folder.converter_blamed == "tf2onnx" and script_library(folder) == "tf2onnx"
    text = candidates(folder)[0].text
    assert text.startswith("# tf2onnx: memo bug crash-onnx2pytorch-523fd597c3")
    assert "tf2onnx.convert.from_keras(model" in text and "ConvertModel" not in text  # not the engine
    assert "node = [n for n in onnx_model.graph.node if n.op_type == 'Resize'][0]" in text  # where shapes part
    assert "got = ReferenceEvaluator(onnx_model).run(None, feed)" in text
    assert symptoms(folder) == ("AssertionError",)


def test_the_script_stops_at_the_node_where_shapes_part_before_a_later_node_fails(tmp_path: Path) -> None:
    """The Resize alone: its constant inputs by their schema names, its output by the spec on the file cut after it,
    against the Keras layer it converts (named by the scope of the tensors it reads: "Resize__19533" reads
    ".../resizing_1/strided_slice_4:0"), asserted before the whole file runs (where a later Add fails)."""
    folder = _folder(tmp_path)
    text = candidates(folder)[0].text
    stop = text.index("    raise AssertionError(f\"{shown} give")
    assert "zip(['X', 'roi', 'scales', 'sizes'], node.input)" in text
    assert "model.get_layer('resizing').output" in text and "Keras's Resizing: " in text
    assert text.index("del part.graph.node[") < stop < text.index("got = ReferenceEvaluator(onnx_model)")


# What that script printed in a fresh process (tf2onnx 1.17.0, TensorFlow 2.21.0, Keras 3.15.1, onnx 1.23.2).
NODE_CHECK_OUTPUT = (
    "tf2onnx 1.17.0 tensorflow 2.21.0 keras 3.15.1\nResize scales [1.0, 1.0, 0.9444444, 1.0]\nAssertionError: scales "
    "[1.0, 1.0, 0.9444444, 1.0] give 16 by the ONNX spec where Keras computes 17 (tf2onnx's Resize: output shape "
    "(2, 416, 16, 4); Keras's Resizing: (2, 17, 4, 416))\n")


def test_a_converters_title_states_its_fault_as_the_script_prints_it(tmp_path: Path) -> None:
    folder = _folder(tmp_path)
    checked = MinimalScript("...", reproduces=True, versions=NODE_CHECK_OUTPUT.splitlines()[0],
                            output=NODE_CHECK_OUTPUT)
    assert title(folder, checked) == ("[tf2onnx] Resize: scales [1.0, 1.0, 0.9444444, 1.0] give 16 by the ONNX spec "
                                      "where Keras computes 17")
    assert "onnx2pytorch" not in title(folder, checked) and "ONNX Runtime" not in title(folder, checked)


def test_a_converters_bug_issue_names_the_node_and_says_what_the_script_runs(tmp_path: Path) -> None:
    folder = _folder(tmp_path)
    assert title(folder) == ("[tf2onnx] Resize: output shape (2, 416, 16, 4) in onnx2pytorch, (2, 416, 17, 4) in "
                             "ONNX Runtime")
    text = render_issue(folder, MinimalScript(reason="not checked"))
    assert "File at: https://github.com/onnx/tensorflow-onnx/issues" in text
    assert "The script below runs tf2onnx on the Keras model and the file it writes on ONNX's reference" in text


INVALID = "crash-tf2onnx-opset11-af6e7cbe75"  # p40: tf2onnx at opset 11 writes a Conv1DTranspose with pads [0, -1, 0, -2]


def _invalid_folder(tmp_path: Path) -> BugFolder:
    path = Path(shutil.copytree(Path(__file__).resolve().parents[1] / "corpus" / "bugs" / INVALID, tmp_path / INVALID))
    np.savez(path / "inputs.npz", reshape=np.zeros((2, 450, 128), np.float32))
    return BugFolder.read(path)


def test_a_converters_invalid_file_is_converted_as_the_campaign_did_and_checked_against_the_docs(
        tmp_path: Path) -> None:
    """tf2onnx writes those pads only for static input shapes (what memo's opset-11 conversion fixes): a script with a
    dynamic batch converted a valid file and did not reproduce. The operator docs' bounds follow the conversion."""
    text = candidates(_invalid_folder(tmp_path))[0].text
    assert "signature = [tf.TensorSpec(a.shape, i.dtype, name=i.name) for i, a in zip(model.inputs, x" in text
    assert "bounds = {'ConvTranspose': ('pads', 0)}" in text  # the operator the recorded message names
    assert text.index("onnx.checker.check_model(") < text.index("bounds = ") < text.index('print("no error')


def _conv_transpose(pads: list[int]) -> object:
    from onnx import TensorProto, helper, numpy_helper

    weight = numpy_helper.from_array(np.ones((3, 2, 2, 2), np.float32), "w")
    node = helper.make_node("ConvTranspose", ["x", "w"], ["y"], name="deconv", strides=[3, 3], pads=pads)
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 5, 5])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 2, 15, 15])], [weight])
    return helper.make_model(graph)


def test_the_bound_lines_raise_on_a_file_that_breaks_the_docs(tmp_path: Path) -> None:
    import onnx

    code = "\n".join(spec_bound_lines(_invalid_folder(tmp_path)))
    with pytest.raises(onnx.checker.ValidationError, match=r"ConvTranspose has pads \[0, 0, -1, -1\], an entry below 0"):
        exec(code, {"onnx": onnx, "onnx_model": _conv_transpose([0, 0, -1, -1])})
    exec(code, {"onnx": onnx, "onnx_model": _conv_transpose([0, 0, 1, 1])})  # within the docs' bound: nothing raised
