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

from memo.filing.check import MinimalScript, symptoms
from memo.filing.folder import BugFolder
from memo.filing.issue import render_issue, title
from memo.filing.script import candidates, script_library

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
    assert "    if node.op_type == 'Resize':" in text  # the node whose output shape the engines part on
    assert "got = ReferenceEvaluator(onnx_model).run(None, feed)" in text
    assert symptoms(folder) == ("AssertionError",)


def test_a_converters_bug_issue_names_the_node_and_says_what_the_script_runs(tmp_path: Path) -> None:
    folder = _folder(tmp_path)
    assert title(folder) == ("[tf2onnx] Resize: output shape (2, 416, 16, 4) in onnx2pytorch, (2, 416, 17, 4) in "
                             "ONNX Runtime")
    text = render_issue(folder, MinimalScript(reason="not checked"))
    assert "File at: https://github.com/onnx/tensorflow-onnx/issues" in text
    assert "The script below runs tf2onnx on the Keras model and the file it writes on ONNX's reference" in text
