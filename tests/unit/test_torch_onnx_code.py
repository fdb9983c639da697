"""Torch-only minimal scripts for crashes inside torch.onnx (memo.filing.torch_onnx_code), on copies of two real
keras-export bug folders of campaign p40 (tests/corpus/torch_onnx: bug.json, ir.json, inputs.npz): torch.onnx's
squeeze symbolic failing on a tuple of dims, and a ReduceMax with an axis written for a rank-0 input. Real Keras,
torch and onnx run; each script is checked in a fresh process."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from memo.backends.inner_libraries import TORCH_ONNX
from memo.filing.check import check_minimal, run_candidate
from memo.filing.folder import BugFolder
from memo.filing.issue import render_issue
from memo.filing.script import Candidate
from memo.filing.torch_onnx_code import SOURCE, found_through, script_text, torch_only_scripts

CORPUS = Path(__file__).resolve().parents[1] / "corpus" / "torch_onnx"
SQUEEZE, REDUCE_MAX = "crash-keras-export-854d28faff", "crash-keras-export-a97aa25f99"
OTHER_BUG = Path(__file__).resolve().parents[1] / "corpus" / "bugs" / "crash-keras-torch-7db6bd8ece"


def _copy(tmp_path: Path, name: str) -> Path:
    return Path(shutil.copytree(CORPUS / name, tmp_path / name))


@pytest.mark.parametrize("name, call, keras_line", [
    (SQUEEZE, "return torch.squeeze(x0, [0, 1, 2])", "keras/src/backend/torch/nn.py:"),
    (REDUCE_MAX, "return torch.max(x0, dim=0)", "keras/src/backend/torch/rnn.py:"),
])
def test_the_torch_only_script_reproduces_in_a_fresh_process(tmp_path: Path, name: str, call: str,
                                                              keras_line: str) -> None:
    folder = BugFolder.read(_copy(tmp_path, name))
    checked = check_minimal(folder)
    assert checked.reproduces and checked.source == SOURCE, checked.reason
    assert call in checked.text and "dynamo=False, opset_version=20" in checked.text
    assert "import keras" not in checked.text and checked.lines <= 20
    assert keras_line in checked.text  # the Keras line that makes the call, as a comment
    said = render_issue(folder, checked)
    assert "TorchScript exporter: `torch.onnx.export(..., dynamo=False, opset_version=20)`" in said
    assert keras_line in said and call in said


def test_the_check_needs_the_messages_head_too(tmp_path: Path) -> None:
    folder = BugFolder.read(_copy(tmp_path, SQUEEZE))
    head = "only one element tensors can be converted to Python scalars"
    other = run_candidate(folder, Candidate('raise ValueError("another message")\n', symptom=head))
    same = run_candidate(folder, Candidate(f'raise ValueError("{head}")\n', symptom=head))
    assert not other.reproduces and same.reproduces


def test_culprits_map_to_the_callers_functions() -> None:
    assert TORCH_ONNX.callers_of("ReduceMax") == ("amax", "max")
    assert TORCH_ONNX.callers_of("symbolic_opset11.squeeze") == ("squeeze",)


def test_a_bug_outside_torch_onnx_gets_no_torch_only_script() -> None:
    folder = BugFolder.read(OTHER_BUG)
    assert folder.inside is None
    assert torch_only_scripts(folder, "raise SystemExit(1)\n", {}, "") == []


def test_a_recorded_call_is_stated_with_its_tensors_as_inputs() -> None:
    call = {"target": "Tensor.sum", "args": [{"tensor": [2, 1], "dtype": "bool"}, {"tuple": [1]}],
            "kwargs": {"dtype": {"dtype_value": "float32"}}, "caller": "keras/src/ops/x.py:7:f:y = x.sum(1)"}
    text = script_text("bug", call, {"dynamo": False, "opset_version": 17, "caller": "keras/src/export/onnx.py:9:g"})
    assert "return x0.sum((1,), dtype=torch.float32)" in text
    assert "x0 = torch.rand((2, 1)) > 0.5" in text
    assert "torch.onnx.export(Call(), (x0,), 'call.onnx', dynamo=False, opset_version=17)" in text
    assert found_through(text).startswith("Found through Keras's `model.export(format=\"onnx\")`")
    assert "`y = x.sum(1)` at keras/src/ops/x.py:7 (f)" in found_through(text)
    assert found_through("import torch\n") == ""
