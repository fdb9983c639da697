"""Rematerialization in the training check (memo.backends.training_remat), its judging (every backend failing one
stage alike under remat is Keras's: memo.training.judge), the truth that turns a bug round to the reference
(memo.triage.training_truth), and the texts: pure logic, no library imported."""
from __future__ import annotations

import numpy as np

from memo.backends.result import StageResult
from memo.backends.training_remat import REMAT_MODES, REMAT_SHARE, choose_remat, recorded_remat, remat_scope
from memo.filing.training_idiom import remat_lines
from memo.training.judge import judge_training
from memo.triage.training_truth import reference_wrong, turned

REF, JAX, TORCH = "keras-tensorflow", "keras-jax", "keras-torch"


def test_a_share_of_models_is_chosen_for_remat_the_same_way_every_time() -> None:
    names = [f"m{index:05d}" for index in range(2000)]
    chosen = [choose_remat(name) for name in names]
    assert chosen == [choose_remat(name) for name in names]  # a seed's models get the same choice
    share = sum(mode is not None for mode in chosen) / len(names)
    assert abs(share - 1 / REMAT_SHARE) < 0.04, share
    assert {mode for mode in chosen if mode} == set(REMAT_MODES)


def test_a_recorded_mode_is_read_from_a_verdicts_record_or_a_workers_arrays() -> None:
    assert recorded_remat({"remat": "full"}) == "full"
    assert recorded_remat({"remat": np.array("activations")}) == "activations"
    assert recorded_remat({"remat": "sideways"}) is None and recorded_remat({}) is None
    assert recorded_remat(None) is None


def test_the_minimal_script_builds_the_model_inside_the_scope() -> None:
    lines = ["x = keras.Input(shape=(3,))", "model = keras.Model(x, keras.layers.Dense(2)(x))"]
    assert remat_lines(lines, {"optimizer": "sgd"}) == lines
    wrapped = remat_lines(lines, {"remat": "full"})
    assert wrapped[0] == f"with {remat_scope('full')}:" == 'with keras.RematScope(mode="full"):'
    assert wrapped[1:] == [f"    {line}" for line in lines]


def _stages(failed: str | None = None, exc: str = "AttributeError") -> list[StageResult]:
    return [StageResult(stage=name, status="error" if name == failed else "ok",
                        exc_type=exc if name == failed else None,
                        message="property 'activation' of 'LSTM' object has no setter" if name == failed else "")
            for name in ("load", "prepare", "forward", "gradients")]


def _record(remat: str | None) -> dict[str, np.ndarray]:
    return {"names": np.array(["r/kernel"]), **({"remat": np.array(remat)} if remat else {})}


def test_every_backend_failing_alike_under_remat_is_one_verdict_against_the_reference() -> None:
    stages = {REF: _stages("forward"), JAX: _stages("forward"), TORCH: _stages("forward")}
    found = judge_training(stages, {name: _record("activations") for name in stages}, REF).verdicts
    assert [(v.kind, v.backend, v.stage, v.remat) for v in found] == [
        ("training-crash", REF, "forward", "activations")]
    assert "(also on keras-jax, keras-torch)" in found[0].message
    # without remat such a failure may be the check's own: no finding; nor where the others fail otherwise
    assert judge_training(stages, {name: _record(None) for name in stages}, REF).verdicts == []
    other = {REF: _stages("forward"), JAX: _stages("forward", "TypeError"), TORCH: _stages("forward")}
    assert judge_training(other, {name: _record("full") for name in other}, REF).verdicts == []


def test_a_truth_blaming_the_reference_alone_turns_the_bug_round() -> None:
    data = {"library": TORCH, "reference": REF, "stage": "gradients",
            "truth": {"decision": "contradicted", "blamed": "witness", "errors": {TORCH: 6e-5, REF: 512.0}}}
    assert reference_wrong(data)
    assert not reference_wrong({**data, "stage": "optimizer"})  # Keras's shared optimizer code: not turned
    assert not reference_wrong({**data, "truth": {**data["truth"], "decision": "confirmed"}})
    assert not reference_wrong({**data, "truth": {**data["truth"], "errors": {TORCH: 0.1, REF: 0.5}}})
    both = {**data["truth"], "errors": {TORCH: 0.1, REF: 40.0, JAX: 30.0}}  # two witnesses off: not the reference's
    assert not reference_wrong({**data, "truth": both})


def test_a_training_script_keeps_the_settings_that_act_in_training() -> None:
    from memo.filing.keras_code import keras_model_code
    from memo.model.ir import Layer, ModelIR

    ir = ModelIR([Layer("x", "InputLayer", {"batch_shape": [None, 30, 5], "dtype": "float32"}),
                  Layer("c", "Conv1D", {"filters": 5, "kernel_size": [3], "activity_regularizer": "l2",
                                        "kernel_constraint": "non_neg", "kernel_initializer": "ones",
                                        "trainable": False}, ["x"])], ["c"], "conv")
    inference = " ".join(keras_model_code(ir).lines)
    training = " ".join(keras_model_code(ir, training=True).lines)
    for setting in ("activity_regularizer='l2'", "kernel_constraint='non_neg'", "trainable=False"):
        assert setting not in inference and setting in training, (setting, training)
    assert "kernel_initializer" not in training  # the weights are attached: the initializer never acts


def test_a_forward_crash_script_differentiates_as_the_worker_did() -> None:
    from memo.filing.training_idiom import training_lines

    _, crash, _ = training_lines("keras-jax", "forward", "training-crash")
    assert any("jax.grad" in line for line in crash)  # JAX's forward and gradients are one jitted program
    _, difference, prefix = training_lines("keras-jax", "forward", "training-inconsistency")
    assert prefix == "out" and not any("jax.grad" in line for line in difference)
