"""Blame across engines on the real libraries: with several engines on one converted file, a wrong conversion
shows as all of them differing alike (the converter is blamed), one wrong engine as that engine alone."""
from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from memo.artifact import prepare_artifact
from memo.backends.result import ExecutionResult
from memo.model.files import load_model_file
from memo.oracle import judge
from tests.conftest import EXAMPLES, module_executor, one_layer_ir

pytestmark = [pytest.mark.integration, pytest.mark.timeout(600)]

KERAS = ["keras-tensorflow", "keras-jax"]
ONNX_ENGINES = ["onnxruntime", "openvino", "onnx2torch"]


engines = module_executor([*KERAS, *ONNX_ENGINES], timeout_s=120)


def test_a_wrong_conversion_is_blamed_on_the_converter(engines, tmp_path: Path) -> None:
    # The ONNX engines really run a conversion of the model with other weights (what a converter that
    # mangles a constant produces), the Keras backends the model itself: every engine differs alike.
    loaded = load_model_file(EXAMPLES / "conv_net.json")
    right = prepare_artifact(loaded.ir, tmp_path / "right", seed=0, weights=loaded.weights)
    wrong = prepare_artifact(loaded.ir, tmp_path / "wrong", seed=7)
    truth = engines.run(right)
    mangled = engines.run(wrong, ONNX_ENGINES)
    assert all(mangled.backends[name].status == "ok" for name in ONNX_ENGINES)
    mixed = dataclasses.replace(truth, backends={**{n: truth.backends[n] for n in KERAS},
                                                 **{n: mangled.backends[n] for n in ["tf2onnx", *ONNX_ENGINES]}})
    verdicts = judge(mixed)
    assert [(v.kind, v.backend, v.stage) for v in verdicts] == [("inconsistency", "tf2onnx", "convert")]
    assert sorted(verdicts[0].involved()) == sorted(ONNX_ENGINES)
    assert judge(truth) == []
    assert ExecutionResult.from_json(mixed.to_json()) == mixed


def test_one_wrong_engine_is_blamed_alone(engines, make_artifact) -> None:
    # Bicubic resizing: tf2onnx writes Resize(mode=cubic, cubic_coeff_a=-0.5, exclude_outside=1); ONNX Runtime
    # computes it as TensorFlow does, OpenVINO's CPU plugin differs (by up to 0.07).
    result = engines.run(make_artifact(one_layer_ir("Resizing", {"height": 9, "width": 9, "interpolation": "bicubic"},
                                                    (6, 6, 3))))
    numeric = [(v.kind, v.backend) for v in judge(result) if v.kind in ("inconsistency", "nan", "shape")]
    assert ("inconsistency", "openvino") in numeric
    assert not any(backend in ("tf2onnx", "onnxruntime", "keras-tensorflow") for _, backend in numeric)
