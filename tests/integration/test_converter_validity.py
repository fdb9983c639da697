"""A converter's ONNX file is checked before its engines run, on the real tf2onnx in a real worker: a valid
conversion passes every rule, an invalid one is tf2onnx's failure (one finding) and no engine's, and its
repro script, run in a fresh process with no memo, checks the written file the same way."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from memo.backends.onnx_validity import validity_problems
from memo.oracle import judge
from tests.conftest import EXAMPLES, module_executor, one_layer_ir, run_model
from tests.integration.triage_fixtures import materialize_bug

pytestmark = [pytest.mark.integration, pytest.mark.timeout(600)]

BACKENDS = ["keras-tensorflow", "onnxruntime"]
# TensorFlow's "same" transposed convolution of kernel 2, stride 3 on 5 x 5: 15 x 15, which tf2onnx writes as a
# ConvTranspose with pads [0, 0, -1, -1] (ONNX Runtime ran it and was blamed for the result).
NEGATIVE_PADS = ("Conv2DTranspose", {"filters": 2, "kernel_size": 2, "strides": 3, "padding": "same"}, (5, 5, 3))
# Resizing 6 -> 17: tf2onnx writes the scale float32(17 / 6), which gives floor(16.9999995) = 16 by the ONNX rule.
RESIZE_17 = ("Resizing", {"height": 17, "width": 17}, (6, 6, 3))


engines = module_executor(BACKENDS, timeout_s=120)


@pytest.fixture(scope="module")
def negative_pads(engines, tmp_path_factory: pytest.TempPathFactory):
    return run_model(engines, one_layer_ir(*NEGATIVE_PADS), tmp_path_factory.mktemp("pads"))


def test_a_valid_conversion_has_no_validity_problem(engines, tmp_path: Path) -> None:
    _ir, artifact, result = run_model(engines, EXAMPLES / "conv_net.json", tmp_path)
    assert {name: b.status for name, b in result.backends.items()} == {"keras-tensorflow": "ok", "tf2onnx": "ok",
                                                                       "onnxruntime": "ok"}
    assert validity_problems(artifact.path_for("onnx")) == []
    assert judge(result) == []


def test_negative_pads_are_the_converters_failure_not_the_engines(negative_pads) -> None:
    _ir, _artifact, result = negative_pads
    failure = result.backends["tf2onnx"].failure
    assert (failure.stage, failure.status, failure.exc_type) == ("convert", "error", "InvalidONNX")
    assert failure.message.startswith("invalid ONNX written: ConvTranspose node ")
    assert "has negative pads [0, 0, -1, -1]" in failure.message
    assert result.backends["onnxruntime"].status == "skipped"
    assert [(v.kind, v.backend, v.stage) for v in judge(result)] == [("crash", "tf2onnx", "convert")]


def test_a_scale_that_changes_the_size_is_the_converters_failure(engines, make_artifact) -> None:
    result = engines.run(make_artifact(one_layer_ir(*RESIZE_17)))
    failure = result.backends["tf2onnx"].failure
    assert (failure.stage, failure.status, failure.exc_type) == ("convert", "error", "InvalidONNX")
    assert failure.message.startswith("invalid ONNX written: Resize node ")
    assert "which gives 16" in failure.message and "declared size 17" in failure.message
    assert result.backends["onnxruntime"].status == "skipped"
    assert [(v.kind, v.backend) for v in judge(result)] == [("crash", "tf2onnx")]


def test_the_invalid_conversion_script_reproduces_in_a_fresh_process(negative_pads, tmp_path: Path) -> None:
    from memo.triage.rerun import rerun_script

    ir, artifact, result = negative_pads
    failure = result.backends["tf2onnx"].failure
    bug = {"id": "crash-tf2onnx-invalid", "kind": "crash", "library": "tf2onnx", "stage": "convert",
           "exception": failure.exc_type, "error_message": failure.message}
    folder, data = materialize_bug(tmp_path, ir, artifact, bug, "tf2onnx")
    text = (folder / "repro.py").read_text()
    assert "def negative_pads(" in text and not re.search(r"^\s*(import|from) memo\b", text, re.MULTILINE)
    outcome = rerun_script(folder, data, timeout_s=300)
    assert outcome.returncode == 0 and outcome.reproduces is True, outcome.output
    assert "InvalidONNX" in outcome.output
