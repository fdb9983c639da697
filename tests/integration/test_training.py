"""The training check in the real warm workers (docs/training.md): a plain Conv/Dense model with BatchNormalization
and Dropout trains alike on TensorFlow, JAX and torch, and agrees with float64; a random augmentation layer runs as in
inference; a float16 layer is judged at float16's precision."""
from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

import numpy as np
import pytest

from memo.model.ir import Layer, ModelIR
from memo.oracle import Thresholds, outputs_agree
from tests.conftest import one_layer_ir

TRAINERS = ["keras-tensorflow", "keras-jax", "keras-torch"]


def conv_dense() -> ModelIR:
    return ModelIR(layers=[
        Layer(name="x", class_name="InputLayer", config={"batch_shape": [None, 6, 6, 2], "dtype": "float32"}),
        Layer(name="conv", class_name="Conv2D", config={"filters": 3, "kernel_size": 3, "activation": "tanh"},
              inputs=["x"]),
        Layer(name="bn", class_name="BatchNormalization", config={}, inputs=["conv"]),
        Layer(name="drop", class_name="Dropout", config={"rate": 0.5}, inputs=["bn"]),
        Layer(name="flat", class_name="Flatten", config={}, inputs=["drop"]),
        Layer(name="dense", class_name="Dense", config={"units": 4, "activation": "softmax"}, inputs=["flat"])],
        outputs=["dense"], name="train_conv_dense")


@pytest.fixture(scope="module")
def checked(executor: Any, tmp_path_factory: pytest.TempPathFactory) -> tuple[Any, Any, dict[str, Any]]:
    from memo.artifact import prepare_artifact
    from memo.training.check import run_training_check
    from memo.training.judge import read_arrays

    root = tmp_path_factory.mktemp("training")
    artifact = prepare_artifact(conv_dense(), root / "artifact", seed=3)
    check = run_training_check(executor, artifact, root / "train", TRAINERS)
    return artifact, check, {name: read_arrays(r.outputs_path) for name, r in check.results.items()}


def test_gradients_and_steps_agree_across_tensorflow_jax_and_torch(checked: tuple[Any, Any, dict[str, Any]]) -> None:
    _, check, arrays = checked
    for name, result in check.results.items():
        assert [(s.stage, s.status) for s in result.stages] == [
            (stage, "ok") for stage in ("load", "prepare", "forward", "gradients", "sgd", "adam", "optimizer")], name
    assert check.judgement.left_out is None and check.judgement.verdicts == []
    assert check.judgement.notes == ["drop: Dropout.rate 0.5 -> 0"]
    reference = arrays["keras-tensorflow"]
    grads = sorted(key for key in reference if "grad_" in key)
    assert len(grads) == 7  # conv kernel and bias, BN gamma and beta, dense kernel and bias; the input
    for name in ("keras-jax", "keras-torch"):
        for key in grads + ["adam_0", "sgd_4", "state_0", "state_1", "loss"]:
            assert outputs_agree(arrays[name][key], reference[key], Thresholds()), (name, key)
    assert all(np.abs(reference[key]).max() > 1e-3 for key in grads)  # real gradients, not zeros


def test_batch_normalization_statistics_move_in_training(checked: tuple[Any, Any, dict[str, Any]]) -> None:
    artifact, _, arrays = checked
    with np.load(artifact.inputs_path) as data:
        assert set(data.files) == {"x"}
    state = arrays["keras-torch"]
    assert list(state["state_names"]) == ["bn/moving_mean", "bn/moving_variance"]
    assert not np.allclose(state["state_0"], arrays["keras-jax"]["state_0"] * 0)  # updated, not the zero default


def test_float64_truth_of_the_training_step(checked: tuple[Any, Any, dict[str, Any]], tmp_path: Path) -> None:
    from memo.training.check import TruthTrainer
    from memo.training.judge import TrainingVerdict
    from memo.training.truth import assess_verdict
    from memo.truth import NOISE

    artifact, check, arrays = checked
    runner = TruthTrainer(tmp_path)
    try:
        wide, moved = runner.runs(artifact)
    finally:
        runner.close()
    assert not isinstance(wide, str), wide
    assert wide["grad_0"].dtype == np.float64 and len(moved) == 2
    for stage in ("forward", "gradients", "state", "adam"):
        truth = assess_verdict(TrainingVerdict("training-inconsistency", "keras-jax", stage, ""), arrays, wide, moved,
                               check.reference)
        assert truth.decision == NOISE, (stage, truth.reason)


