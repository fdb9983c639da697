"""A converter's minimal script, run in a fresh process with the real converter: p40's crash-onnx2pytorch-523fd597c3
stops at tf2onnx's Resize (16 rows by the ONNX spec where Keras computes 17) before a later Add fails, and p40's
crash-tf2onnx-opset11-af6e7cbe75 converts with static shapes, as the campaign did, and fails on the negative pads."""
from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

from memo.filing.check import run_candidate
from memo.filing.folder import BugFolder
from memo.filing.script import SEEDED, candidates

pytestmark = pytest.mark.integration

CORPUS = Path(__file__).resolve().parents[1] / "corpus" / "bugs"


def _seeded(tmp_path: Path, name: str, **inputs: np.ndarray) -> tuple[BugFolder, object]:
    path = Path(shutil.copytree(CORPUS / name, tmp_path / name))
    np.savez(path / "inputs.npz", **inputs)
    folder = BugFolder.read(path)
    return folder, next(c for c in candidates(folder) if c.source == SEEDED)


def test_the_resize_node_is_checked_alone_against_the_keras_layer(tmp_path: Path) -> None:
    folder, candidate = _seeded(tmp_path, "crash-onnx2pytorch-523fd597c3",
                                input_layer_1=np.zeros((2, 75, 75, 3), np.float32))
    result = run_candidate(folder, candidate)
    assert result.reproduces, result.output
    assert ("AssertionError: scales [1.0, 1.0, 0.9444444, 1.0] give 16 by the ONNX spec where Keras computes 17 "
            "(tf2onnx's Resize: output shape (2, 416, 16, 4); Keras's Resizing: (2, 17, 4, 416))") in result.output
    assert "binary operator 'Add'" not in result.output


def test_tf2onnx_at_opset_11_writes_the_negative_pads_with_static_shapes(tmp_path: Path) -> None:
    folder, candidate = _seeded(tmp_path, "crash-tf2onnx-opset11-af6e7cbe75",
                                reshape=np.zeros((2, 450, 128), np.float32))
    result = run_candidate(folder, candidate)
    assert result.reproduces, result.output
    assert "pads" in result.output and "negative" in result.output
