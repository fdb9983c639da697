"""The training check of converted torch modules in the real workers (docs/training.md, "Converted models"):
onnx2torch's and onnx2pytorch's modules of tf2onnx's ONNX file, their inputs' gradients in inference mode against
TensorFlow's, judged by float64.

onnx2pytorch re-implements ONNX Selu as ``gamma * (clamp(x, min=0) + clamp(alpha * expm1(x), max=0))``
(onnx2pytorch/operations/selu.py): for x above about 88, ``expm1(x)`` is inf in float32; the forward pass clamps it to
0, but the backward pass multiplies clamp's zero gradient by ``exp(x) = inf``: NaN where the gradient is ``gamma``.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from memo.model.ir import Layer, ModelIR

TRAINERS = ["keras-tensorflow", "onnx2torch", "onnx2pytorch"]


def selu_model() -> ModelIR:
    return ModelIR(layers=[
        Layer(name="x", class_name="InputLayer", config={"batch_shape": [None, 6], "dtype": "float32"}),
        Layer(name="selu", class_name="Activation", config={"activation": "selu"}, inputs=["x"])],
        outputs=["selu"], name="train_converted_selu")


def check(executor: Any, root: Path, scale: float) -> Any:
    from memo.artifact import prepare_artifact
    from memo.training.check import run_training_check

    artifact = prepare_artifact(selu_model(), root, seed=3)
    x = np.linspace(-3.0, 3.0, 12, dtype=np.float32).reshape(2, 6) * np.float32(scale)
    np.savez(artifact.inputs_path, x=x)
    ran = executor.run(artifact, ["onnx2torch", "onnx2pytorch"])  # tf2onnx writes the ONNX file they convert
    assert {name: result.status for name, result in ran.backends.items()} == {
        "tf2onnx": "ok", "onnx2torch": "ok", "onnx2pytorch": "ok"}
    return run_training_check(executor, artifact, root / "train", TRAINERS)


def test_onnx2pytorch_selu_has_a_nan_gradient_above_88_that_float64_confirms(executor: Any, tmp_path: Path) -> None:
    result = check(executor, tmp_path / "large", 40.0)  # inputs from -120 to 120
    for name in ("onnx2torch", "onnx2pytorch"):  # the converted modules run the inference-mode stages only
        assert [(s.stage, s.status) for s in result.results[name].stages] == [
            ("load", "ok"), ("prepare", "ok"), ("eval_forward", "ok"), ("eval_gradients", "ok")], name
    [verdict] = result.judgement.verdicts
    assert (verdict.kind, verdict.backend, verdict.stage, verdict.name) == (
        "training-nan", "onnx2pytorch", "eval_gradients", "input 0")
    assert verdict.truth is not None and verdict.truth.decision == "confirmed", verdict.truth


def test_converted_modules_agree_where_selu_is_in_range(executor: Any, tmp_path: Path) -> None:
    result = check(executor, tmp_path / "small", 1.0)
    assert result.judgement.verdicts == [] and result.judgement.left_out is None