def test_a_random_augmentation_layer_runs_as_in_inference(executor: Any,
                                                          make_artifact: Callable[..., Any], tmp_path: Path) -> None:
    from memo.training.check import run_training_check
    from memo.training.judge import read_arrays

    artifact = make_artifact(one_layer_ir("RandomFlip", {"mode": "horizontal"}, (4, 4, 3)), "flip")
    check = run_training_check(executor, artifact, tmp_path / "train", TRAINERS)
    assert check.judgement.left_out is None and check.judgement.verdicts == [], check.judgement
    assert any("RandomFlip runs as in inference" in note for note in check.judgement.notes), check.judgement.notes
    with np.load(artifact.inputs_path) as data:
        inputs = data[data.files[0]]
    for name, result in check.results.items():  # the identity, as in inference: not flipped at random
        assert np.array_equal(read_arrays(result.outputs_path)["out_0"], inputs), name


def test_a_gradient_decided_by_a_relu_at_zero_is_ill_conditioned(executor: Any, tmp_path: Path) -> None:
    """A hidden layer whose weights are all 0 puts every pre-activation exactly at ReLU's kink: the float64 truth's
    perturbation (inputs and weights, a few ulps) moves the gradient past the tolerance, so a verdict there is kept
    apart as ill-conditioned, whatever the libraries say."""
    from memo.artifact import prepare_artifact
    from memo.training.check import TruthTrainer, run_training_check
    from memo.training.judge import TrainingVerdict
    from memo.training.truth import assess_verdict
    from memo.truth import ILL_CONDITIONED

    ir = ModelIR(layers=[
        Layer(name="x", class_name="InputLayer", config={"batch_shape": [None, 3], "dtype": "float32"}),
        Layer(name="hidden", class_name="Dense", config={"units": 4, "activation": "relu"}, inputs=["x"]),
        Layer(name="out", class_name="Dense", config={"units": 2}, inputs=["hidden"])], outputs=["out"], name="kink")
    rng = np.random.default_rng(0)
    weights = {"hidden": [np.zeros((3, 4), np.float32), np.zeros(4, np.float32)],
               "out": [rng.standard_normal((4, 2)).astype(np.float32), np.zeros(2, np.float32)]}
    artifact = prepare_artifact(ir, tmp_path / "artifact", seed=0, weights=weights)
    check = run_training_check(executor, artifact, tmp_path / "train", TRAINERS, truth=False)
    from memo.training.judge import read_arrays

    arrays = {name: read_arrays(result.outputs_path) for name, result in check.results.items()}
    runner = TruthTrainer(tmp_path / "truth")
    try:
        wide, moved = runner.runs(artifact)
    finally:
        runner.close()
    truth = assess_verdict(TrainingVerdict("training-inconsistency", "keras-jax", "gradients", ""), arrays, wide,
                           moved, check.reference)
    assert truth.decision == ILL_CONDITIONED, truth.reason


