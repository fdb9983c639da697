"""Reproduction scripts: every library's runner with every kind's check renders to valid Python; bug folders."""
from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

from memo.triage.repro import CHECKS, RECIPES, render_script
from memo.triage.rerun import interpret

NUMERIC = ("nan", "inconsistency", "shape")


def _render(library: str, kind: str, faulty: str | None = None) -> tuple[str, list[str]]:
    return render_script(bug_id="b1", kind=kind, library=library, faulty=faulty or library, symptom="it breaks",
                         input_names=["input_1", "input_2"], reference="keras-tensorflow",
                         expected_exception="RuntimeError", timeout_s=5)


@pytest.mark.parametrize("library", sorted(RECIPES))
@pytest.mark.parametrize("kind", sorted(CHECKS))
def test_every_runner_and_check_renders_to_valid_python(library: str, kind: str) -> None:
    faulty = "onnxruntime" if library.startswith("tf2onnx") else library
    text, files = _render(library, kind, faulty)
    compile(text, "repro.py", "exec")
    assert not re.search(r"^\s*(import|from) memo\b", text, re.MULTILINE)  # standalone
    assert ("expected.npz" in files) == (kind in NUMERIC)
    assert '"input_1", "input_2"' in text


def test_keras_scripts_pin_their_backend_and_onnx_scripts_read_the_converted_file() -> None:
    jax, _ = _render("keras-jax", "crash")
    assert 'os.environ["KERAS_BACKEND"] = "jax"' in jax and "model.keras" in jax
    assert jax.index("KERAS_BACKEND") < jax.index("import numpy")
    ort, files = _render("onnxruntime", "inconsistency")
    assert files[0] == "model.onnx" and "import keras" not in ort and "run_onnxruntime(os.path.join(HERE" in ort


def test_a_conversion_bug_converts_then_runs_the_conversion() -> None:
    text, files = _render("tf2onnx-opset11", "inconsistency", "mxnet")
    assert "run_mxnet(convert_tf2onnx())" in text and "opset=11" in text and files == ["model.keras", "expected.npz"]
    crash, _ = _render("tf2onnx", "crash")
    assert "return convert_tf2onnx()" in crash and "opset=None" in crash


def test_exit_status_interpretation() -> None:
    assert interpret(0, {}) is True and interpret(1, {}) is False and interpret(2, {}) is None
    assert interpret(-11, {"exception": "signal 11"}) is True and interpret(-6, {"exception": "signal 11"}) is False
    assert interpret(None, {}) is None
    assert interpret(None, {"kind": "hang"}, timed_out=True) is True and interpret(None, {}, timed_out=True) is None


def test_materialize_writes_a_complete_bug_folder(tmp_path: Path) -> None:
    from memo.artifact import prepare_artifact
    from memo.model.ir import Layer, ModelIR
    from memo.triage.materialize import materialize
    from memo.triage.probe import Roles

    ir = ModelIR([Layer("input", "InputLayer", {"batch_shape": [None, 4], "dtype": "float32"}),
                  Layer("dense", "Dense", {"units": 3}, ["input"])], ["dense"])
    artifact = prepare_artifact(ir, tmp_path / "artifact", seed=0)
    (tmp_path / "artifact" / "outputs").mkdir()
    np.savez(artifact.outputs_path("keras-tensorflow"), out_0=np.zeros((2, 3), np.float32))
    np.savez(artifact.outputs_path("keras-jax"), out_0=np.full((2, 3), 0.5, np.float32))
    bug = {"id": "inconsistency-keras-jax-1", "kind": "inconsistency", "library": "keras-jax", "stage": "execute"}
    data = materialize(tmp_path / "bug", artifact.directory, ir, bug,
                       Roles("keras-jax", "keras-tensorflow", ("keras-tensorflow", "keras-jax")), {"layer": "dense"})
    names = sorted(path.name for path in (tmp_path / "bug").iterdir())
    assert names == ["bug.json", "expected.npz", "inputs.npz", "ir.json", "model.keras", "repro.py"]
    assert data["io"]["outputs"][0]["max |diff|"] == pytest.approx(0.5)
    assert json.loads((tmp_path / "bug" / "bug.json").read_text())["repro_command"].endswith("inconsistency-keras-jax-1")
    assert 'KERAS_BACKEND"] = "jax"' in (tmp_path / "bug" / "repro.py").read_text()
