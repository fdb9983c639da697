"""The operator's contract on the real libraries (issue 38, item 3): AutoContrast on a 1x1 image makes 0/0 inside
the model; OpenVINO's CPU Clamp on tf2onnx's file turns that NaN into its minimum, where the ONNX specification (its
reference evaluator on the same file) and TensorFlow keep it. Float64 alone calls the finding ill-conditioned (NaN
made inside, on an ONNX engine); the reference evaluator blames OpenVINO."""
from __future__ import annotations

from pathlib import Path

import pytest

from memo.oracle import judge, load_outputs
from memo.triage.onnx_reference import ENGINE, ask_reference, settle
from memo.triage.truth import TruthRunner, artifact_inputs, judge_by_truth
from memo.truth import CONFIRMED, ILL_CONDITIONED
from tests.conftest import module_executor, one_layer_ir

pytestmark = [pytest.mark.integration, pytest.mark.timeout(600)]

engines = module_executor(["keras-tensorflow", "openvino"], timeout_s=120)


def test_openvino_dropping_nan_inside_is_its_bug_by_the_operators_contract(engines, make_artifact,
                                                                          tmp_path: Path) -> None:
    artifact = make_artifact(one_layer_ir("AutoContrast", {"value_range": [0, 1]}, (1, 1, 42)))
    result = engines.run(artifact)
    verdict = next(v for v in judge(result) if v.backend == "openvino")
    outputs = load_outputs(result)
    inputs = artifact_inputs(artifact)
    opinion = ask_reference("openvino", artifact, inputs, outputs, "keras-tensorflow", tmp_path / "reference")
    assert opinion is not None and opinion.decision == ENGINE and opinion.blamed == "openvino", opinion
    runner = TruthRunner(tmp_path / "logs")
    try:
        truth = judge_by_truth(runner, artifact.keras_path, inputs, outputs, verdict, "keras-tensorflow",
                               tmp_path / "truth")
    finally:
        runner.close()
    assert truth.decision == ILL_CONDITIONED and truth.special_values, truth.to_json()
    settled = settle(truth, opinion)
    assert settled.decision == CONFIRMED and settled.blamed == "openvino"