def test_a_float16_layer_is_judged_at_float16_precision_and_triage_asks_for_its_stages(
        executor: Any, tmp_path: Path) -> None:
    """A float16 BatchNormalization (the DType mutation operator's) before a float32 Dense: float16 rounding differs
    between backends (BatchNormalization's gamma after an SGD step by one float16 step, as in campaign n40), which the
    check's tolerance, scaled to the model's float16, calls noise. One difference is left, a real one that float64
    confirms: Keras on torch's Adam (``torch_adam.py``, ``dtype = variables[0].dtype``) computes every variable's step
    size in the first variable's dtype, so the float32 Dense kernel steps by a float16-rounded ``alpha`` (1.2 % off
    at step 2). A request for some stages (triage's) computes those only."""
    from memo.artifact import prepare_artifact
    from memo.training.check import run_training_check
    from memo.training.judge import DESCRIPTIVE_KEYS, JUDGED_STAGES, compare_stage, read_arrays

    ir = ModelIR(layers=[
        Layer(name="x", class_name="InputLayer", config={"batch_shape": [None, 4, 4, 64], "dtype": "float32"}),
        Layer(name="bn", class_name="BatchNormalization", config={"dtype": "float16"}, inputs=["x"]),
        Layer(name="dense", class_name="Dense", config={"units": 3}, inputs=["bn"])], outputs=["dense"], name="half")
    artifact = prepare_artifact(ir, tmp_path / "artifact", seed=0)
    check = run_training_check(executor, artifact, tmp_path / "train", TRAINERS)
    arrays = {name: read_arrays(result.outputs_path) for name, result in check.results.items()}
    reference = arrays["keras-tensorflow"]
    assert str(reference["compute_dtype"]) == "float16" and list(reference["weight_dtypes"]) == [
        "float16", "float16", "float32", "float32"]
    [verdict] = check.judgement.verdicts
    assert (verdict.kind, verdict.backend, verdict.stage, verdict.name) == (
        "training-inconsistency", "keras-torch", "adam", "dense/kernel"), verdict
    assert verdict.truth is not None and verdict.truth.decision == "confirmed", verdict.truth
    bare = {key: value for key, value in reference.items() if key not in DESCRIPTIVE_KEYS}  # float32's tolerance
    assert any(compare_stage(name, stage, arrays[name], bare) is not None for name in TRAINERS[1:]
               for stage in JUDGED_STAGES if (name, stage) != ("keras-torch", "adam")), "float16 noise float32's flags"
    results = executor.train(artifact, TRAINERS, tmp_path / "sgd", {"stages": ["sgd"]})
    assert all([s.stage for s in r.stages] == ["load", "prepare", "sgd"] for r in results.values()), results


def test_outputs_of_float32_and_float64_are_one_loss_on_every_backend(executor: Any, tmp_path: Path) -> None:
    """The loss adds its terms with keras.ops.add, which promotes float32 + float64 alike on every backend:
    TensorFlow's ``+`` does not, and long150f filed memo's own loss as two TensorFlow training crashes ("cannot
    compute AddV2 as input #1(zero-based) was expected to be a float tensor but is a double tensor")."""
    from memo.artifact import prepare_artifact
    from memo.training.check import run_training_check

    ir = ModelIR(layers=[
        Layer(name="x", class_name="InputLayer", config={"batch_shape": [None, 6, 5], "dtype": "float32"}),
        Layer(name="wide", class_name="Dense", config={"units": 3, "dtype": "float64"}, inputs=["x"]),
        Layer(name="narrow", class_name="Dense", config={"units": 2}, inputs=["x"])],
        outputs=["narrow", "wide"], name="two_precisions")
    artifact = prepare_artifact(ir, tmp_path / "artifact", seed=0)
    check = run_training_check(executor, artifact, tmp_path / "train", TRAINERS)
    for name, result in check.results.items():
        assert [(s.stage, s.status) for s in result.stages][:5] == [
            (stage, "ok") for stage in ("load", "prepare", "forward", "gradients", "sgd")], (name, result.stages)
    assert not [v for v in check.judgement.verdicts if v.kind == "training-crash"], check.judgement.verdicts


def test_a_scalar_bfloat16_weight_is_read_on_tensorflow(executor: Any, tmp_path: Path) -> None:
    """Attention(score_mode='concat') holds a 0-d weight; in bfloat16 TensorFlow under numpy 2 refuses np.array of it,
    and long150f filed memo's own read of its gradient as a Keras-on-TensorFlow training crash."""
    from memo.artifact import prepare_artifact
    from memo.training.check import run_training_check

    ir = ModelIR(layers=[
        Layer(name="x", class_name="InputLayer", config={"batch_shape": [None, 5, 4], "dtype": "float32"}),
        Layer(name="att", class_name="Attention", config={"score_mode": "concat", "dtype": "bfloat16"},
              inputs=["x", "x"], call_style="list")], outputs=["att"], name="scalar_bf16")
    artifact = prepare_artifact(ir, tmp_path / "artifact", seed=0)
    check = run_training_check(executor, artifact, tmp_path / "train", TRAINERS)
    stages = [(s.stage, s.status) for s in check.results["keras-tensorflow"].stages]
    assert stages[:5] == [(stage, "ok") for stage in ("load", "prepare", "forward", "gradients", "sgd")], stages
    assert not [v for v in check.judgement.verdicts if v.kind == "training-crash"], check.judgement.verdicts
