"""Fileable by default: a short campaign's final pass writes and checks the minimal script of each bug that would be
ready to file, so that the report `memo fuzz` writes carries it (not memo's long repro.py) without a second command.

The seed holds a real bug of Keras on torch (LayerNormalization on a middle axis of a 4-D input raises in torch's
layer_norm; tests/corpus/bugs/crash-keras-torch-7db6bd8ece), wrapped in layers reduction removes."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from memo.model.ir import Layer, ModelIR

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]


def _seed() -> ModelIR:
    return ModelIR([Layer("input", "InputLayer", {"batch_shape": [None, 4, 4, 8], "dtype": "float32"}),
                    Layer("relu", "ReLU", {}, ["input"]),
                    Layer("norm", "LayerNormalization", {"axis": 2}, ["relu"]),
                    Layer("act", "Activation", {"activation": "tanh"}, ["norm"])], ["act"], "layernorm_axis2")


def test_the_campaigns_report_carries_a_checked_minimal_script_for_a_ready_bug(tmp_path: Path) -> None:
    seeds = tmp_path / "seeds"
    seeds.mkdir()
    (seeds / "layernorm_axis2.json").write_text(json.dumps(_seed().to_keras_config()))
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    fuzz = subprocess.run(
        [sys.executable, "-m", "memo", "fuzz", "--iterations", "2", "--seed", "3", "--jobs", "1", "--quiet",
         "--seeds-dir", str(seeds), "--backends", "keras-tensorflow,keras-torch", "--name", "fileable",
         # this bug is fixed in keras-nightly (2026-11-27): rerun on the newest code it would be "fixed upstream"
         "--next-python", "none", "--train-share", "0"],
        cwd=tmp_path, capture_output=True, text=True, timeout=900, env=env)
    assert fuzz.returncode == 0, fuzz.stderr[-3000:]
    html = (tmp_path / "reports" / "fileable.html").read_text()
    # the report the campaign wrote; its JSON form (a read-only view, no library runs) for the figures
    report = subprocess.run([sys.executable, "-m", "memo", "report", "fileable", "--format", "json", "-o", "r.json"],
                            cwd=tmp_path, capture_output=True, text=True, timeout=300, env=env)
    assert report.returncode == 0, report.stderr[-3000:]
    data = json.loads((tmp_path / "r.json").read_text())
    bugs = [bug for bug in data["bugs"] if bug["library"] == "keras-torch" and bug["kind"] == "crash"
            and "LayerNormalization" in bug["layers"]]
    assert bugs, [(bug["id"], bug["status"]) for bug in data["bugs"]]
    bug = bugs[0]
    assert bug["status"] == "ready to file", (bug["status"], bug["minimal"], bug["reduction"])
    minimal = bug["minimal"]
    assert minimal["reproduces"] and "keras.layers.LayerNormalization(axis=2)" in minimal["script"]
    assert minimal["lines"] < 30 and bug["issue_text"].startswith("# [keras-torch] LayerNormalization: ")
    assert (Path(bug["bug_dir"]) / "minimal" / "check.json").is_file()
    assert '<pre class="minimal">' in html and "keras.layers.LayerNormalization(axis=2)" in html
    assert "memo&#39;s repro.py (attached as well" in html or "memo's repro.py (attached as well" in html
    assert not data["triage_left"]["scripts"]
    assert not [error for error in data["triage_errors"] if error["step"] == "final pass"], data["triage_errors"]
