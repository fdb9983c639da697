"""The training check under ``keras.RematScope`` in the real warm workers (docs/training.md, "Rematerialization"):
an activity regularizer's gradient changes on TensorFlow and JAX fails (``UnexpectedTracerError``) under
``mode="full"``, where torch and float64 agree; ``mode="activations"`` breaks every RNN layer on every backend (its
``activation`` is a read-only property). Each becomes a verdict that names the mode, and the folder's repro.py
rebuilds the layers under it and shows the bug again."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from memo.model.ir import Layer, ModelIR

TRAINERS = ["keras-tensorflow", "keras-jax", "keras-torch"]


def regularized() -> ModelIR:
    return ModelIR(layers=[
        Layer(name="x", class_name="InputLayer", config={"batch_shape": [None, 6], "dtype": "float32"}),
        Layer(name="d", class_name="Dense", config={"units": 4, "activation": "tanh"}, inputs=["x"]),
        Layer(name="r", class_name="ActivityRegularization", config={"l1": 0.5, "l2": 1.0}, inputs=["d"])],
        outputs=["r"], name="remat_full")


def recurrent() -> ModelIR:
    return ModelIR(layers=[
        Layer(name="x", class_name="InputLayer", config={"batch_shape": [None, 5, 3], "dtype": "float32"}),
        Layer(name="r", class_name="LSTM", config={"units": 4}, inputs=["x"])], outputs=["r"], name="remat_act")


def test_an_activity_regularizer_under_full_remat_fails_on_jax_and_changes_tensorflows_gradient(
        executor: Any, tmp_path: Path) -> None:
    from memo.artifact import prepare_artifact
    from memo.training.check import run_training_check, stored_verdicts
    from memo.triage.training_signature import training_parts

    artifact = prepare_artifact(regularized(), tmp_path / "full", seed=3)
    check = run_training_check(executor, artifact, tmp_path / "train", TRAINERS, optimizer="", remat="full")
    assert check.judgement.remat == "full" and check.summary()["remat"] == "full"
    found = {(v.kind, v.backend): v for v in check.judgement.verdicts}
    crash = found[("training-crash", "keras-jax")]
    assert "UnexpectedTracerError" in crash.message and crash.remat == "full", crash
    # only torch finishes beside the reference, so the gradient difference is pinned on torch, and float64 sides
    # with torch: the reference (TensorFlow) is what is wrong (triage turns the roles: memo.triage.training_truth)
    gradient = found[("training-inconsistency", "keras-torch")]
    assert gradient.stage == "gradients" and gradient.truth is not None, gradient
    assert gradient.truth.decision == "contradicted" and gradient.truth.blamed == "witness", gradient.truth
    for stored in stored_verdicts(check):  # the mode is the verdict's, and its key's
        assert stored.extra["training"]["remat"] == "full"
        assert training_parts(stored, regularized())["remat"] == "full"
    plain = run_training_check(executor, artifact, tmp_path / "plain", TRAINERS, optimizer="")
    assert plain.judgement.verdicts == [] and plain.judgement.remat is None  # without remat: nothing


def test_activations_remat_breaks_an_lstm_on_every_backend_and_its_repro_shows_it(
        executor: Any, tmp_path: Path) -> None:
    from memo.artifact import prepare_artifact
    from memo.training.check import run_training_check
    from memo.training.judge import read_arrays
    from memo.triage.rerun import rerun_script
    from memo.triage.training_bug import TrainingRun, write_folder
    from memo.triage.training_signature import crash_exception

    artifact = prepare_artifact(recurrent(), tmp_path / "act", seed=3)
    check = run_training_check(executor, artifact, tmp_path / "train", TRAINERS, optimizer="", remat="activations")
    crashes = [v for v in check.judgement.verdicts if v.kind == "training-crash"]
    assert len(crashes) == 1 and crashes[0].backend == "keras-tensorflow", check.judgement.verdicts
    crash = crashes[0]
    assert "has no setter" in crash.message and "(also on keras-jax, keras-torch)" in crash.message, crash.message
    run = TrainingRun(artifact, {name: read_arrays(r.outputs_path) for name, r in check.results.items()})
    folder = tmp_path / "bug"
    data = write_folder(folder, recurrent(), run, {
        "id": "b-remat", "kind": crash.kind, "library": crash.backend, "stage": crash.stage,
        "reference": check.reference, "training": crash.to_json(), "exception": crash_exception(crash.message)[0]})
    assert "REMAT = 'activations'" in (folder / "repro.py").read_text()
    rerun = rerun_script(folder, data, timeout_s=240)
    assert rerun.reproduces, rerun.output[-2000:]
